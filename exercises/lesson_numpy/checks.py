"""Public checks: what the notebook's check cells run, and what the grader runs too.

CHECKS maps each function to (label, make_args, verify): make_args() builds fresh arguments,
verify(result, args) raises AssertionError with what is wrong. run_checks(name, fn) runs them here.
"""
import math

import numpy as np

from lesson import CountingMemory


def _equal(got, want, what):
    assert got == want, f"{what}: expected {want!r}, got {got!r}"


def _close(got, want, what, rel=1e-9):
    assert isinstance(got, (int, float, np.integer, np.floating)), f"{what}: expected a number, got {type(got).__name__}"
    assert math.isclose(float(got), want, rel_tol=rel, abs_tol=1e-15), f"{what}: expected {want!r}, got {got!r}"


def _pair(got, sectors, efficiency):
    assert isinstance(got, (tuple, list)) and len(got) == 2, f"expected (sectors, efficiency), got {got!r}"
    _equal(int(got[0]), sectors, "sectors")
    _close(got[1], efficiency, "efficiency")


def _matmul(reads):
    def verify(got, args):
        mem = args[0]
        want = mem.A @ mem.B
        got = np.asarray(got, dtype=np.float64)
        assert got.shape == want.shape, f"C has shape {got.shape}, expected {want.shape}"
        assert np.allclose(got, want), "C differs from A @ B"
        _equal(int(mem.reads), reads, "mem.reads")
    return verify


def _memory(m, k, n, seed=0):
    rng = np.random.default_rng(seed)
    return CountingMemory(rng.standard_normal((m, k)), rng.standard_normal((k, n)))


def _transpose(contiguous, strided):
    def verify(got, args):
        assert isinstance(got, (tuple, list)) and len(got) == 3, f"expected (B, contiguous, strided), got {type(got).__name__}"
        B = np.asarray(got[0])
        assert B.shape == args[0].T.shape and np.array_equal(B, args[0].T), "B is not A.T"
        _equal(int(got[1]), contiguous, "contiguous")
        _equal(int(got[2]), strided, "strided")
    return verify


CHECKS = {
    "sectors_touched": [
        ("32 consecutive words", lambda: (list(range(0, 128, 4)),), lambda got, a: _pair(got, 4, 1.0)),
        ("every other word", lambda: (list(range(0, 256, 8)),), lambda got, a: _pair(got, 8, 0.5)),
    ],
    "bank_conflict_degree": [
        ("row of tile[32][32]", lambda: (32, "row"), lambda got, a: _equal(got, 1, "degree")),
        ("column of tile[32][32]", lambda: (32, "column"), lambda got, a: _equal(got, 32, "degree")),
        ("column of tile[32][33]", lambda: (33, "column"), lambda got, a: _equal(got, 1, "degree")),
    ],
    "matmul_naive": [
        ("4 x 4 times 4 x 4", lambda: (_memory(4, 4, 4),), _matmul(2 * 4 * 4 * 4)),
    ],
    "matmul_tiled": [
        ("8 x 8 times 8 x 8, T = 4", lambda: (_memory(8, 8, 8), 4), _matmul(2 * 8 * 8 * 8 // 4)),
    ],
    "chain_time": [
        ("unfused, k = 3", lambda: (1_000_000, 3, False), lambda got, a: _close(got, 3 * 5e-6 + 3 * 8e6 / 2e12, "seconds")),
        ("fused, k = 3", lambda: (1_000_000, 3, True), lambda got, a: _close(got, 5e-6 + 8e6 / 2e12, "seconds")),
    ],
    "crossover_n": [
        ("the defaults", lambda: (), lambda got, a: _equal(int(got), 1_250_000, "n")),
    ],
    "transpose_tiled": [
        ("8 x 8, T = 4", lambda: (np.arange(64.0).reshape(8, 8), 4), _transpose(32, 16)),
    ],
}


def run_checks(name, fn):
    """Run the public checks of one function; print each verdict and raise if any failed."""
    failed = 0
    for label, make, verify in CHECKS[name]:
        args = make()
        try:
            verify(fn(*args), args)
        except Exception as exc:  # noqa: BLE001 - shown to the student
            failed += 1
            print(f"FAIL  {name}: {label}: {type(exc).__name__}: {exc}")
        else:
            print(f"ok    {name}: {label}")
    if failed:
        raise AssertionError(f"{failed} check(s) of {name} failed")
    print(f"all {len(CHECKS[name])} checks of {name} passed (the final grading runs more)")
