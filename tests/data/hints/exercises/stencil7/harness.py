"""stencil7 harness (a test exercise): inputs and the float64 reference of the radius-3 stencil."""

import numpy as np

W = np.array([0.05, 0.1, 0.2, 0.3, 0.2, 0.1, 0.05])


def make_inputs(sizes, rng):
    return {"x": rng.uniform(-1.0, 1.0, size=sizes["n"]).astype(np.float32)}


def reference(inputs, sizes):
    x = np.pad(inputs["x"].astype(np.float64), 3)
    n = sizes["n"]
    return {"out": sum(W[k] * x[k:k + n] for k in range(7))}
