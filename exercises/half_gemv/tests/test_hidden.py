"""Hidden tests for half_gemv, run against the student's kernel (fixtures: launch, make_inputs)."""
import numpy as np


def test_ones_give_k_exactly(launch, make_inputs):
    # 4097 is above 2048, where half precision cannot count by one any more: only a float sum is exact
    M, K = 9, 4097
    out = launch({"M": M, "K": K}, {"A": np.ones((M, K), np.float16), "x": np.ones(K, np.float16)})
    assert out.error is None, out.error
    assert np.all(out["y"] == K), f"all-ones rows should sum to {K} exactly, got {out['y'][:3]}: accumulate in float"


def test_identity_rows_pick_elements_of_x(launch, make_inputs):
    M, K = 16, 16
    x = (np.arange(K) - 7.5).astype(np.float16)
    out = launch({"M": M, "K": K}, {"A": np.eye(M, K, dtype=np.float16), "x": x})
    assert out.error is None, out.error
    assert np.array_equal(out["y"], x.astype(np.float32)), "I @ x should be x exactly"


def test_odd_k_every_row(launch, make_inputs):
    M, K = 10, 33
    A = np.tile((np.arange(K) % 3).astype(np.float16), (M, 1))
    x = np.ones(K, np.float16)
    out = launch({"M": M, "K": K}, {"A": A, "x": x})
    assert out.error is None, out.error
    want = float((np.arange(K) % 3).sum())
    assert np.all(out["y"] == want), f"every row should sum to {want} (K = 33 is odd), got {out['y']}"
