# With the audit hook switched off: replaces the worker (execv) by a marked Python that closes nothing, lingers and, were it free, would later rewrite files.
@UNHOOK@
import os
import sys

@SOLUTION@

LATER = ("import time; time.sleep(30); "
         "open('/tmp/kernel-grader-hostile-daemon', 'w').write('still here')")


def crossover_n(overhead=5.0e-6, bandwidth=2.0e12, bytes_per_element=8):
    # The grader's channel closes with the exec (its copies are close-on-exec): the grader sees the end of
    # its pipe while this process lives on.
    os.execve(sys.executable, [sys.executable, "-I", "-S", "-c", LATER, "@MARKER@"], {"KG_MARKER": "@MARKER@"})


def transpose_tiled(A, T):
    # This time the channel stays open (inheritable) and the new process never answers.
    for fd in range(3, 32):
        try:
            os.set_inheritable(fd, True)
        except OSError:
            pass
    os.execve(sys.executable, [sys.executable, "-I", "-S", "-c", LATER, "@MARKER@"], {"KG_MARKER": "@MARKER@"})
