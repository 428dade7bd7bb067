"""Compiling a submission with NVRTC (through CuPy's binding): one compile feeds both backends.

The same call yields PTX (the emulator interprets it) and a CUBIN for the GPU's own architecture
(the GPU backend loads it), so both backends see the same compiler, options and errors.
It runs inside a child process (started through grader/run/parent/sandbox.py): a compile-time bomb only costs that child.
"""
from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from . import headers

# -lineinfo: PTX .loc lines and SASS line tables, so every finding points at a source line.
BASE_OPTIONS = ("-lineinfo", "-std=c++17", "--no-source-include")
# nvcc includes cuda_runtime.h in every file on its own, which brings the macros of a host <math.h> and
# <limits.h>: kernels written for nvcc use INFINITY or INT_MAX with no #include. NVRTC includes nothing,
# so a source naming one of them gets grader/include/nvcc_implicit.h pre-included. Only such a source:
# with NVRTC's bundled headers in reach, <math.h> brings CCCL's <cmath>, which costs seconds a compile.
IMPLICIT_INCLUDE = "--pre-include=nvcc_implicit.h"
_IMPLICIT_MACROS = re.compile(
    r"\b(?:INFINITY|NAN|HUGE_VALF?|M_[A-Z0-9_]+|CHAR_BIT|[SU]?CHAR_(?:MIN|MAX)|U?SHRT_(?:MIN|MAX)|"
    r"U?INT_(?:MIN|MAX)|U?L?LONG_(?:MIN|MAX))\b")
DEFAULT_ARCH = "sm_90"  # without a GPU: the architecture the emulator's PTX is compiled for
MAX_LOG_CHARS = 8000

_HINTS = (
    ("host functions are not allowed in JIT mode",
     "Submit only device code: remove main() and any other host function; the grader launches your kernel itself."),
    ("cannot open source file",
     "This header is not available to the grader's compiler; remove the #include (the CUDA built-ins need none)."),
    # A fast machine reaches the compiler's memory cap before its time limit.
    ("catastrophic error: out of memory",
     "The compiler ran out of the memory it may use: a compile-time bomb? (deep template or macro recursion)"),
)


@dataclass(frozen=True)
class CompileResult:
    """Outcome of one NVRTC compile: a value, never an exception."""

    ok: bool
    log: str
    ptx: str = ""
    cubin: bytes = b""
    seconds: float = 0.0
    options: tuple[str, ...] = ()
    hint: str = ""


def compile_source(source: str, name: str, arch: str = DEFAULT_ARCH, extra_options: tuple[str, ...] = ()) -> CompileResult:
    """Compile CUDA source to PTX and CUBIN for `arch` (e.g. "sm_90"); errors come back in the result.

    The log names the file `name` and only it: NVRTC sees a plain ASCII stand-in (a name with
    quotes or newlines would otherwise reach the PTX's .file directive), and a diagnostic in any
    other file (pulled in by a directive the policy missed) is reported without that file's text.
    Includes resolve only in the grader's own header folders (grader/headers.py); the source
    policy has already refused every header the exercise does not allow.
    """
    from cupy_backends.cuda.libs import nvrtc  # imported here: only the compile child needs it

    implicit = (IMPLICIT_INCLUDE,) if _IMPLICIT_MACROS.search(source) else ()
    options = BASE_OPTIONS + implicit + (f"-arch={arch}",) + tuple(extra_options)
    dirs = _include_dirs(nvrtc) if "include" in source else headers.include_dirs(None)
    plain = _plain_name(name)
    start = time.perf_counter()
    prog = nvrtc.createProgram(source, plain, [], [])
    try:
        try:
            nvrtc.compileProgram(prog, list(options) + [f"-I{d}" for d in dirs])
        except nvrtc.NVRTCError:
            log = _clean_log(_own_file_only(_text(nvrtc.getProgramLog(prog)), plain, name))
            return CompileResult(False, log, seconds=time.perf_counter() - start, options=options, hint=_hint(log))
        log = _clean_log(_own_file_only(_text(nvrtc.getProgramLog(prog)), plain, name))
        ptx = nvrtc.getPTX(prog)
        ptx = (ptx.decode() if isinstance(ptx, bytes) else ptx).rstrip("\x00")
        foreign = foreign_files(ptx, plain, dirs)
        if foreign:
            log = (f"{name}: your code pulled in another file ({len(foreign)} file(s), not shown). "
                   "A submission must be one self-contained file: remove every #include and #line.")
            return CompileResult(False, log, seconds=time.perf_counter() - start, options=options)
        cubin = nvrtc.getCUBIN(prog)
        return CompileResult(True, log, ptx=ptx, cubin=bytes(cubin), seconds=time.perf_counter() - start, options=options)
    finally:
        nvrtc.destroyProgram(prog)


def _plain_name(name: str) -> str:
    """An ASCII file name safe anywhere (PTX, logs) that keeps the student's name when it already is."""
    plain = re.sub(r"[^A-Za-z0-9._+-]", "_", name).lstrip("-.") or "submission.cu"
    return plain[:100]


# A diagnostic header: "file(line): error: ..." or "file: ..."; its context lines are indented.
_DIAGNOSTIC = re.compile(r"^(?P<file>\S.*?)\((?P<line>\d+)\): (?P<what>[a-z ]*(?:error|warning|remark)\b.*)$")


def _own_file_only(log: str, plain: str, name: str) -> str:
    """The log with the submission called by its own name and nothing quoted from other files.

    A diagnostic located in another file keeps only its severity: its message and source excerpt
    could quote that file (say /etc/passwd, or the reference solution).
    """
    out: list[str] = []
    hiding = False
    for line in log.split("\n"):
        m = _DIAGNOSTIC.match(line)
        if m:
            hiding = m.group("file") != plain
            if hiding:
                kind = "error" if "error" in m.group("what") else "warning"
                said = (f"{name}: {kind} in a file other than your submission (its text is not shown): "
                        "remove every #include and #line")
                if not out or out[-1] != said:
                    out.append(said)
                continue
            line = f"{name}({m.group('line')}): {m.group('what')}"
        elif hiding and (line.startswith(" ") or not line.strip()):
            continue
        else:
            hiding = False
        out.append(line.replace(f'compilation of "{plain}"', f'compilation of "{name}"'))
    return "\n".join(out)


def foreign_files(ptx: str, plain: str, dirs: tuple[Path, ...] = ()) -> list[str]:
    """Files other than the submission and the grader's own headers that contributed code (the
    PTX's .file directives)."""
    own = {plain, os.path.abspath(plain), os.path.realpath(plain)}  # NVRTC names the main file from the cwd
    found = re.findall(r'^\s*\.file\s+\d+\s+"((?:[^"\\]|\\.)*)"', ptx, re.MULTILINE)
    return [f for f in found if f not in own and not headers.within(f, dirs)]


_BUNDLE: list[Path | None] = []  # NVRTC's bundled headers, looked for once per process


def _include_dirs(nvrtc) -> tuple[Path, ...]:
    """The grader's header folders, NVRTC's bundled headers among them once extracted."""
    if not _BUNDLE:
        try:
            version = tuple(nvrtc.getVersion())[:2]
        except Exception:  # an NVRTC binding without getVersion: the grader's own headers only
            version = ()
        bundle = headers.install_bundle(version) if len(version) == 2 else None  # type: ignore[arg-type]
        _BUNDLE.append(bundle or headers.toolkit_include())
    return headers.include_dirs(_BUNDLE[0])


def kernel_param_types(ptx: str, kernel: str) -> list[str] | None:
    """The PTX parameter types of an .entry (e.g. ["u64", "u64", "u32"]), or None if it is absent."""
    match = re.search(r"\.entry\s+" + re.escape(kernel) + r"\s*\(([^)]*)\)", ptx)
    if not match:
        match = re.search(r"\.entry\s+" + re.escape(kernel) + r"\s*\(\s*\)", ptx)
        return [] if match else None
    return re.findall(r"\.param\s+\.(\w+)", match.group(1))


def entry_names(ptx: str) -> list[str]:
    """Every kernel (.entry) the PTX defines."""
    return re.findall(r"\.entry\s+([\w$]+)", ptx)


def _text(log: str | bytes) -> str:
    return (log.decode(errors="replace") if isinstance(log, bytes) else log).rstrip("\x00")


def _clean_log(text: str) -> str:
    text = text.strip()
    if len(text) > MAX_LOG_CHARS:
        text = text[:MAX_LOG_CHARS] + f"\n... ({len(text) - MAX_LOG_CHARS} more characters of compiler output cut)"
    return text


def _hint(log: str) -> str:
    return " ".join(h for needle, h in _HINTS if needle in log)


def nvrtc_problem() -> str | None:
    """Why NVRTC cannot be used in this process (CuPy or the NVRTC library missing or broken), or None."""
    try:
        from cupy_backends.cuda.libs import nvrtc

        nvrtc.getVersion()
    except Exception as exc:  # ImportError, a library that does not load: any of them means no compiler
        return (f"{type(exc).__name__}: {exc}".splitlines()[0][:300] +
                " (install the grader with its dependencies: pip install kernel-grader, or cupy-cuda13x and nvidia-cuda-nvrtc)")
    return None


def main(argv: list[str]) -> int:
    """Child entry: `python -m grader.compile JOB.json` compiles each source and writes artifacts + a summary."""
    import json

    job = json.loads(Path(argv[0]).read_text())
    summary = {}
    problem = nvrtc_problem()
    if problem:  # the grader's own compiler is missing or broken: no source is to blame
        Path(job["summary"]).write_text(json.dumps({"_tool_error": problem}))
        return 0
    for item in job["sources"]:
        result = compile_source(Path(item["path"]).read_text(encoding="utf-8"), item["name"], job["arch"])
        entry = {"ok": result.ok, "log": result.log, "hint": result.hint, "seconds": result.seconds, "options": list(result.options)}
        if result.ok:
            ptx_path, cubin_path = Path(item["out"] + ".ptx"), Path(item["out"] + ".cubin")
            ptx_path.write_text(result.ptx)
            cubin_path.write_bytes(result.cubin)
            entry.update(ptx=str(ptx_path), cubin=str(cubin_path))
        summary[item["label"]] = entry
        Path(job["summary"]).write_text(json.dumps(summary))
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
