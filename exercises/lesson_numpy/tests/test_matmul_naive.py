"""Hidden tests of matmul_naive: rectangular sizes and the 2MNK count."""
import numpy as np
import pytest

from lesson import CountingMemory


@pytest.mark.parametrize("m, k, n", [(1, 1, 1), (3, 5, 7), (6, 2, 9)])
def test_naive(student, m, k, n):
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    A, B = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    mem = CountingMemory(A, B)
    C = np.asarray(student.matmul_naive(mem))
    assert C.shape == (m, n), f"C has shape {C.shape}, expected {(m, n)}"
    assert np.allclose(C, A @ B), f"C differs from A @ B (M, K, N = {m}, {k}, {n})"
    assert mem.reads == 2 * m * n * k, f"reads: expected 2MNK = {2 * m * n * k}, got {mem.reads}"
