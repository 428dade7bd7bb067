"""swiglu harness: inputs and the float64 reference for out = silu(a) * b, silu(v) = v / (1 + exp(-v))."""

import numpy as np


def make_inputs(sizes, rng):
    n = sizes["n"]
    a = rng.normal(loc=0.0, scale=2.0, size=n)
    b = rng.normal(loc=0.0, scale=1.0, size=n)
    # A few extreme gates: exp(-a) overflows float32 for a < -88, exp(a) for a > 88.
    # A correct formula gives ~0 and ~a there, never NaN.
    for pos, val in ((n // 2, 100.0), (n // 3, -100.0), (n - 1, 30.0), (n // 5, -30.0)):
        a[pos] = val
    return {"a": a.astype(np.float32), "b": b.astype(np.float32)}


def reference(inputs, sizes):
    a = inputs["a"].astype(np.float64)
    b = inputs["b"].astype(np.float64)
    # exp(-a) overflows float64 only for a < -709; the inputs stay far from that.
    return {"out": a / (1.0 + np.exp(-a)) * b}
