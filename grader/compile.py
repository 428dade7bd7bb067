"""Compiling a submission with NVRTC (through CuPy's binding): one compile feeds both backends.

The same call yields PTX (the emulator interprets it) and a CUBIN for the GPU's own architecture
(the GPU backend loads it), so both backends see the same compiler, options and errors.
It runs inside a child process (see sandbox.py): a compile-time bomb only costs that child.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass

# -lineinfo: PTX .loc lines and SASS line tables, so every finding points at a source line.
BASE_OPTIONS = ("-lineinfo", "-std=c++17", "--no-source-include")
DEFAULT_ARCH = "sm_90"  # without a GPU: the architecture the emulator's PTX is compiled for
MAX_LOG_CHARS = 8000

_HINTS = (
    ("host functions are not allowed in JIT mode",
     "Submit only device code: remove main() and any other host function; the grader launches your kernel itself."),
    ("cannot open source file",
     "The grader compiles your file on its own; remove #include lines (the built-ins need none)."),
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
    """Compile CUDA source to PTX and CUBIN for `arch` (e.g. "sm_90"); errors come back in the result."""
    from cupy_backends.cuda.libs import nvrtc  # imported here: only the compile child needs it

    options = BASE_OPTIONS + (f"-arch={arch}",) + tuple(extra_options)
    start = time.perf_counter()
    prog = nvrtc.createProgram(source, name, [], [])
    try:
        try:
            nvrtc.compileProgram(prog, list(options))
        except nvrtc.NVRTCError:
            log = _clean_log(nvrtc.getProgramLog(prog))
            return CompileResult(False, log, seconds=time.perf_counter() - start, options=options, hint=_hint(log))
        log = _clean_log(nvrtc.getProgramLog(prog))
        ptx = nvrtc.getPTX(prog)
        ptx = ptx.decode() if isinstance(ptx, bytes) else ptx
        cubin = nvrtc.getCUBIN(prog)
        return CompileResult(True, log, ptx=ptx.rstrip("\x00"), cubin=bytes(cubin), seconds=time.perf_counter() - start, options=options)
    finally:
        nvrtc.destroyProgram(prog)


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


def _clean_log(log: str | bytes) -> str:
    text = log.decode(errors="replace") if isinstance(log, bytes) else log
    text = text.rstrip("\x00").strip()
    if len(text) > MAX_LOG_CHARS:
        text = text[:MAX_LOG_CHARS] + f"\n... ({len(text) - MAX_LOG_CHARS} more characters of compiler output cut)"
    return text


def _hint(log: str) -> str:
    return " ".join(h for needle, h in _HINTS if needle in log)


def main(argv: list[str]) -> int:
    """Child entry: `python -m grader.compile JOB.json` compiles each source and writes artifacts + a summary."""
    import json
    from pathlib import Path

    job = json.loads(Path(argv[0]).read_text())
    summary = {}
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
