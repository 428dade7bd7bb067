"""Hidden tests of matmul_tiled: tile sizes that do and do not divide M, N, K."""
import numpy as np
import pytest

from lesson import CountingMemory


def ceil_div(a, b):
    return -(-a // b)


@pytest.mark.parametrize("m, k, n, t", [(8, 8, 8, 4), (8, 8, 8, 8), (10, 7, 9, 4), (5, 5, 5, 8), (33, 32, 31, 32),
                                        (12, 13, 14, 5)])
def test_tiled(student, m, k, n, t):
    rng = np.random.default_rng(m + k + n + t)
    A, B = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    mem = CountingMemory(A, B)
    C = np.asarray(student.matmul_tiled(mem, t))
    assert C.shape == (m, n) and np.allclose(C, A @ B), f"C differs from A @ B (M, K, N = {m}, {k}, {n}, T = {t})"
    # Each C tile reads its rows of A across all of K and its columns of B across all of K.
    want = k * (m * ceil_div(n, t) + n * ceil_div(m, t))
    assert mem.reads == want, f"reads: expected {want}, got {mem.reads} (M, K, N = {m}, {k}, {n}, T = {t})"
