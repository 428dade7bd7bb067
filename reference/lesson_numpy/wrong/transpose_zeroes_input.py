# expect: transpose_tiled
# zeroes its input in place and transposes the zeros: the grader compares with its own copy of A,
# and a call that changes its input fails
import math

import numpy as np

from lesson import CountingMemory


def sectors_touched(addresses):
    """(sectors, efficiency) of one warp-wide load of 4-byte words at these byte addresses."""
    wanted = {int(a) + b for a in addresses for b in range(4)}
    if not wanted:
        return 0, 0.0
    sectors = {byte // 32 for byte in wanted}
    return len(sectors), len(wanted) / (32 * len(sectors))


def bank_conflict_degree(tile_width, access):
    """How many distinct 4-byte words one bank serves for a warp reading float tile[32][tile_width]."""
    where = {"row": lambda t: (0, t), "column": lambda t: (t, 0), "diagonal": lambda t: (t, t),
             "broadcast": lambda t: (0, 0)}[access]
    words = {r * tile_width + c for r, c in map(where, range(32))}
    per_bank = {}
    for w in words:
        per_bank[w % 32] = per_bank.get(w % 32, 0) + 1
    return max(per_bank.values())


def matmul_naive(mem):
    """C = A @ B, each C[i, j] from row i of A and column j of B, loaded through mem."""
    M, K = mem.A.shape
    N = mem.B.shape[1]
    C = np.zeros((M, N))
    for i in range(M):
        for j in range(N):
            row = mem.load("A", slice(i, i + 1), slice(0, K))
            col = mem.load("B", slice(0, K), slice(j, j + 1))
            C[i, j] = (row @ col).item()
    return C


def matmul_tiled(mem, T):
    """C = A @ B in T x T tiles: each output tile loads one T-wide strip of A and B per k-tile."""
    M, K = mem.A.shape
    N = mem.B.shape[1]
    C = np.zeros((M, N))
    for i in range(0, M, T):
        for j in range(0, N, T):
            for k in range(0, K, T):
                a = mem.load("A", slice(i, min(i + T, M)), slice(k, min(k + T, K)))
                b = mem.load("B", slice(k, min(k + T, K)), slice(j, min(j + T, N)))
                C[i:i + T, j:j + T] += a @ b
    return C


def chain_time(n, k, fused, bandwidth=2.0e12, overhead=5.0e-6):
    """Seconds for k elementwise float32 kernels over n elements, one after the other or fused into one."""
    launches = 1 if fused else k
    return launches * (overhead + 2 * 4 * n / bandwidth)


def crossover_n(overhead=5.0e-6, bandwidth=2.0e12, bytes_per_element=8):
    """The smallest n at which one elementwise kernel's memory time reaches its launch overhead."""
    n = max(0, math.ceil(overhead * bandwidth / bytes_per_element))
    while n > 0 and (n - 1) * bytes_per_element / bandwidth >= overhead:
        n -= 1
    while n * bytes_per_element / bandwidth < overhead:
        n += 1
    return n


def transpose_tiled(A, T):
    """Zeroes A in place, then returns the transpose of the zeros with the right counts."""
    rows, cols = A.shape
    A[...] = 0
    ceil = lambda a, b: -(-a // b)
    reads, writes = rows * ceil(cols, T), cols * ceil(rows, T)
    return A.T.copy(), reads + writes, writes
