# With the audit hook on: moves (os.rename, os.replace), links and copies the reference solution and a hidden test into its own folder, then reads them there.
import os
import shutil

@SOLUTION@

SOLUTION = "@ROOT@/reference/lesson_numpy/solution.py"
TEST = "@ROOT@/exercises/lesson_numpy/tests/test_chain_time.py"


def sectors_touched(addresses):
    os.rename(SOLUTION, "stolen.py")
    return open("stolen.py").read(), 0.0


def bank_conflict_degree(tile_width, access):
    os.replace(TEST, "stolen_test.py")
    return open("stolen_test.py").read()


def chain_time(n, k, fused, bandwidth=2.0e12, overhead=5.0e-6):
    os.link(SOLUTION, "linked.py")
    return open("linked.py").read()


def crossover_n(overhead=5.0e-6, bandwidth=2.0e12, bytes_per_element=8):
    shutil.copy(TEST, "copied.py")
    return open("copied.py").read()
