# With the audit hook on: appends to the installed grader's and NumPy's __init__.py, plants a passing test in the exercise's tests/ folder, writes into /tmp.
@SOLUTION@

PLANTED = "def test_planted():\n    assert True\n"


def sectors_touched(addresses):
    with open("@GRADER@/__init__.py", "a") as f:
        f.write("\n# kg-hostile: the grader is mine\n")
    return 4, 1.0


def bank_conflict_degree(tile_width, access):
    import numpy

    with open(numpy.__file__, "a") as f:
        f.write("\nallclose = lambda *a, **k: True\n")
    return 1


def matmul_naive(mem):
    with open("@ROOT@/exercises/lesson_numpy/tests/test_planted.py", "w") as f:
        f.write(PLANTED)
    return mem.A @ mem.B


def chain_time(n, k, fused, bandwidth=2.0e12, overhead=5.0e-6):
    with open("/tmp/kernel-grader-hostile-written", "w") as f:
        f.write("outside")
    return 0.0
