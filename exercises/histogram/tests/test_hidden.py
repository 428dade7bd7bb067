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
    counts = np.bincount(data, minlength=256).astype(np.uint32)
    want = start + counts
    got = out["bins"]
    bad = np.flatnonzero(got != want)
    if bad.size == 0:
        return
    b = int(bad[0])
    # Advice only where the values show the cause: every bin holding its count alone is an overwrite.
    why = ("the bins hold this launch's counts alone: add to the bins (atomicAdd), do not overwrite them"
           if np.array_equal(got[counts > 0], counts[counts > 0]) else
           f"{bad.size} bins are wrong")
    assert False, f"bin {b} started at {start[b]} and {data.tolist().count(b)} values fall in it: expected {want[b]}, got {got[b]}; {why}"
