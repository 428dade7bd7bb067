"""Hidden tests of chain_time: bytes and launches both count, fused or not."""
import math

import pytest


@pytest.mark.parametrize("n, k, fused, bw, ov", [(1, 1, False, 2e12, 5e-6), (10**8, 5, False, 3.35e12, 4e-6),
                                                 (10**8, 5, True, 3.35e12, 4e-6), (12345, 7, True, 1e9, 1e-3),
                                                 (12345, 7, False, 1e9, 1e-3)])
def test_chain_time(student, n, k, fused, bw, ov):
    kernels = 1 if fused else k
    want = kernels * ov + kernels * n * 8 / bw
    got = student.chain_time(n, k, fused, bw, ov)
    assert math.isclose(float(got), want, rel_tol=1e-9), f"n = {n}, k = {k}, fused = {fused}: expected {want:.6g} s, got {got}"


def test_fusion_pays_off_by_k(student):
    slow, fast = student.chain_time(10**9, 4, False), student.chain_time(10**9, 4, True)
    assert math.isclose(slow / fast, 4, rel_tol=1e-9), f"unfused / fused should be 4 for k = 4, got {slow / fast:.4f}"
