"""How long one launch of a kernel that printf()s from every thread takes, by printf FIFO size.

Run on a GPU machine: `python3 bench/printf_fifo.py [N] [FIFO_BYTES ...]`. Each FIFO size runs in
a fresh process (the limit must be set before the first launch) with a 30 s limit; the kernel is
tests/hostile/printf_flood.cu (an N x N tiled matmul whose every thread prints one line). The
printed output goes to a pipe that is drained and counted, as the grader's runner child does.
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import sys, time
import cupy as cp
import numpy as np
n, fifo = int(sys.argv[1]), int(sys.argv[2])
if fifo:
    cp.cuda.runtime.deviceSetLimit(0x01, fifo)  # cudaLimitPrintfFifoSize
source = open(sys.argv[3]).read()
kernel = cp.RawModule(code=source, options=("-std=c++17",)).get_function("matmul_tiled")
a = cp.random.random((n, n), dtype=cp.float32)
b = cp.random.random((n, n), dtype=cp.float32)
c = cp.empty((n, n), dtype=cp.float32)
grid = ((n + 31) // 32, (n + 31) // 32)
cp.cuda.Device().synchronize()
start = time.perf_counter()
kernel(grid, (32, 32), (a, b, c, np.int32(n)))
launched = time.perf_counter()
cp.cuda.Device().synchronize()
done = time.perf_counter()
print(f"RESULT launch call {launched - start:.3f} s, synchronize {done - launched:.3f} s", file=sys.stderr, flush=True)
"""


def main(argv: list[str]) -> int:
    n = int(argv[0]) if argv else 1000
    sizes = [int(x) for x in argv[1:]] or [64 * 1024, 0]
    source = ROOT / "tests" / "hostile" / "printf_flood.cu"
    for fifo in sizes:
        start = time.perf_counter()
        try:
            done = subprocess.run([sys.executable, "-c", CHILD, str(n), str(fifo), str(source)], capture_output=True, timeout=30)
            result = [ln for ln in done.stderr.decode(errors="replace").splitlines() if ln.startswith("RESULT")]
            what = f"exit {done.returncode}, {len(done.stdout):,} bytes printed, {result[0] if result else done.stderr[-300:]!r}"
        except subprocess.TimeoutExpired:
            what = "did not finish within 30 s"
        label = f"{fifo:,} bytes" if fifo else "default (1 MiB)"
        print(f"N = {n}, printf FIFO {label}: {time.perf_counter() - start:.1f} s in all; {what}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
