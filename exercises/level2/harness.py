"""level2 harness: inputs and the float64 reference for C = A @ B (N x N, row-major float32)."""

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


def baseline(cp, inputs, sizes):
    # cuBLAS SGEMM through CuPy on the same float32 device arrays: the yardstick the performance
    # check reports beside the reference solution (plain fp32; TF32 stays off unless CUPY_TF32=1).
    cp.matmul(inputs["A"], inputs["B"])
