"""The emulator's PTX coverage as a measured property: a census of the constructs in compiled PTX.

`census` takes PTX texts (compiled from CUDA sources by `compile_file`, exactly as the grader
compiles a submission) and lists every construct in them, each with its status:

- opcode forms: the opcode plus the qualifiers that change what it does (cache and eviction hints,
  `.uni` and `.aligned` do not; `call` is split by what it calls);
- special registers (`%tid.x`, `%laneid`, ...) and the constant `WARP_SZ`;
- directives (`.entry`, `.maxntid`, `.pragma`, ...);
- state spaces (`.global`, `.shared`, `.param`, ...), from declarations and instruction qualifiers.

Status: "emulated" (the emulator decodes and runs it), "refused" (the emulator declines it on purpose,
with the message in REFUSED, which names the construct; the refusal at run time adds the source line),
or "missing" (neither: a gap to fill). An opcode's status is what the emulator's own decoder says,
instruction by instruction, so the census cannot drift from the code.

`python -m grader.emu.coverage [--markdown] FILES...` prints the census of CUDA or PTX files.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from . import cfg as cfg_mod
from . import ptx as ptx_mod
from .machine import DecodeContext, decode_instr
from .operands import KNOWN_SPECIAL, Unsupported, is_special
from .refusals import REFUSED, flat_operands, opcode_form, refusal, refused_key

ARCH = "sm_90"

# Directives and what the emulator does with them ("no effect" ones change nothing a kernel computes).
DIRECTIVES: dict[str, str] = {
    "version": "header", "target": "header", "address_size": "header", "file": "source lines",
    "loc": "source lines", "section": "debug info, ignored", "visible": "linkage", "extern": "linkage",
    "weak": "linkage", "common": "linkage", "entry": "kernel", "func": "device function (inlined)",
    "noreturn": "no effect", "align": "layout", "maxntid": "launch bound, checked at launch",
    "reqntid": "launch bound, checked at launch", "minnctapersm": "occupancy hint, no effect",
    "maxnctapersm": "occupancy hint, no effect", "maxnreg": "register hint, no effect",
    "pragma": "compiler hint, no effect", "ptr": "pointer attribute, no effect",
}

# State spaces the emulator models (the special-register space .sreg has no declarations in PTX).
STATE_SPACES: dict[str, str] = {
    "reg": "registers", "sreg": "special registers", "param": "kernel and call parameters",
    "global": "global memory", "const": "constant memory", "shared": "shared memory",
    "local": "local memory",
}

_TYPES = set(ptx_mod._TYPE_SIZES) | {"v2", "v4", "v8"}


@dataclass(frozen=True)
class Construct:
    """One construct found in the PTX and what the emulator does with it."""

    kind: str  # "opcode", "special register", "directive", "state space"
    name: str
    status: str  # "emulated", "refused", "missing"
    count: int  # occurrences over all files
    files: tuple[str, ...]  # the files it occurs in
    note: str  # the refusal message, or why it is missing, or how a directive is used


@dataclass(frozen=True)
class Census:
    """The census of a set of files; `problems` lists files that did not compile or parse."""

    constructs: tuple[Construct, ...]
    problems: tuple[tuple[str, str], ...]

    def of(self, kind: str) -> tuple[Construct, ...]:
        """The constructs of one kind."""
        return tuple(c for c in self.constructs if c.kind == kind)

    def missing(self) -> tuple[Construct, ...]:
        """Constructs that are neither emulated nor refused on purpose."""
        return tuple(c for c in self.constructs if c.status == "missing")


# ---------------------------------------------------------------- census


def _instr_status(ctx: DecodeContext, pc: int, ins: ptx_mod.Instr) -> tuple[str, str]:
    """("emulated", "") when the emulator decodes the instruction, else ("refused" or "missing", why)."""
    try:
        decode_instr(ins, ctx, pc)
        return "emulated", ""
    except (Unsupported, KeyError, ValueError, IndexError) as e:
        msg = refusal(ins)
        if msg is not None:
            return "refused", msg
        return "missing", str(e) or type(e).__name__


def _statement_heads(text: str):
    """Each line of comment-free PTX that starts with a directive, as its list of `.word`s."""
    for raw in ptx_mod._strip_comments(text).split("\n"):
        s = raw.strip().lstrip("{").strip()
        if not s.startswith("."):
            continue
        s = re.sub(r'"[^"]*"', '""', s)  # file names and pragma strings are not directives
        words = re.findall(r"(?<![\w$%])\.([A-Za-z_][\w:]*)", s)
        if words and words[0] in ("section", "file", "loc", "pragma"):
            words = words[:1]  # `.section .debug_str`: the rest names a section, not a directive
        yield words, s


def census(ptx_texts: dict[str, str]) -> Census:
    """Census of PTX texts (file name -> PTX)."""
    found: dict[tuple[str, str], dict] = {}
    problems: list[tuple[str, str]] = []

    def note(kind: str, name: str, status: str, why: str, fname: str) -> None:
        e = found.setdefault((kind, name), {"status": status, "why": why, "count": 0, "files": set()})
        # one instance that cannot run makes the construct not emulated
        rank = {"emulated": 0, "refused": 1, "missing": 2}
        if rank[status] > rank[e["status"]]:
            e["status"], e["why"] = status, why
        e["count"] += 1
        e["files"].add(fname)

    for fname, text in ptx_texts.items():
        try:
            module = ptx_mod.parse(text)
        except (ptx_mod.PTXParseError, KeyError, ValueError, IndexError) as e:
            problems.append((fname, f"does not parse: {e}"))
            continue
        addrs = {v.name: 0x1000 + 0x100 * i for i, v in enumerate(module.variables)}
        for kernel in module.kernels.values():
            ctx = DecodeContext(module, kernel, addrs)
            ctx.cfg = cfg_mod.build(kernel)
            for pc, ins in enumerate(kernel.instrs):
                status, why = _instr_status(ctx, pc, ins)
                note("opcode", opcode_form(ins), status, why, fname)
                for space in {m.split("::")[0] for m in ins.mods} & set(STATE_SPACES):
                    note("state space", "." + space, "emulated", STATE_SPACES[space], fname)
                for op in flat_operands(ins.operands):
                    if isinstance(op, ptx_mod.Reg) and is_special(op.name):
                        _note_special(note, op.name, fname)
        if re.search(r"\bWARP_SZ\b", ptx_mod._strip_comments(text)):
            note("special register", "WARP_SZ", "emulated", "the constant 32", fname)
        for words, stmt in _statement_heads(text):
            for w in words:
                if w in _TYPES:
                    continue
                if w.split("::")[0] in STATE_SPACES:
                    key = refused_key("." + w)
                    if key:
                        note("state space", "." + w, "refused", REFUSED[key], fname)
                    else:
                        note("state space", "." + w.split("::")[0], "emulated", STATE_SPACES[w.split("::")[0]], fname)
                elif w in DIRECTIVES:
                    note("directive", "." + w, "emulated", DIRECTIVES[w], fname)
                else:
                    key = refused_key("." + w)
                    if key:
                        note("directive", "." + w, "refused", REFUSED[key], fname)
                    else:
                        note("directive", "." + w, "missing", f"unknown directive in `{stmt[:60]}`", fname)
    order = {"opcode": 0, "special register": 1, "directive": 2, "state space": 3}
    rows = tuple(
        Construct(kind, name, e["status"], e["count"], tuple(sorted(e["files"])), e["why"])
        for (kind, name), e in sorted(found.items(), key=lambda kv: (order[kv[0][0]], kv[0][1]))
    )
    return Census(rows, tuple(problems))


def _note_special(note, name: str, fname: str) -> None:
    if name in KNOWN_SPECIAL:
        note("special register", name, "emulated", "", fname)
        return
    key = refused_key(name)
    if key:
        note("special register", name, "refused", REFUSED[key], fname)
    else:
        note("special register", name, "missing", "not modelled", fname)


# ---------------------------------------------------------------- compiling and printing


def compile_file(path: Path) -> tuple[str | None, str]:
    """PTX of a CUDA file compiled for sm_90 as the grader compiles a submission (or a .ptx file's
    text): (ptx, "") or (None, the compiler's log)."""
    path = Path(path)
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".ptx":
        return text, ""
    from ..compile import compile_source

    res = compile_source(text, path.name, arch=ARCH)
    return (res.ptx, "") if res.ok else (None, res.log)


def census_of_files(paths) -> Census:
    """Compile each file and take the census; a file that does not compile is listed in `problems`."""
    texts: dict[str, str] = {}
    problems: list[tuple[str, str]] = []
    for p in paths:
        ptx_text, log = compile_file(Path(p))
        if ptx_text is None:
            problems.append((str(p), "does not compile: " + log.strip().splitlines()[0] if log.strip() else "does not compile"))
        else:
            texts[str(p)] = ptx_text
    c = census(texts)
    return Census(c.constructs, tuple(problems) + c.problems)


def summary_counts(c: Census) -> dict[str, dict[str, int]]:
    """{kind: {status: count of distinct constructs}}."""
    out: dict[str, dict[str, int]] = defaultdict(lambda: {"emulated": 0, "refused": 0, "missing": 0})
    for k in c.constructs:
        out[k.kind][k.status] += 1
    return dict(out)


def _md_escape(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def render_markdown(c: Census, nfiles: int) -> str:
    """The census as Markdown: a summary table, then one table per kind."""
    head = f"Census of {nfiles - len(c.problems)} files compiled for {ARCH}"
    head += f" ({len(c.problems)} more not counted, listed at the end)." if c.problems else "."
    lines = [head, "",
             "| construct | emulated | refused | missing |", "| --- | --- | --- | --- |"]
    counts = summary_counts(c)
    for kind in ("opcode", "special register", "directive", "state space"):
        s = counts.get(kind, {"emulated": 0, "refused": 0, "missing": 0})
        label = "opcode forms" if kind == "opcode" else kind + "s"
        lines.append(f"| {label} | {s['emulated']} | {s['refused']} | {s['missing']} |")
    for kind in ("opcode", "special register", "directive", "state space"):
        rows = c.of(kind)
        if not rows:
            continue
        lines += ["", f"### {kind}s", "", "| construct | status | count | files | note |",
                  "| --- | --- | --- | --- | --- |"]
        for r in rows:
            lines.append(f"| `{_md_escape(r.name)}` | {r.status} | {r.count} | {len(r.files)} | {_md_escape(r.note)} |")
    if c.problems:
        lines += ["", "### files not counted", ""] + [f"- {_md_escape(f)}: {_md_escape(w)}" for f, w in c.problems]
    return "\n".join(lines) + "\n"


def render_text(c: Census) -> str:
    """The census as plain text, one construct a line."""
    out = []
    for r in c.constructs:
        extra = f"  ({r.note})" if r.status != "emulated" and r.note else ""
        out.append(f"{r.status:9} {r.kind:17} {r.name:40} x{r.count}{extra}")
    for f, w in c.problems:
        out.append(f"problem   {f}: {w}")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    """`python -m grader.emu.coverage [--markdown] FILES...`; exit 1 when a construct is missing."""
    args = list(sys.argv[1:] if argv is None else argv)
    markdown = "--markdown" in args
    files = [a for a in args if a != "--markdown"]
    if not files:
        print("usage: python -m grader.emu.coverage [--markdown] FILES...", file=sys.stderr)
        return 2
    c = census_of_files(files)
    sys.stdout.write(render_markdown(c, len(files)) if markdown else render_text(c))
    return 1 if c.missing() else 0


if __name__ == "__main__":
    sys.exit(main())
