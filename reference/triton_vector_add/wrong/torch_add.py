# expect: correctness
# why: the launcher computes with torch and launches no Triton kernel.
import torch


def add(x, y, out, n):
    torch.add(x, y, out=out)
