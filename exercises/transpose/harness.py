"""transpose harness: inputs and the reference for out = in.T (in is rows x cols)."""

import numpy as np


def make_inputs(sizes, rng):
    return {
        "in": rng.uniform(-1.0, 1.0, size=(sizes["rows"], sizes["cols"])).astype(np.float32),
    }


def reference(inputs, sizes):
    return {"out": np.ascontiguousarray(inputs["in"].astype(np.float64).T)}
