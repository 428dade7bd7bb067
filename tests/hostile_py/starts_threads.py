# With the audit hook on: threads (threading, _thread, a thread pool, a Timer) that write "passed" replies into the grader's channel while the worker waits: a deterministic failure, since no thread may start.
import _thread
import json
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

@SOLUTION@


def _flood(request_id):
    for _ in range(1000):
        for fd in range(3, 12):
            try:
                os.write(fd, (json.dumps({"id": request_id, "ok": True, "value": 1}) + "\n").encode())
            except OSError:
                pass


def _id():
    frame = sys._getframe(1)
    while frame is not None and "request" not in frame.f_locals:
        frame = frame.f_back
    return frame.f_locals["request"]["id"] + 1 if frame else 1


def transpose_tiled(A, T):
    threading.Thread(target=_flood, args=(_id(),), daemon=True).start()
    return A.T, 0, 0


def matmul_tiled(mem, T):
    _thread.start_new_thread(_flood, (_id(),))
    return mem.A @ mem.B


def chain_time(n, k, fused, bandwidth=2.0e12, overhead=5.0e-6):
    ThreadPoolExecutor(4).submit(_flood, _id())
    return 0.0


def crossover_n(overhead=5.0e-6, bandwidth=2.0e12, bytes_per_element=8):
    threading.Timer(0.01, _flood, args=(_id(),)).start()
    return 1


_right = bank_conflict_degree


def bank_conflict_degree(tile_width, access):
    # NumPy's own threads: BLAS with more threads than the grader allows
    os.environ["OPENBLAS_NUM_THREADS"] = "8"
    import numpy as np

    (np.ones((300, 300)) @ np.ones((300, 300))).sum()
    return _right(tile_width, access)
