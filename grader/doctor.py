"""`grade doctor`: what this machine can grade, on one screen.

Each tool the grader relies on is looked for and, where cheap, tried for real (NVRTC compiles a
kernel, the emulator runs it, pytest imports), so a missing or broken install is found before a
student's grade depends on it. Nothing here runs student code.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import platform
import subprocess
import time
from dataclasses import dataclass
from typing import Callable

from . import __version__

_PROBE_KERNEL = r'''
#include <cstdio>
extern "C" __global__ void add(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
'''


@dataclass(frozen=True)
class Finding:
    """One line of the doctor's report: a tool, whether it works, what it is for or how to fix it."""

    name: str
    ok: bool
    detail: str
    needed: bool  # grading cannot work at all without it (not just some checks on a GPU)
    present: bool = True  # False: not on this machine (fine where it is not needed, e.g. ncu without a GPU)


def examine() -> list[Finding]:
    """Look at every tool the grader uses; slow probes (a compile, an emulated launch) take ~1 s."""
    found = [Finding("python", True, f"{platform.python_implementation()} {platform.python_version()}, "
                                     f"kernel-grader {__version__}", True)]
    found.append(_pytest())
    nvrtc, ptx = _nvrtc()
    found.append(nvrtc)
    found.append(_emulator(ptx))
    found += _gpu_and_tools()
    found.append(_sandbox())
    return found


def _sandbox() -> Finding:
    """The walls student Python (the Python kind) runs in here: not needed for kernels, and grading
    goes on without them, but then a determined student's code can read what this user can."""
    from .run.jail import layers

    walls = layers.current()
    if walls.kernel_wall:
        detail = f"{walls.describe()}: student Python is walled in by the kernel"
        if walls.missing:
            detail += f" (also tried: {'; '.join(walls.missing)})"
        return Finding("sandbox", True, detail, False)
    return Finding("sandbox", True, f"{walls.describe()}. Python exercises still grade, but a hostile submission could "
                   f"read the hidden tests or what else this user can read. Why: {'; '.join(walls.missing)}. Grade them "
                   "on Linux 5.13 or newer with bubblewrap installed (apt-get install bubblewrap libseccomp2)",
                   False, present=False)


def _pytest() -> Finding:
    if importlib.util.find_spec("pytest") is None:
        return Finding("pytest", False, "missing: exercises' hidden tests cannot run (pip install pytest)", True)
    return Finding("pytest", True, f"{importlib.metadata.version('pytest')}: runs the exercises' hidden tests", True)


def _nvrtc() -> tuple[Finding, str | None]:
    from .compile import compile_source, nvrtc_problem

    problem = nvrtc_problem()
    if problem:
        return Finding("NVRTC", False, f"cannot compile: {problem}", True), None
    from cupy_backends.cuda.libs import nvrtc

    major, minor = tuple(nvrtc.getVersion())[:2]
    start = time.perf_counter()
    result = compile_source(_PROBE_KERNEL, "doctor.cu")
    if not result.ok:
        return Finding("NVRTC", False, f"{major}.{minor} loads but a test kernel did not compile: "
                                       f"{result.log.splitlines()[0] if result.log else '?'}", True), None
    from . import compile as compile_module

    bundle = compile_module._BUNDLE[0] if compile_module._BUNDLE else None
    headers = "CUDA headers (cuda_fp16.h, ...) from " + str(bundle) if bundle else \
        "no CUDA headers (neither bundled with this NVRTC nor in a CUDA toolkit; cuda_fp16.h will not open)"
    return Finding("NVRTC", True, f"{major}.{minor}: a test kernel with #include <cstdio> compiled in "
                                  f"{time.perf_counter() - start:.2f} s; {headers}", True), result.ptx


def _emulator(ptx: str | None) -> Finding:
    if ptx is None:
        return Finding("emulator", False, "not tried: it needs NVRTC's PTX", True)
    try:
        import numpy as np

        from .emu import Emulator

        emu = Emulator(ptx, "doctor.cu")
        n = 100
        a, b = np.arange(n, dtype=np.float32), np.ones(n, dtype=np.float32)
        pa, pb, pc = emu.alloc(4 * n), emu.alloc(4 * n), emu.alloc(4 * n)
        emu.write(pa, a)
        emu.write(pb, b)
        start = time.perf_counter()
        emu.launch("add", grid=(1,), block=(128,), args=[pa, pb, pc, n])
        right = bool(np.array_equal(emu.read(pc, np.float32, n), a + b))
    except Exception as exc:  # any failure here is the finding
        return Finding("emulator", False, f"broken: {type(exc).__name__}: {exc}", True)
    if not right:
        return Finding("emulator", False, "ran a test kernel but got a wrong answer", True)
    return Finding("emulator", True, f"ran a test kernel in {time.perf_counter() - start:.2f} s: grades everything "
                                     "but performance without a GPU", True)


def _gpu_and_tools() -> list[Finding]:
    from .run.parent.device_probe import probe
    from .tools import find_tools

    info = probe()
    out = [Finding("GPU", True, f"{info.name} ({info.arch}): --backend gpu works, and performance is timed"
                   if info.available else f"none ({info.reason}): grading uses the emulator; performance is not "
                                          "run (its points leave the denominator)", False, present=info.available)]
    tools = find_tools()
    for name, path, use in (("ncu", tools.ncu, "traffic and bank conflicts on a GPU (Nsight Compute)"),
                            ("compute-sanitizer", tools.sanitizer, "racecheck, synccheck and memcheck where the "
                                                                  "emulator cannot run a kernel")):
        if path:
            out.append(Finding(name, True, f"{path} ({_version(path)}): {use}", False))
        else:
            need = "a GPU grading lists those checks as not run, the grader's fault" if info.available else "only needed with a GPU"
            out.append(Finding(name, not info.available, f"not found: {use}; {need}", False, present=False))
    return out


def _version(path: str) -> str:
    try:
        text = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return "version unknown"
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[-1].strip()[:80] if lines else "version unknown"


def report_lines(findings: list[Finding], paint: Callable[[str, str], str] = lambda t, _: t) -> list[str]:
    """The screen: one line per tool, then what it means for grading."""
    out = []
    for f in findings:
        if not f.ok:
            mark = paint("FAIL", "31")
        else:
            mark = paint("ok  ", "32") if f.present else paint("--  ", "33")
        out.append(f"  {mark}  {f.name:<18} {f.detail}")
    broken = [f.name for f in findings if f.needed and not f.ok]
    out.append("")
    out.append(f"grading is NOT possible here: fix {', '.join(broken)}" if broken else
               "grading works here" + ("" if any(f.name == "GPU" and f.present for f in findings) else " (on the emulator)"))
    return out


def healthy(findings: list[Finding]) -> bool:
    """Whether every tool grading needs works, and every GPU tool where there is a GPU."""
    return all(f.ok for f in findings)

