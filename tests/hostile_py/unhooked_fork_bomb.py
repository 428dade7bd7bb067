# With the audit hook switched off: a fork bomb (bounded: 200 forks per call), by os.fork and by libc's fork, each child becoming a marked sleeper.
@UNHOOK@
import os

@SOLUTION@

SLEEPER = ["/bin/sleep", "60"]
ENV = {"KG_MARKER": "@MARKER@"}


def _bomb(fork):
    started = refused = 0
    for _ in range(200):
        try:
            pid = fork()
        except OSError:
            pid = -1
        if pid == 0:
            os.execve(SLEEPER[0], SLEEPER, ENV)
        if pid > 0:
            started += 1
        else:
            refused += 1
    if started == 0:
        raise PermissionError(f"all {refused} forks were refused")
    return started


def sectors_touched(addresses):
    _bomb(os.fork)
    return 4, 1.0


def chain_time(n, k, fused, bandwidth=2.0e12, overhead=5.0e-6):
    _bomb(_libc.fork)
    return 0.0
