"""histogram harness: bins[v] += number of elements of data equal to v (256 bins)."""

import numpy as np


def make_inputs(sizes, rng):
    n = sizes["n"]
    data = rng.integers(0, 256, size=n)
    # a third of the elements in one bin: contention that a lost update cannot hide in
    hot = rng.random(n) < 0.33
    data[hot] = 7
    return {"data": data.astype(np.uint8), "bins": np.zeros(256, dtype=np.uint32)}


def reference(inputs, sizes):
    counts = np.bincount(inputs["data"], minlength=256).astype(np.float64)
    return {"bins": inputs["bins"].astype(np.float64) + counts}


def baseline(cp, inputs, sizes):
    """cupy.bincount: the library this kernel is timed against."""
    cp.bincount(inputs["data"], minlength=256)
