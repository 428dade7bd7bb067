# With the audit hook switched off: a thread from libc's pthread_create (ctypes) whose body writes a forged reply with the next id, and a raw clone(CLONE_THREAD) through syscall().
@UNHOOK@
import json
import os
import sys

@SOLUTION@

_keep = []


def _id():
    frame = sys._getframe(1)
    while frame is not None and "request" not in frame.f_locals:
        frame = frame.f_back
    return frame.f_locals["request"]["id"] if frame else 1


def transpose_tiled(A, T):
    line = (json.dumps({"id": _id() + 1, "ok": True, "value": 1}) + "\n").encode()

    @_ctypes.CFUNCTYPE(_ctypes.c_void_p, _ctypes.c_void_p)
    def body(_):
        for fd in range(3, 12):
            try:
                os.write(fd, line)
            except OSError:
                pass
        return None

    _keep.append(body)
    thread = _ctypes.c_ulong()
    err = _libc.pthread_create(_ctypes.byref(thread), None, body, None)
    if err:
        raise RuntimeError(f"pthread_create: {os.strerror(err)}")
    return A.T, 0, 0


def chain_time(n, k, fused, bandwidth=2.0e12, overhead=5.0e-6):
    CLONE_VM, CLONE_FS, CLONE_FILES, CLONE_SIGHAND, CLONE_THREAD = 0x100, 0x200, 0x400, 0x800, 0x10000
    stack = _ctypes.create_string_buffer(1 << 16)
    _keep.append(stack)
    top = _ctypes.addressof(stack) + (1 << 16) - 64
    result = _libc.syscall(56, CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD, _ctypes.c_void_p(top), 0, 0, 0)
    if result < 0:
        raise RuntimeError(f"clone(CLONE_THREAD): {_errno()}")
    return 0.0
