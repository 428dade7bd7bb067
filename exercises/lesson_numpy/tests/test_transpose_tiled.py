"""Hidden tests of transpose_tiled: sizes that are not multiples of the tile, tiles wider than the matrix."""
import numpy as np
import pytest


def ceil_div(a, b):
    return -(-a // b)


@pytest.mark.parametrize("rows, cols, t", [(8, 8, 4), (7, 10, 4), (33, 31, 32), (5, 3, 8), (64, 1, 32), (1, 1, 1)])
def test_transpose(student, rows, cols, t):
    A = np.arange(rows * cols, dtype=np.float64).reshape(rows, cols) * 0.5
    B, contiguous, strided = student.transpose_tiled(A, t)
    assert np.array_equal(np.asarray(B), A.T), f"B is not A.T ({rows} x {cols}, T = {t})"
    reads = rows * ceil_div(cols, t)     # tile rows read from A
    writes = cols * ceil_div(rows, t)    # rows of B written, each from a column of the staging tile
    assert (int(contiguous), int(strided)) == (reads + writes, writes), (
        f"{rows} x {cols}, T = {t}: expected contiguous = {reads + writes}, strided = {writes}; "
        f"got {contiguous}, {strided}")

