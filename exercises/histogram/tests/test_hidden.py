"""Hidden tests for histogram, run against the student's kernel (fixtures: launch, make_inputs)."""
import numpy as np


def test_one_value_everywhere(launch, make_inputs):
    n = 5000
    out = launch({"n": n}, {"data": np.full(n, 200, np.uint8), "bins": np.zeros(256, np.uint32)})
    assert out.error is None, out.error
    bins = out["bins"]
    assert bins[200] == n and bins.sum() == n, f"all {n} elements are 200: got bins[200] = {bins[200]}, total {bins.sum()}"


def test_every_value_once(launch, make_inputs):
    n = 256
    out = launch({"n": n}, {"data": np.arange(256, dtype=np.uint8), "bins": np.zeros(256, np.uint32)})
    assert out.error is None, out.error
    bad = np.flatnonzero(out["bins"] != 1)
    assert bad.size == 0, f"every bin should hold 1; bin {bad[0]} holds {out['bins'][bad[0]]}"


def test_bins_are_accumulated(launch, make_inputs):
    n = 1000
    start = np.arange(256, dtype=np.uint32) * 3
    data = np.random.default_rng(2).integers(0, 256, n).astype(np.uint8)
    out = launch({"n": n}, {"data": data, "bins": start.copy()})
    assert out.error is None, out.error
    want = start + np.bincount(data, minlength=256).astype(np.uint32)
    assert np.array_equal(out["bins"], want), "bins must be added to (atomicAdd), not overwritten"
