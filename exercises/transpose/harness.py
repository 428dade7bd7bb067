"""transpose harness: inputs and the reference for out = in.T (in is rows x cols)."""

import numpy as np


def make_inputs(sizes, rng):
    return {
        "in": rng.uniform(-1.0, 1.0, size=(sizes["rows"], sizes["cols"])).astype(np.float32),
    }


def reference(inputs, sizes):
    # A copy in C order, not np.ascontiguousarray: on the GPU the timing runs this on CuPy arrays, which
    # refuse to be converted to NumPy ones.
    return {"out": inputs["in"].astype(np.float64).T.copy()}
