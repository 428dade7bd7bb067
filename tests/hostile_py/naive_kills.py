# With the audit hook on: kills the grader (its parent), everything it may signal (kill -1), its process group, PID 1, and itself with a signal the grader might misread.
import os
import signal

@SOLUTION@


def sectors_touched(addresses):
    os.kill(os.getppid(), signal.SIGKILL)
    return 4, 1.0


def bank_conflict_degree(tile_width, access):
    os.kill(-1, signal.SIGKILL)
    return 1


def matmul_tiled(mem, T):
    os.killpg(os.getpgid(0), signal.SIGKILL)
    return mem.A @ mem.B


def chain_time(n, k, fused, bandwidth=2.0e12, overhead=5.0e-6):
    os.kill(1, signal.SIGTERM)
    return 0.0


def crossover_n(overhead=5.0e-6, bandwidth=2.0e12, bytes_per_element=8):
    signal.pthread_kill(signal.pthread_self() if hasattr(signal, "pthread_self") else 0, signal.SIGUSR1)
    return 1250000
