"""How long CUDA context creation takes when many processes do it at once (the driver serialises part
of it across the whole machine, whatever GPU each process uses).

    python bench/context_startup.py 1 4 8 16      # processes started together, each makes one context

For each count it prints the wall time of the slowest process's context creation and the CPU it
used (user and system), so that a batch's "start-up" stage can be told apart from the work it waits on.
"""
from __future__ import annotations

import multiprocessing as mp
import resource
import sys
import time


def _import() -> None:
    import cupy  # noqa: F401  - imported, not initialised: no context yet


def one(_: int) -> tuple[float, float, float]:
    import cupy as cp

    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    cp.zeros(1).sum()  # context, a pool block, one elementwise kernel
    cp.cuda.Device().synchronize()
    t1 = time.perf_counter()
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    return t1 - t0, r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime


def main(counts: list[int]) -> None:
    ctx = mp.get_context("spawn")
    for n in counts:
        with ctx.Pool(n, initializer=_import) as pool:
            pool.map(time.sleep, [0.0] * n)  # the workers exist (and imported nothing CUDA) before timing
            got = pool.map(one, range(n))
        walls = sorted(g[0] for g in got)
        print(f"{n:>3} at once: context in {walls[len(walls) // 2]:.3f} s median, {walls[-1]:.3f} s slowest; "
              f"per process {sum(g[1] for g in got) / n:.3f} s user, {sum(g[2] for g in got) / n:.3f} s system")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1, 4, 8, 16])
