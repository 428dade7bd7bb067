"""Make a GPU child's CUDA context while the child is still importing NumPy, CuPy and the grader.

A CUDA context takes the driver about 0.4 s to make (more while other processes make theirs), and
CuPy makes it only at the child's first module load, after about as long again of imports. Both
are start-up a grading waits for. Here a thread asks the driver for device 0's primary context (the
one CuPy's runtime then uses) through ctypes as the child starts, so the two overlap. Standard
library only: this runs before anything else is imported.
"""
from __future__ import annotations

import ctypes
import threading

_held: list[ctypes.c_void_p] = []  # the retained context: kept for the child's life, as CuPy's would be


def open_early() -> threading.Thread:
    """Start making the primary context of device 0 in a daemon thread; any failure is left for
    CuPy to meet and report in its own words."""
    thread = threading.Thread(target=_retain, name="cuda-context", daemon=True)
    thread.start()
    return thread


def _retain() -> None:
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        device, context = ctypes.c_int(), ctypes.c_void_p()
        if cuda.cuInit(0) != 0 or cuda.cuDeviceGet(ctypes.byref(device), 0) != 0:
            return
        if cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device) == 0:
            _held.append(context)
    except (OSError, AttributeError):  # no driver here: the device's own opening says so
        return
