# Writes its own "passed" replies into the grader's channel (a copy of fd 1 the worker keeps).
import json
import os

@SOLUTION@


def transpose_tiled(A, T):
    for fd in range(3, 20):
        try:
            os.write(fd, (json.dumps({"id": 1, "ok": True, "value": 1}) + "\n").encode())
            os.write(fd, b"not json at all\n")
        except OSError:
            pass
    return A.T, 0, 0
