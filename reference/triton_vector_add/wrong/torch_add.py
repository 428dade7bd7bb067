# expect: correctness
import torch


def add(x, y, out, n):
    torch.add(x, y, out=out)
