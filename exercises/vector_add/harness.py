"""vector_add harness: inputs and the float64 reference for out = x + y."""

import numpy as np


def make_inputs(sizes, rng):
    n = sizes["n"]
    return {
        "x": rng.uniform(-1.0, 1.0, size=n).astype(np.float32),
        "y": rng.uniform(-1.0, 1.0, size=n).astype(np.float32),
    }


def reference(inputs, sizes):
    return {"out": inputs["x"].astype(np.float64) + inputs["y"].astype(np.float64)}
