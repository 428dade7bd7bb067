"""half_gemv harness: y = A @ x with A (M x K) and x (K) in IEEE half, y in float32."""

import numpy as np


def make_inputs(sizes, rng):
    M, K = sizes["M"], sizes["K"]
    # positive values: the sum grows with K, so a half-precision accumulator (11 bits) loses it
    A = rng.uniform(0.0, 1.0, size=(M, K)).astype(np.float16)
    x = rng.uniform(0.0, 1.0, size=K).astype(np.float16)
    return {"A": A, "x": x}


def reference(inputs, sizes):
    return {"y": inputs["A"].astype(np.float64) @ inputs["x"].astype(np.float64)}


def magnitude(inputs, sizes):
    return {"y": np.abs(inputs["A"].astype(np.float64)) @ np.abs(inputs["x"].astype(np.float64))}


def baseline(cp, inputs, sizes):
    """cuBLAS's half-precision GEMV through CuPy, converted to float32."""
    cp.matmul(inputs["A"], inputs["x"]).astype(cp.float32)
