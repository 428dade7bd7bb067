# With the audit hook switched off: os.posix_spawn(p), os.spawnv, os.forkpty, pty.fork, multiprocessing and libc's fork/vfork/posix_spawn through ctypes, each to start a marked sleeper.
@UNHOOK@
import os
import sys

@SOLUTION@

SLEEPER = ["/bin/sleep", "60"]
ENV = {"KG_MARKER": "@MARKER@", "PATH": "/usr/bin:/bin"}


def sectors_touched(addresses):
    pid = os.posix_spawn(SLEEPER[0], SLEEPER, ENV)
    raise RuntimeError(f"posix_spawn started {pid}")


def bank_conflict_degree(tile_width, access):
    pid = os.posix_spawnp("sleep", SLEEPER, ENV, setsid=True)
    raise RuntimeError(f"posix_spawnp started {pid}")


def matmul_naive(mem):
    pid = os.spawnve(os.P_NOWAIT, SLEEPER[0], SLEEPER, ENV)
    raise RuntimeError(f"spawnve started {pid}")


def matmul_tiled(mem, T):
    import pty

    pid, fd = pty.fork()
    if pid == 0:
        os.execve(SLEEPER[0], SLEEPER, ENV)
    raise RuntimeError(f"pty.fork started {pid}")


def chain_time(n, k, fused, bandwidth=2.0e12, overhead=5.0e-6):
    import multiprocessing

    p = multiprocessing.get_context("fork").Process(target=os.execve, args=(SLEEPER[0], SLEEPER, ENV))
    p.start()
    raise RuntimeError(f"multiprocessing started {p.pid}")


def crossover_n(overhead=5.0e-6, bandwidth=2.0e12, bytes_per_element=8):
    for name in ("fork", "vfork"):
        pid = getattr(_libc, name)()
        if pid == 0:
            os.execve(SLEEPER[0], SLEEPER, ENV)
        if pid > 0:
            raise RuntimeError(f"libc {name}() started {pid}")
    raise PermissionError(f"libc fork() and vfork() failed: {_errno()}")


def transpose_tiled(A, T):
    pid = _ctypes.c_int()
    argv = (_ctypes.c_char_p * 3)(b"/bin/sleep", b"60", None)
    envp = (_ctypes.c_char_p * 2)(b"KG_MARKER=@MARKER@", None)
    err = _libc.posix_spawn(_ctypes.byref(pid), b"/bin/sleep", None, None, argv, envp)
    if err == 0:
        raise RuntimeError(f"libc posix_spawn started {pid.value}")
    raise PermissionError(f"libc posix_spawn failed: {os.strerror(err)}")
