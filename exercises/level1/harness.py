"""level1 harness: inputs and the float64 reference for C = A @ B (N x N, row-major float32)."""

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
    # A float32 dot product of length N accumulates rounding error in proportion to
    # sum_k |a_k b_k|, not to |sum_k a_k b_k| (which cancellation can make tiny).
    a = np.abs(inputs["A"].astype(np.float64))
    b = np.abs(inputs["B"].astype(np.float64))
    return {"C": a @ b}
