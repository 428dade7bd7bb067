"""level3 harness: inputs, the float64 reference for C = A @ B, and cuBLAS as the speed baseline."""

import numpy as np


def make_inputs(sizes, rng):
    n = sizes["N"]
    return {
        "A": rng.uniform(-1.0, 1.0, size=(n, n)).astype(np.float32),
        "B": rng.uniform(-1.0, 1.0, size=(n, n)).astype(np.float32),
    }


def reference(inputs, sizes):
    a = inputs["A"].astype(np.float64)
    b = inputs["B"].astype(np.float64)
    return {"C": a @ b}


def magnitude(inputs, sizes):
    # Rounding error of a float32 dot product scales with sum_k |a_k b_k|.
    a = np.abs(inputs["A"].astype(np.float64))
    b = np.abs(inputs["B"].astype(np.float64))
    return {"C": a @ b}


def baseline(cp, inputs, sizes):
    # cuBLAS SGEMM through CuPy, on the same float32 device arrays (TF32 stays off unless
    # CUPY_TF32=1 is set, so this is a plain fp32 product).
    cp.matmul(inputs["A"], inputs["B"])
