"""Inputs and the float64 reference of triton_matmul: C = A @ B.

A = u * 2^17 and B = v * 2^-17 with u, v uniform in [-1, 1]: powers of two, so in fp32 (and TF32,
which keeps fp32's exponent) the scaling is exact and C is the product of the unscaled u @ v, of
size about sqrt(K) / 3. fp16 holds neither: its largest value is 65504 (about half of A's entries
become inf) and its smallest normal 6.1e-5 (B's entries, about 7.6e-6, keep only a few bits), so a
kernel that casts its tiles to fp16 (to feed an fp16 tl.dot or an fp16 accumulator) is wrong."""
import numpy as np

SCALE = 2.0 ** 17


def make_inputs(sizes, rng):
    M, N, K = sizes["M"], sizes["N"], sizes["K"]
    a = rng.uniform(-1.0, 1.0, (M, K)) * SCALE
    b = rng.uniform(-1.0, 1.0, (K, N)) / SCALE
    return {"a": a.astype(np.float32), "b": b.astype(np.float32)}


def reference(inputs, sizes):
    return {"c": inputs["a"].astype(np.float64) @ inputs["b"].astype(np.float64)}


def library(a, b, c, M, N, K):
    """The library baseline the performance check times on a GPU (in a child of staff code only):
    cuBLAS through torch.matmul, TF32 allowed, as the exercise's precision allows tl.dot."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = True
    torch.matmul(a, b, out=c)
