"""The hand-made pipeline a course would script without kernel-grader: the baseline of the grading-speed benchmark.

For one level2 submission, serially: a fresh CUDA process that compiles the kernel and runs 9 sizes
x 8 launches comparing with NumPy; then compute-sanitizer racecheck, synccheck, memcheck and
initcheck at N = 100; then one ncu run at N = 1000 for global load sectors. Prints one JSON line
with each stage's seconds and a verdict per category. GPU only.

    python bench/handmade_pipeline.py reference/level2/solution.cu
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

SIZES = (1, 17, 32, 33, 64, 100, 129, 1000, 1024)
LAUNCHES = 8

# The child that compiles and runs the kernel, as a script a course would write by hand.
CHILD = r'''
import sys, numpy as np, cupy as cp
src = open(sys.argv[1]).read()
mode = sys.argv[2]
if mode != "run":
    cp.cuda.set_allocator(None)
kern = cp.RawModule(code=src, options=("-lineinfo",)).get_function("matmul_tiled")
sizes = [int(s) for s in sys.argv[3].split(",")]
launches = int(sys.argv[4])
bad = []
for n in sizes:
    rng = np.random.default_rng(n)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    want = a.astype(np.float64) @ b.astype(np.float64)
    tol = 2 * n * 2.0**-24 * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)) + 1e-6
    da, db = cp.asarray(a), cp.asarray(b)
    for _ in range(launches):
        c = cp.full((n, n), cp.nan, dtype=cp.float32)
        g = ((n + 31) // 32, (n + 31) // 32)
        kern(g, (32, 32), (da, db, c, np.int32(n)))
        got = c.get().astype(np.float64)
        if not np.all(np.abs(got - want) <= tol):
            bad.append(n)
            break
print("BAD", sorted(set(bad)))
'''


def run(argv: list[str], timeout: float = 300) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    return time.perf_counter() - start, proc


def main() -> int:
    sub = Path(sys.argv[1]).resolve()
    child = Path("/tmp/handmade_child.py")
    child.write_text(CHILD)
    py = sys.executable
    stages, verdict = {}, {}
    t, proc = run([py, str(child), str(sub), "run", ",".join(map(str, SIZES)), str(LAUNCHES)])
    stages["compile+runs"] = t
    verdict["correctness"] = "BAD []" in proc.stdout
    sanitizer = shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"
    for tool in ("racecheck", "synccheck", "memcheck", "initcheck"):
        t, proc = run([sanitizer, "--tool", tool, "--error-exitcode", "86", py, str(child), str(sub), tool, "100", "1"])
        stages[tool] = t
        verdict[tool] = proc.returncode == 0
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    t, proc = run([ncu, "--clock-control", "none", "--csv", "--page", "raw", "--metrics",
                   "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "-k", "matmul_tiled",
                   py, str(child), str(sub), "ncu", "1000", "1"])
    stages["ncu"] = t
    sectors = [line.split('","')[-1].strip('"').replace(",", "") for line in proc.stdout.splitlines() if "matmul_tiled" in line]
    verdict["traffic_sectors"] = float(sectors[-1]) if sectors else None
    print(json.dumps({"submission": sub.name, "seconds": round(sum(stages.values()), 2),
                      "stages": {k: round(v, 2) for k, v in stages.items()}, "verdict": verdict}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
