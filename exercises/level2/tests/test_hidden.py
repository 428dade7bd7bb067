"""Hidden tests for level2, run by the grader against the student's kernel (fixtures: launch, make_inputs)."""
import numpy as np


def test_identity_times_b_is_b_exactly(launch, make_inputs):
    # 1 * b + 0 * x is exact in float32 whatever the order of the sum: any difference is a bug.
    sizes = {"N": 45}
    inputs = make_inputs(sizes)
    inputs["A"] = np.eye(45, dtype=np.float32)
    out = launch(sizes, inputs)
    assert out.error is None, out.error
    assert np.array_equal(out["C"].reshape(45, 45), inputs["B"]), "I @ B should equal B exactly (N = 45)"


def test_zero_matrix_gives_zero(launch, make_inputs):
    sizes = {"N": 40}
    inputs = make_inputs(sizes)
    inputs["B"] = np.zeros((40, 40), dtype=np.float32)
    out = launch(sizes, inputs)
    assert out.error is None, out.error
    assert not np.isnan(out["C"]).any(), "some elements of C were never written (N = 40)"
    assert np.all(out["C"] == 0), "A @ 0 should be 0 (N = 40)"


def test_rectangular_block_of_ones(launch, make_inputs):
    # Ones make every output equal N: a tile summed twice or skipped shows as a wrong count.
    sizes = {"N": 70}
    ones = {"A": np.ones((70, 70), np.float32), "B": np.ones((70, 70), np.float32)}
    out = launch(sizes, ones)
    assert out.error is None, out.error
    c = out["C"].reshape(70, 70)
    bad = np.argwhere(c != 70)
    assert bad.size == 0, f"C[{bad[0][0]}, {bad[0][1]}] = {c[tuple(bad[0])]}, expected 70 (all-ones inputs, N = 70)"
