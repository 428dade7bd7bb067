# With the audit hook on: every way the os module offers to start a program (system, posix_spawn, spawnv, execv, forkpty, popen).
import os
import sys

@SOLUTION@


def sectors_touched(addresses):
    os.system("touch /tmp/kernel-grader-hostile-shell")
    return 4, 1.0


def bank_conflict_degree(tile_width, access):
    os.posix_spawn("/bin/sh", ["sh", "-c", "touch /tmp/kernel-grader-hostile-shell", "@MARKER@"], os.environ)
    return 1


def matmul_naive(mem):
    os.spawnv(os.P_NOWAIT, "/bin/sleep", ["sleep", "60", "@MARKER@"])
    return mem.A @ mem.B


def matmul_tiled(mem, T):
    os.execv("/bin/sh", ["sh", "-c", "touch /tmp/kernel-grader-hostile-shell", "@MARKER@"])


def chain_time(n, k, fused, bandwidth=2.0e12, overhead=5.0e-6):
    pid, fd = os.forkpty()
    if pid == 0:
        os.execv("/bin/sleep", ["sleep", "60", "@MARKER@"])
    return 0.0


def crossover_n(overhead=5.0e-6, bandwidth=2.0e12, bytes_per_element=8):
    return int(os.popen("echo 1250000").read())
