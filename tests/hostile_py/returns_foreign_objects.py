# No escape needed: returns objects that claim to equal anything (a class of its own, an int and a float subclass), a NumPy object array, an ndarray subclass that lies in comparisons, a dict and a generator.
import numpy as np

@SOLUTION@


class Anything:
    def __eq__(self, other):
        return True

    def __int__(self):
        return 1250000

    def __float__(self):
        return 0.0


class LyingArray(np.ndarray):
    def __eq__(self, other):
        return np.ones(np.shape(other), dtype=bool)

    def __array_function__(self, func, types, args, kwargs):
        return True


class LyingFloat(float):
    def __eq__(self, other):
        return True


def bank_conflict_degree(tile_width, access):
    return Anything()


def transpose_tiled(A, T):
    return np.array([[object()] * A.shape[0]] * A.shape[1], dtype=object), 32, 16


def matmul_naive(mem):
    return np.zeros((mem.A.shape[0], mem.B.shape[1])).view(LyingArray)


def chain_time(n, k, fused, bandwidth=2.0e12, overhead=5.0e-6):
    return LyingFloat(-1.0)


def crossover_n(overhead=5.0e-6, bandwidth=2.0e12, bytes_per_element=8):
    return (n for n in [1250000])


def sectors_touched(addresses):
    return {"sectors": 4, "efficiency": 1.0}
