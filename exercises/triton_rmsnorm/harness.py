"""Inputs and the float64 reference of triton_rmsnorm: y = x / sqrt(mean(x^2) + eps) * w per row.

Every third row (r % 3 == 1) is tiny (scale 1e-3, so mean(x^2) is about 1e-6, below eps = 1e-5):
there eps decides the result, and eps added outside the square root gives another one."""
import numpy as np

EPS = 1e-5


def make_inputs(sizes, rng):
    rows, cols = sizes["rows"], sizes["cols"]
    scale = np.where(np.arange(rows) % 3 == 1, 1e-3, 1.0)[:, None]
    x = rng.normal(0.0, 1.0, (rows, cols)) * scale
    w = rng.uniform(0.5, 1.5, cols)
    return {"x": x.astype(np.float32), "w": w.astype(np.float32)}


def reference(inputs, sizes):
    x, w = inputs["x"].astype(np.float64), inputs["w"].astype(np.float64)
    rms = np.sqrt((x * x).mean(axis=1, keepdims=True) + EPS)
    return {"out": x / rms * w[None, :]}


def library(x, w, out, rows, cols, eps):
    """The library baseline the performance check times on a GPU (in a child of staff code only): RMSNorm
    written in torch, as a student without Triton would (several kernels, each reading the row)."""
    import torch

    torch.mul(x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps), w, out=out)
