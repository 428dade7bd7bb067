"""rmsnorm harness: inputs and the float64 reference for
out[r, j] = w[j] * x[r, j] / sqrt(mean_j(x[r, :]^2) + eps)."""

import numpy as np

# spec.toml passes eps = 1 / 100000 to the kernel as a float32.
EPS = 1e-5


def _eps(inputs):
    return float(np.float32(inputs.get("eps", EPS)))


def make_inputs(sizes, rng):
    rows, h = sizes["rows"], sizes["h"]
    x = rng.standard_normal(size=(rows, h))
    # Rows whose mean square is near or below eps: they make a missing or misplaced eps visible.
    if rows > 1:
        x[1] *= 1e-3          # mean square ~ 1e-6, ten times smaller than eps
    if rows > 2:
        x[-1] = 0.0           # mean square 0: without eps the output is 0 / 0
    w = rng.normal(loc=1.0, scale=0.25, size=h)
    return {"x": x.astype(np.float32), "w": w.astype(np.float32)}


def reference(inputs, sizes):
    x = inputs["x"].astype(np.float64)
    w = inputs["w"].astype(np.float64)
    ms = np.mean(x * x, axis=1, keepdims=True)
    return {"out": w[None, :] * x / np.sqrt(ms + _eps(inputs))}
