import math

import numpy as np

from lesson import CountingMemory


def sectors_touched(addresses):
    """(sectors, efficiency) of one warp-wide load of 4-byte words at these byte addresses."""
    # TODO: the set of 32-byte sectors that hold any byte of any thread's 4 bytes,
    # and the distinct bytes asked for over the bytes those sectors move.
    raise NotImplementedError("TODO: sectors_touched")


def bank_conflict_degree(tile_width, access):
    """How many distinct 4-byte words one bank serves for a warp reading float tile[32][tile_width]."""
    # TODO: the word each thread t reads ("row": tile[0][t], "column": tile[t][0],
    # "diagonal": tile[t][t], "broadcast": tile[0][0]), its bank, and the busiest bank.
    raise NotImplementedError("TODO: bank_conflict_degree")


def matmul_naive(mem):
    """C = A @ B, each C[i, j] from row i of A and column j of B, loaded through mem."""
    # TODO
    raise NotImplementedError("TODO: matmul_naive")


def matmul_tiled(mem, T):
    """C = A @ B in T x T tiles: each output tile loads one T-wide strip of A and B per k-tile."""
    # TODO
    raise NotImplementedError("TODO: matmul_tiled")


def chain_time(n, k, fused, bandwidth=2.0e12, overhead=5.0e-6):
    """Seconds for k elementwise float32 kernels over n elements, one after the other or fused into one."""
    # TODO
    raise NotImplementedError("TODO: chain_time")


def crossover_n(overhead=5.0e-6, bandwidth=2.0e12, bytes_per_element=8):
    """The smallest n at which one elementwise kernel's memory time reaches its launch overhead."""
    # TODO
    raise NotImplementedError("TODO: crossover_n")


def transpose_tiled(A, T):
    """(A.T, contiguous, strided): a transpose through a T x T staging tile, counting its row accesses."""
    # TODO
    raise NotImplementedError("TODO: transpose_tiled")
