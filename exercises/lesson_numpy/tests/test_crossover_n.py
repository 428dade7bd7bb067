"""Hidden tests of crossover_n: the smallest n that is memory-bound, for ratios that are not integers."""
import math

import pytest


@pytest.mark.parametrize("ov, bw, b", [(3e-6, 1e12, 7), (4e-6, 3.35e12, 12), (1e-5, 9e11, 7), (2.5e-6, 2e12, 3)])
def test_crossover(student, ov, bw, b):
    ratio = ov * bw / b
    assert 0.01 < ratio % 1 < 0.99  # far from an integer: rounding in any order gives the same answer
    want = math.ceil(ratio)
    got = int(student.crossover_n(ov, bw, b))
    assert got == want, f"overhead {ov}, bandwidth {bw}, {b} bytes per element: expected {want}, got {got}"


def test_exact_ratio_is_already_memory_bound(student):
    assert int(student.crossover_n(5e-6, 2e12, 8)) == 1_250_000
