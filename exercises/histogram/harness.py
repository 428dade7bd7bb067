"""histogram harness: bins[v] += number of elements of data equal to v (256 bins; bins need not start at zero)."""

import numpy as np


def make_inputs(sizes, rng):
    n = sizes["n"]
    data = rng.integers(0, 256, size=n)
    # a third of the elements in one bin: contention that a lost update cannot hide in
    hot = rng.random(n) < 0.33
    data[hot] = 7
    # bins may hold counts from an earlier call (the skeleton says so): a kernel that stores its
    # counts instead of adding them is wrong at every size, not only in a hidden test
    bins = rng.integers(0, 1000, size=256).astype(np.uint32)
    return {"data": data.astype(np.uint8), "bins": bins}


def reference(inputs, sizes):
    counts = np.bincount(inputs["data"], minlength=256).astype(np.float64)
    return {"bins": inputs["bins"].astype(np.float64) + counts}


def baseline(cp, inputs, sizes):
    """cupy.bincount: the library this kernel is timed against."""
    cp.bincount(inputs["data"], minlength=256)
