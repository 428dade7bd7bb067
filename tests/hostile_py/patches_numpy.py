# Makes NumPy's comparisons always succeed, then returns garbage.
import numpy as np

np.allclose = lambda *a, **k: True
np.array_equal = lambda *a, **k: True
np.testing.assert_allclose = lambda *a, **k: None

@SOLUTION@


def matmul_naive(mem):
    mem.reads = 2 * mem.A.shape[0] * mem.A.shape[1] * mem.B.shape[1]
    return np.zeros((mem.A.shape[0], mem.B.shape[1]))
