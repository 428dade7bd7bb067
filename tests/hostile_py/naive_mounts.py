# With the audit hook on: ctypes for mount(2) (imported, and found through gc), os.chroot, and a look at /proc/self/mountinfo to see what to unmount.
import gc
import os

@SOLUTION@


def sectors_touched(addresses):
    import ctypes

    libc = ctypes.CDLL(None)
    libc.umount2(b"/usr", 2)
    return 4, 1.0


def bank_conflict_degree(tile_width, access):
    ctypes = next(o for o in gc.get_objects() if type(o).__name__ == "module" and o.__name__ == "ctypes")
    libc = ctypes.CDLL(None)  # NumPy's ctypes, never imported by the submission
    libc.mount(b"none", b"/box", b"tmpfs", 0, None)
    return 1


def matmul_tiled(mem, T):
    os.chroot(".")
    return mem.A @ mem.B


def transpose_tiled(A, T):
    return open("/proc/self/mountinfo").read(), 0, 0
