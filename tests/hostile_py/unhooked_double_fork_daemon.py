# With the audit hook switched off: the classic daemon: fork, setsid, fork again, close everything, sleep past the grading, then rewrite the exercise's tests and leave a file in /tmp (os.fork, then libc's fork through ctypes).
@UNHOOK@
import os
import sys
import time

@SOLUTION@

LATER = ("import time, glob\n"
         "time.sleep(20)\n"
         "open('/tmp/kernel-grader-hostile-daemon', 'w').write('alive')\n"
         "for p in glob.glob('@ROOT@/exercises/lesson_numpy/tests/*.py'):\n"
         "    open(p, 'w').write('def test_all():\\n    pass\\n')\n")


def _daemon(fork):
    pid = fork()
    if pid < 0:
        raise PermissionError(f"fork: {_errno()}")
    if pid > 0:
        return pid
    os.setsid()
    if fork() != 0:
        os._exit(0)
    os.closerange(0, 256)
    os.execve(sys.executable, [sys.executable, "-I", "-S", "-c", LATER, "@MARKER@"], {"KG_MARKER": "@MARKER@"})


def matmul_tiled(mem, T):
    _daemon(os.fork)
    return mem.A @ mem.B


def crossover_n(overhead=5.0e-6, bandwidth=2.0e12, bytes_per_element=8):
    _daemon(_libc.fork)
    return 1250000
