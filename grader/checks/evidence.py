"""Facts about THE submission, computed once per grading: what its code contains and what its run
showed. Advice is given from these facts only: a remedy for one cause shown to a kernel whose wrong
answer has another cause (atomicAdd advice to a kernel that already uses atomicAdd) misleads.

From the code (its PTX where the emulator's module is here, else its source): atomics and their
memory space, shared memory and a two-dimensional tile, barriers, a maximum and an exponential.
From the run: which sizes fail and what they have in common, whether the wrong elements were never
written or written wrong, and what the emulator saw (out-of-bounds and uninitialised reads, races,
per-line bank conflicts), each with its source line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from ..spec import HINT_FACTS, CheckSpec, Hint
from .base import Context, emu_launches, sizes_text
from .code_facts import code_facts, submission_ptx

# A shared access line conflicts when its warp instructions average at least this many times the
# wavefronts its access width needs without a conflict (1 for 32-bit lanes, 2 for 64-bit, 4 for
# 128-bit: from the PTX). Below it, the extra wavefronts come from more accesses, not from banks.
CONFLICT_FACTOR = 2.0
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)", re.M)
_SHARED_ACCESS = re.compile(r"\b(?:ld|st)\.shared(?:::cta)?(?:\.v(\d))?\.[bsuf](\d+)")
SH_WAVES = ("smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
            "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum")
SH_INST = ("smsp__sass_inst_executed_op_shared_ld.sum", "smsp__sass_inst_executed_op_shared_st.sum")


@dataclass(frozen=True)
class Cause:
    """Something the emulator saw that makes a kernel compute wrong values, at a source line."""

    fact: str       # "out_of_bounds", "uninit_read", "race", "early_output_read"
    line: int | None
    text: str       # the message, with the line quoted
    remedy: str = ""  # the grader's own advice for it, left out where an exercise hint covers the fact

    def said(self, covered: frozenset[str] = frozenset()) -> str:
        """The message, then the grader's remedy unless a hint shown beside it is written for this fact."""
        return self.text if not self.remedy or self.fact in covered else f"{self.text} {self.remedy}"


@dataclass(frozen=True)
class ElementPattern:
    """Where the wrong elements of one output lie at one failing size: a box of indices (inclusive)."""

    sizes: Mapping[str, int]
    param: str
    lo: tuple[int, ...]
    hi: tuple[int, ...]
    count: int
    never_written: bool  # every wrong element there still holds the grader's fill (never written)

    def text(self) -> str:
        """`elements 1024..2047 of out never written`, or the box of wrong indices."""
        what = "never written" if self.never_written else "wrong"
        if len(self.lo) == 1:
            span = f"{self.lo[0]}" if self.lo == self.hi else f"{self.lo[0]}..{self.hi[0]}"
            dense = self.hi[0] - self.lo[0] + 1 == self.count
            where = ("element " if self.lo == self.hi else "elements ") + span + ("" if dense or self.lo == self.hi else f" ({self.count:,} of them)")
        else:
            where = f"{self.count:,} elements in the box " + " x ".join(f"[{a}..{b}]" for a, b in zip(self.lo, self.hi))
        return f"{sizes_text(self.sizes)}: {where} of {self.param} {what}"


@dataclass(frozen=True)
class Evidence:
    """The facts about one submission (names of grader.spec.HINT_FACTS) and the details behind them."""

    facts: frozenset[str]
    atomic_kinds: tuple[str, ...] = ()          # e.g. "red.global.add.f32", as the PTX spells them
    failing: tuple[Mapping[str, int], ...] = ()
    passing: tuple[Mapping[str, int], ...] = ()
    common: str = ""                            # what the failing sizes have in common, in words
    elements: tuple[ElementPattern, ...] = ()
    causes: tuple[Cause, ...] = ()
    conflict_lines: tuple[tuple[int, float], ...] = ()  # (line, wavefronts per request), worst first

    def has(self, fact: str) -> bool:
        """Whether the fact holds for this submission."""
        return fact in self.facts

    def hints(self, conf: CheckSpec, situation: str) -> list[str]:
        """The check's hints for a situation that the facts call for."""
        return applicable(conf.hints.get(situation, ()), self.facts)

    def covered(self, conf: CheckSpec, situations: Sequence[str]) -> frozenset[str]:
        """The facts that the hints shown in these situations are written for (their `when`, and
        `ragged` for a ragged hint): where the exercise speaks to a fact, its words replace the
        grader's own remedy for it, so the student does not read the same advice twice."""
        out: set[str] = set()
        for situation in situations:
            if situation == "ragged" and not self.has("ragged"):
                continue
            for hint in conf.hints.get(situation, ()):
                if hint.applies(self.facts):
                    out.update(hint.when)
                    if situation == "ragged":
                        out.add("ragged")
        return frozenset(out)


def applicable(hints: Iterable[Hint], facts: Iterable[str]) -> list[str]:
    """The texts of the hints whose `when` and `unless` the facts meet."""
    have = frozenset(facts)
    return [h.text for h in hints if h.applies(have)]


def gather(ctx: Context) -> Evidence:
    """The submission's evidence from its code and every result of this grading (nothing is launched).
    Computed once and kept on the context."""
    # Kept on the context, keyed by how many results it holds (a background stage may add some).
    if ctx.evidence is not None and ctx.evidence[0] == len(ctx.results):
        return ctx.evidence[1]
    facts, kinds = code_facts(submission_ptx(ctx), ctx.source)
    cases = ctx.spec.cases_for(ctx.backend)
    # Sizes whose values were compared: right, or wrong. A size that failed without values (a launch
    # that faulted, hung or ran out of steps) says nothing about which sizes the values fail at.
    passing, failing, elements = [], [], []
    for i, case in enumerate(cases):
        result = ctx.results.get(f"correctness:{i}")
        if result is None or not result.launches:
            continue
        compared = [l.get("compare") for l in result.launches if not l.get("error") and l.get("compare") is not None]
        if len(compared) < len(result.launches) and all(c.get("ok") for c in compared):
            continue  # no wrong value here, only a launch that gave none
        ok = True
        for k, launch in enumerate(result.launches):
            cmp = launch.get("compare")
            if launch.get("error") or cmp is None or cmp.get("ok"):
                continue
            ok = False
            never = _never_written(cmp, launch.get("emu"))
            if never:
                facts.add("never_written")
            if int(cmp.get("bad", 0)) > never:
                facts.add("written_wrong")
            if int(cmp.get("nan", 0)) - never > 0 or _has_inf(cmp):
                facts.add("nan_written")
            if k and all((l.get("compare") or {}).get("ok") for l in result.launches[:k]):
                facts.add("second_launch")
            if not elements or elements[-1].sizes != case:
                pattern = _pattern(case, cmp, never)
                if pattern is not None and len(elements) < 3:
                    elements.append(pattern)
        (passing if ok else failing).append(case)
    common = ""
    if failing:
        common_fact, common = size_pattern(ctx, passing, failing)
        if common_fact:
            facts.add(common_fact)
    causes = _causes(ctx)
    facts |= {c.fact for c in causes}
    conflicts = conflict_lines(ctx)
    if conflicts:
        facts.add("bank_conflicts")
    assert facts <= set(HINT_FACTS), facts - set(HINT_FACTS)  # every fact a hint may name is documented
    found = Evidence(frozenset(facts), kinds, tuple(failing), tuple(passing), common, tuple(elements), causes, conflicts)
    ctx.evidence = (len(ctx.results), found)
    return found


def _never_written(cmp: Mapping[str, Any], emu: Mapping[str, Any] | None) -> int:
    if emu is not None and "unwritten" in emu:
        return int(sum(emu["unwritten"].values()))
    return int(cmp.get("untouched", 0))


def _has_inf(cmp: Mapping[str, Any]) -> bool:
    got = (cmp.get("first") or {}).get("got")
    return isinstance(got, str) and "inf" in got


def _pattern(case: Mapping[str, int], cmp: Mapping[str, Any], never: int) -> ElementPattern | None:
    box = cmp.get("box")
    if not box or int(cmp.get("total", 0)) <= 1:  # a one-element output: no pattern to name
        return None
    untouched = cmp.get("untouched_box")
    all_never = bool(untouched) and never >= int(box["count"]) and untouched.get("param") == box["param"]
    return ElementPattern(dict(case), str(box["param"]), tuple(box["lo"]), tuple(box["hi"]), int(box["count"]), all_never)


def size_pattern(ctx: Context, passing: Sequence[Mapping[str, int]],
                 failing: Sequence[Mapping[str, int]]) -> tuple[str, str]:
    """(fact, words) for what the failing sizes have in common that the passing ones lack: a size
    variable that is not a multiple of the block's width, more than one block, an odd size variable;
    or every size fails. ("", "") if none."""
    if not passing:
        return "all_sizes", f"It is wrong at every size ({', '.join(sizes_text(s) for s in failing[:6])})."
    width = _block_width(ctx, list(passing) + list(failing))
    names = list(failing[0])
    ragged = _splitting(names, passing, failing, lambda v: width > 1 and v % width != 0)
    if ragged:
        return "ragged", f"Only the sizes where {ragged} is not a multiple of {width} (the block's width) fail."
    blocks = {sizes_text(s): _blocks(ctx, s) for s in list(passing) + list(failing)}
    if all(blocks[sizes_text(s)] == 1 for s in passing) and all(blocks[sizes_text(s)] > 1 for s in failing):
        return "above_one_block", "Only the sizes that need more than one block fail: a size that one block covers is right."
    odd = _splitting(names, passing, failing, lambda v: v % 2 == 1)
    if odd:
        return "odd", f"Only the sizes where {odd} is odd fail."
    return "", ""


def _splitting(names: Sequence[str], passing: Sequence[Mapping[str, int]], failing: Sequence[Mapping[str, int]],
               test) -> str:
    """The first size variable for which `test` holds at every failing size and at no passing one."""
    for name in names:
        if all(test(s[name]) for s in failing) and not any(test(s[name]) for s in passing):
            return name
    return ""


def _block_width(ctx: Context, sizes: Sequence[Mapping[str, int]]) -> int:
    """The block's x extent at the given sizes (the spec's block expression), or 0 when it varies."""
    try:
        widths = {ctx.spec.kernel.launch_for(s)[1][0] for s in sizes}
    except Exception:  # an expression that does not evaluate at a size: no pattern to name
        return 0
    return widths.pop() if len(widths) == 1 else 0


def _blocks(ctx: Context, sizes: Mapping[str, int]) -> int:
    try:
        g = ctx.spec.kernel.launch_for(sizes)[0]
    except Exception:  # as above: no pattern
        return 0
    return g[0] * g[1] * g[2]


def _causes(ctx: Context) -> tuple[Cause, ...]:
    """What the emulator saw in any launch of this grading that makes values wrong, each once, with
    its line: out-of-bounds and misaligned accesses, reads of unwritten shared memory, races and
    barrier errors, reads of an output before the kernel wrote it."""
    from .findings import memory_items, race_items, race_messages, uninit_read_text
    if not ctx.emu_available:
        return ()
    out: list[Cause] = []
    for what, item, sizes in memory_items(ctx):
        if what == "mem":
            out.append(Cause("out_of_bounds", item.get("line"), memory_error_text(ctx, item, sizes)))
        else:
            out.append(Cause("uninit_read", item.get("line"), uninit_read_text(ctx, item, sizes)))
    lines = [item.get("line") if what == "barrier" else item.get("second_line") for what, item, _ in race_items(ctx)]
    for line, text in zip(lines, race_messages(ctx)):
        out.append(Cause("race", line, text))
    for text, remedy in early_output_reads(ctx):
        out.append(Cause("early_output_read", None, text, remedy))
    return tuple(out)


def early_output_reads(ctx: Context) -> list[tuple[str, str]]:
    """Lines that read an output element before the kernel wrote it, from every emulated launch, each
    as (what was seen, the grader's remedy): its contents on entry are undefined (the grader fills
    outputs with NaN), so `C += ...` into a C never zeroed, or `beta * C` with beta = 0, reads garbage."""
    seen: dict[tuple[str, int], tuple[int, str]] = {}
    for sizes, launch in emu_launches(ctx, [tid for tid, t in ctx.planned.items() if t.backend == "emu"]):
        for r in launch["emu"].get("output_reads", []):
            key = (r["buffer"], r["line"])
            if r["count"] > seen.get(key, (0, ""))[0]:
                seen[key] = (r["count"], sizes_text(sizes))
    return [(f"{ctx.quote(line)} reads {buffer} before the kernel has written it ({count:,} elements at {where}): an "
             f"output holds no data when the kernel starts (the grader fills it with NaN).",
             f"Write each element of {buffer} before reading it, for example accumulate in a register and store once.")
            for (buffer, line), (count, where) in sorted(seen.items(), key=lambda kv: kv[0][1])][:3]


def memory_error_text(ctx: Context, m: Mapping[str, Any], sizes: Mapping[str, int]) -> str:
    """An out-of-bounds or misaligned access in words: the line, the access (read or write when the
    emulator says), where it landed, and one thread that made it."""
    return (f"{m['kind'].replace('-', ' ')} of {m['space']} memory at {ctx.quote(m.get('line'))} ({sizes_text(sizes)}, block "
            f"{tuple(m['block'])}, thread {tuple(m['thread'])}): {m.get('detail', '')}").rstrip(": ")


def natural_wavefronts(ptx: str | None) -> dict[int, int]:
    """Per source line of the submission (PTX file 1), the wavefronts its widest shared access needs
    when no two lanes conflict: a warp moves 128 bytes per wavefront."""
    out: dict[int, int] = {}
    line = 0
    for raw in (ptx or "").splitlines():
        loc = _LOC.match(raw)
        if loc:
            line = int(loc.group(2)) if loc.group(1) == "1" else 0
            continue
        m = _SHARED_ACCESS.search(raw)
        if m and line:
            lane_bytes = int(m.group(1) or 1) * int(m.group(2)) // 8
            out[line] = max(out.get(line, 1), max(1, lane_bytes // 4))
    return out


def conflict_lines(ctx: Context) -> tuple[tuple[int, float], ...]:
    """Source lines whose shared-memory accesses average CONFLICT_FACTOR times the wavefronts their
    width needs, or more, per warp instruction, in any emulated launch that counted per line; worst
    first, as (line, wavefronts per warp instruction)."""
    natural = natural_wavefronts(submission_ptx(ctx))
    worst: dict[int, float] = {}
    ids = [tid for tid, t in ctx.planned.items() if t.backend == "emu"]
    for _sizes, launch in emu_launches(ctx, ids):
        for line, counters in (launch["emu"].get("per_line") or {}).items():
            if not str(line).isdigit() or int(line) <= 0:
                continue
            for waves, inst in zip(SH_WAVES, SH_INST):
                n = counters.get(inst, 0)
                if n and counters.get(waves, 0) / n >= CONFLICT_FACTOR * natural.get(int(line), 1):
                    worst[int(line)] = max(worst.get(int(line), 0.0), counters[waves] / n)
    return tuple(sorted(worst.items(), key=lambda kv: -kv[1]))
