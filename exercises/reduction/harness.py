"""reduction harness: out = sum(x), added to out (which need not start at zero)."""

import numpy as np


def make_inputs(sizes, rng):
    n = sizes["n"]
    x = rng.uniform(-1.0, 1.0, size=n).astype(np.float32)
    # out need not start at zero (the skeleton says so): a kernel that stores the sum instead of
    # adding it is wrong at every size, not only in a hidden test
    out = rng.uniform(-4.0, 4.0, size=1).astype(np.float32)
    return {"x": x, "out": out}


# Array operations only, no conversion to a NumPy array (np.array([...])): on the GPU the timing runs
# these on CuPy arrays.
def reference(inputs, sizes):
    x = inputs["x"].astype(np.float64)
    return {"out": inputs["out"].astype(np.float64) + x.sum()}


def magnitude(inputs, sizes):
    # the rounding error of a float32 sum scales with sum |x|, not with |sum| (which may cancel)
    return {"out": np.abs(inputs["x"].astype(np.float64)).sum() + np.abs(inputs["out"].astype(np.float64))}


def baseline(cp, inputs, sizes):
    """CuPy's own reduction (CUB), the library this kernel is measured against."""
    cp.sum(inputs["x"])
