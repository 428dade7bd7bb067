"""How many threads NumPy's BLAS may start in a grading's processes.

The float64 references are matrix products, and a BLAS library starts one thread per core in every
process that calls it. A grading runs several such processes side by side (the launches, the hidden
tests, the emulator), and a batch runs several gradings: the threads then outnumber the cores many
times over and spin waiting for each other. On a 16-core H200 machine one level2 grading used about
30 CPU-seconds in 5 s of wall time, and a batch's load average passed 30. A variable the user has
set is always left as it is.

Idle BLAS threads must sleep, too. OpenBLAS's threads spin after every call for about 2^28 cycles
(a tenth of a second) before they sleep, and a grading's process calls BLAS once per case: its
threads spun through the GPU launches in between. In a batch of 100 level2 gradings on one H200
that spinning was a third of the CPU time and kept every core busy (392 CPU-s in 36 s; 267 CPU-s
in 28 s once the threads slept at once, docs/benchmarks.md). WAITS makes them, and OpenMP's, sleep.
"""
from __future__ import annotations

import os

VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
# How idle BLAS threads wait: OpenBLAS's spin for 2^4 cycles (its least) before sleeping; OpenMP's
# (a BLAS built on OpenMP) sleep at once, GNU's and Intel's runtime alike.
WAITS = {"OPENBLAS_THREAD_TIMEOUT": "4", "OMP_WAIT_POLICY": "PASSIVE", "KMP_BLOCKTIME": "0"}
SIDE_BY_SIDE = 3  # a grading's processes that may compute references at once


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask), at least 1."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def limits(threads: int) -> dict[str, str]:
    """The environment that caps BLAS at `threads` (at least 1) and lets its idle threads sleep
    (WAITS), less what the user has set."""
    value = str(max(1, threads))
    wanted = {**{name: value for name in VARIABLES}, **WAITS}
    return {name: setting for name, setting in wanted.items() if name not in os.environ}
