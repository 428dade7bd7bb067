"""Inputs and the float64 reference of triton_softmax.

Rows are random logits, and some rows are shifted: every fourth row (r % 4 == 1) by +90, where
exp() of an fp32 overflows unless the row's max is subtracted first, and every fourth row
(r % 4 == 2) by -50, all negative, where a max taken over masked lanes filled with 0 is wrong."""
import numpy as np


def make_inputs(sizes, rng):
    rows, cols = sizes["rows"], sizes["cols"]
    x = rng.normal(0.0, 3.0, (rows, cols))
    shift = np.where(np.arange(rows) % 4 == 1, 90.0, np.where(np.arange(rows) % 4 == 2, -50.0, 0.0))
    return {"x": (x + shift[:, None]).astype(np.float32)}


def reference(inputs, sizes):
    x = inputs["x"].astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"out": e / e.sum(axis=1, keepdims=True)}


def library(x, out, rows, cols):
    """The library baseline the performance check times on a GPU (in a child of staff code only)."""
    import torch

    torch.softmax(x, dim=-1, out=out)
