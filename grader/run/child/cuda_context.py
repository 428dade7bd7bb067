"""Make a GPU child's CUDA context while the child is still importing NumPy, CuPy and the grader.

A CUDA context takes the driver about 0.4 s to make (more while other processes make theirs), and
CuPy makes it only at the child's first module load, after about as long again of imports. Both
are start-up a grading waits for. Here a thread asks the driver for device 0's primary context (the
one CuPy's runtime then uses) through ctypes as the child starts, so the two overlap. Standard
library only: this runs before anything else is imported.

The context is made to wait for the GPU by sleeping, not spinning (SYNC_VARIABLE): a grading's child
synchronises after every upload, launch and read-back, and with several gradings on one GPU each of
those waits lasts while the GPU serves the other processes' contexts in turn. The driver's default
for a process with one context is to spin on a core meanwhile, so a batch's children kept every core
of the machine busy waiting, and the gradings' own CPU work (inputs, references, comparisons)
queued behind them (docs/benchmarks.md).
"""
from __future__ import annotations

import ctypes
import os
import threading

SYNC_VARIABLE = "KERNEL_GRADER_CUDA_SYNC"  # blocking (the default), spin, yield or auto: a diagnostic
# CU_CTX_SCHED_*: how a CPU thread waits for the GPU in a synchronize.
_SCHEDULE = {"auto": 0x0, "spin": 0x1, "yield": 0x2, "blocking": 0x4}

_held: list[ctypes.c_void_p] = []  # the retained context: kept for the child's life, as CuPy's would be


def open_early() -> threading.Thread:
    """Start making the primary context of device 0 in a daemon thread; any failure is left for
    CuPy to meet and report in its own words."""
    thread = threading.Thread(target=_retain, name="cuda-context", daemon=True)
    thread.start()
    return thread


def schedule() -> str:
    """How this process's CUDA context waits for the GPU: $KERNEL_GRADER_CUDA_SYNC, else blocking."""
    wanted = os.environ.get(SYNC_VARIABLE, "").strip().lower()
    return wanted if wanted in _SCHEDULE else "blocking"


def set_schedule(ordinal: int = 0) -> bool:
    """Set the wait policy (schedule()) of device `ordinal`'s primary context before it is made;
    whether the context will wait so. A context already made is left as it is (whoever made it
    early, open_early, set it first)."""
    opened = _open(ordinal)
    return opened is not None and _set_flags(*opened)


def _open(ordinal: int) -> tuple[ctypes.CDLL, ctypes.c_int] | None:
    """The driver library and device `ordinal`, initialised; None without a usable driver (the
    device's own opening then says why, in its own words)."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        device = ctypes.c_int()
        if cuda.cuInit(0) != 0 or cuda.cuDeviceGet(ctypes.byref(device), ordinal) != 0:
            return None
        return cuda, device
    except (OSError, AttributeError):
        return None


def _set_flags(cuda, device: ctypes.c_int) -> bool:
    wanted = _SCHEDULE[schedule()]
    flags, active = ctypes.c_uint(), ctypes.c_int()
    try:
        if cuda.cuDevicePrimaryCtxGetState(device, ctypes.byref(flags), ctypes.byref(active)) != 0:
            return False
        if active.value:
            return flags.value & 0x7 == wanted
        setter = getattr(cuda, "cuDevicePrimaryCtxSetFlags_v2", None) or cuda.cuDevicePrimaryCtxSetFlags
        return setter(device, ctypes.c_uint(wanted)) == 0
    except AttributeError:  # a driver without these calls: its contexts wait as it chooses
        return False


def _retain() -> None:
    opened = _open(0)
    if opened is None:
        return
    cuda, device = opened
    context = ctypes.c_void_p()
    try:
        _set_flags(cuda, device)
        if cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device) == 0:
            _held.append(context)
    except AttributeError:  # a driver without these calls: CuPy makes its context as before
        return
