"""reduction harness: out = sum(x), accumulated into out (zero on entry)."""

import numpy as np


def make_inputs(sizes, rng):
    n = sizes["n"]
    x = rng.uniform(-1.0, 1.0, size=n).astype(np.float32)
    return {"x": x, "out": np.zeros(1, dtype=np.float32)}


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
