# Raises the recursion limit and recurses without end (a crash of the interpreter, not an exception).
import sys

@SOLUTION@


def chain_time(n, k, fused, bandwidth=2.0e12, overhead=5.0e-6):
    sys.setrecursionlimit(10**7)

    def down(i):
        return down(i + 1) + 1

    return down(0)
