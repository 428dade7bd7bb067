"""How many threads NumPy's BLAS may start in a grading's processes.

The float64 references are matrix products, and a BLAS library starts one thread per core in every
process that calls it. A grading runs several such processes side by side (the launches, the hidden
tests, the emulator), and a batch runs several gradings: the threads then outnumber the cores many
times over and spin waiting for each other. On a 16-core H200 machine one level2 grading used about
30 CPU-seconds in 5 s of wall time, and a batch's load average passed 30. A variable the user has
set is always left as it is.
"""
from __future__ import annotations

import os

VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
SIDE_BY_SIDE = 3  # a grading's processes that may compute references at once


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask), at least 1."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def limits(threads: int) -> dict[str, str]:
    """The environment that caps BLAS at `threads` (at least 1), less what the user has set."""
    value = str(max(1, threads))
    return {name: value for name in VARIABLES if name not in os.environ}
