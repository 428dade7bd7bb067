# Ends its process with status 0 from inside a function (no SystemExit to catch).
import os

@SOLUTION@


def chain_time(n, k, fused, bandwidth=2.0e12, overhead=5.0e-6):
    os._exit(0)
