"""Time the emulator against Numba's CUDA simulator on the level2 tiled matmul, in one run.

    python bench/emu_vs_numba.py              # N = 256, updates docs/benchmarks.md
    python bench/emu_vs_numba.py --size 100   # a quick sanity run

Measured, all on this machine and in this run:

* ``grade profile exercises/level2 reference/level2/solution.cu --size N --backend emu``: wall time
  of the whole command (NVRTC compile, sandboxed child, inputs, the launch with every check on,
  hazard tracking included);
* ``Emulator.launch`` of the same PTX in this process, every check on (best of ``--repeats``);
* the same algorithm (32 x 32 tiles in shared memory, two ``syncthreads``, zero-filled edges) run by
  Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) in a child process: the launch alone, and the
  child's whole wall time.

The ratio is the simulator's launch over the emulator's in-process launch. Numba is not a
dependency of the project: ``pip install numba`` first. The script rewrites the section
"Emulator vs Numba's CUDA simulator" of docs/benchmarks.md with the numbers of this run only.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

EXERCISE = ROOT / "exercises" / "level2"
SOLUTION = ROOT / "reference" / "level2" / "solution.cu"
DOCS = ROOT / "docs" / "benchmarks.md"
SECTION = "## Emulator vs Numba's CUDA simulator"
TILE = 32

# The child that runs under NUMBA_ENABLE_CUDASIM=1: the reference kernel, written for Numba.
NUMBA_CHILD = r'''
import json, math, sys, time
import numpy as np
from numba import cuda, float32

TILE = 32

@cuda.jit
def matmul_tiled(A, B, C, N):
    As = cuda.shared.array((TILE, TILE), float32)
    Bs = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    acc = float32(0.0)
    for t in range(0, N, TILE):
        a_col, b_row = t + tx, t + ty
        As[ty, tx] = A[row, a_col] if row < N and a_col < N else float32(0.0)
        Bs[ty, tx] = B[b_row, col] if b_row < N and col < N else float32(0.0)
        cuda.syncthreads()
        for k in range(TILE):
            acc += As[ty, k] * Bs[k, tx]
        cuda.syncthreads()
    if row < N and col < N:
        C[row, col] = acc

n = int(sys.argv[1])
rng = np.random.default_rng(1)
A = rng.standard_normal((n, n)).astype(np.float32)
B = rng.standard_normal((n, n)).astype(np.float32)
dA, dB = cuda.to_device(A), cuda.to_device(B)
dC = cuda.device_array((n, n), dtype=np.float32)
g = math.ceil(n / TILE)
start = time.perf_counter()
matmul_tiled[(g, g), (TILE, TILE)](dA, dB, dC, n)
cuda.synchronize()
seconds = time.perf_counter() - start
err = float(np.abs(dC.copy_to_host() - A.astype(np.float64) @ B).max())
print(json.dumps({"launch_s": seconds, "max_abs_err": err, "simulator": cuda.simulator_enabled
                  if hasattr(cuda, "simulator_enabled") else True}))
'''


def machine() -> dict[str, str]:
    """nproc and the CPU model, as /proc/cpuinfo names it."""
    model = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"nproc": str(os.cpu_count()), "cpu": model, "python": platform.python_version(),
            "numpy": np.__version__}


def loadavg() -> str:
    """The 1-minute load average: other work on the machine slows every number alike."""
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "unknown"


def inputs(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    return (rng.standard_normal((n, n)).astype(np.float32), rng.standard_normal((n, n)).astype(np.float32))


def time_grade_profile(n: int) -> dict:
    """Wall time of the `grade profile` command, every check of the emulator on."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "profile.json"
        cmd = [sys.executable, "-m", "grader", "profile", str(EXERCISE), str(SOLUTION), "--size", str(n),
               "--backend", "emu", "--json", str(out)]
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - start
        if proc.returncode != 0 or not out.exists():
            raise SystemExit(f"grade profile failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        data = json.loads(out.read_text())
    if data.get("error"):
        raise SystemExit(f"grade profile reported an error: {data['error']}")
    return {"wall_s": wall, "counters": data["counters"]}


def time_emulator(n: int, repeats: int) -> dict:
    """Emulator.launch of the reference PTX in this process (hazard tracking on), best of `repeats`."""
    from grader.compile import compile_source
    from grader.emu import Emulator

    compiled = compile_source(SOLUTION.read_text(), SOLUTION.name)
    if not compiled.ok:
        raise SystemExit(f"NVRTC failed:\n{compiled.log}")
    a_host, b_host = inputs(n)
    g = (n + TILE - 1) // TILE
    best, report, err = float("inf"), None, 0.0
    for _ in range(repeats):
        emu = Emulator(compiled.ptx, source_name=SOLUTION.name)
        a, b, c = (emu.alloc(n * n * 4, name=k) for k in "ABC")
        emu.write(a, a_host)
        emu.write(b, b_host)
        start = time.perf_counter()
        report = emu.launch("matmul_tiled", grid=(g, g), block=(TILE, TILE), args=[a, b, c, n],
                            step_limit=200_000, track_hazards=True)
        best = min(best, time.perf_counter() - start)
        got = emu.read(c, np.float32, n * n).reshape(n, n)
        err = float(np.abs(got - a_host.astype(np.float64) @ b_host).max())
    if report.status != "ok" or report.hazards or report.memory_errors or report.uninit_reads:
        raise SystemExit(f"emulated launch not clean: {report.status}: {report.message}")
    return {"launch_s": best, "repeats": repeats, "max_abs_err": err, "counters": report.counters,
            "warp_instructions": report.warp_instructions}


def time_numba(n: int) -> dict:
    """Numba's CUDA simulator on the same algorithm, in a child with NUMBA_ENABLE_CUDASIM=1."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", NUMBA_CHILD, str(n)], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"the Numba simulator child failed (pip install numba?):\n{proc.stderr[-3000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    import numba

    return {"launch_s": result["launch_s"], "wall_s": wall, "max_abs_err": result["max_abs_err"],
            "version": numba.__version__}


def section(n: int, cmd: str, info: dict, prof: dict, emu: dict, sim: dict) -> str:
    """The markdown section for docs/benchmarks.md."""
    ratio = sim["launch_s"] / emu["launch_s"]
    rows = [
        ("Emulator.launch, in process, every check on (hazard tracking included), best of "
         f"{emu['repeats']}", f"{emu['launch_s']:.3f}"),
        ("`grade profile ... --backend emu`, whole command (NVRTC, sandboxed child, inputs, launch)",
         f"{prof['wall_s']:.3f}"),
        (f"Numba {sim['version']} CUDA simulator, the kernel launch", f"{sim['launch_s']:.3f}"),
        ("Numba CUDA simulator, whole child process (import, JIT setup, launch)", f"{sim['wall_s']:.3f}"),
    ]
    lines = [
        SECTION,
        "",
        f"Level2 tiled matmul (32 x 32 tiles, two barriers, zero-filled edges) at N = {n}: "
        f"{(n + 31) // 32} x {(n + 31) // 32} blocks of 1,024 threads, "
        f"{emu['warp_instructions']:,} emulated warp instructions. Measured in one run of",
        "",
        "```",
        cmd,
        "```",
        "",
        f"on {info['nproc']} CPUs ({info['cpu']}), Python {info['python']}, NumPy {info['numpy']}; "
        f"1-minute load average {info['load_start']} at the start, {info['load_end']} at the end.",
        "",
        "| what | seconds |",
        "| --- | ---: |",
        *[f"| {what} | {sec} |" for what, sec in rows],
        "",
        f"**Ratio (Numba simulator launch / emulator launch): {ratio:.1f}x** (target: at least 50x). "
        f"Largest absolute error against a float64 product: emulator {emu['max_abs_err']:.2e}, "
        f"simulator {sim['max_abs_err']:.2e}. The emulator's counters from `grade profile` and from "
        "the in-process launch agree.",
        "",
        "The machine may be shared: a load average above the CPU count means other processes competed "
        "for the CPUs during the run, which slows both sides, not necessarily equally. Rerun the "
        "command for numbers of your own.",
        "",
    ]
    return "\n".join(lines)


def update_docs(text: str, path: Path = DOCS) -> None:
    """Replace (or append) the section, leaving the rest of the file as it is."""
    old = path.read_text() if path.exists() else "# Benchmarks\n"
    pattern = re.compile(rf"^{re.escape(SECTION)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(old):
        new = pattern.sub(lambda _: text + "\n", old, count=1)
    else:
        new = old.rstrip("\n") + "\n\n" + text
    path.write_text(new.rstrip("\n") + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256, help="N (default 256; 100 for a quick run)")
    parser.add_argument("--repeats", type=int, default=3, help="in-process emulator launches (best is kept)")
    parser.add_argument("--no-docs", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args()
    n = args.size
    cmd = "python bench/emu_vs_numba.py" + (f" --size {n}" if n != 256 else "")
    info = machine()
    info["load_start"] = loadavg()
    print(f"machine: {info['nproc']} CPUs, {info['cpu']}, load {info['load_start']}", flush=True)
    prof = time_grade_profile(n)
    print(f"grade profile --backend emu, whole command: {prof['wall_s']:.3f} s", flush=True)
    emu = time_emulator(n, args.repeats)
    print(f"Emulator.launch (hazards on), best of {args.repeats}: {emu['launch_s']:.3f} s", flush=True)
    if {k: int(v) for k, v in prof["counters"].items()} != {k: int(v) for k, v in emu["counters"].items()
                                                            if k in prof["counters"]}:
        raise SystemExit("grade profile and the in-process launch disagree on the counters")
    sim = time_numba(n)
    print(f"Numba CUDA simulator launch: {sim['launch_s']:.3f} s (child wall {sim['wall_s']:.3f} s)", flush=True)
    print(f"ratio: {sim['launch_s'] / emu['launch_s']:.1f}x", flush=True)
    info["load_end"] = loadavg()
    if not args.no_docs:
        update_docs(section(n, cmd, info, prof, emu, sim))
        print(f"updated {DOCS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
