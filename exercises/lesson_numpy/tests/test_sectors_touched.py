"""Hidden tests of sectors_touched: misaligned starts, straddling words, broadcasts, partial warps."""
import numpy as np
import pytest


def expected(addresses):
    touched = np.zeros(1 << 16, dtype=bool)
    sectors = set()
    for a in addresses:
        touched[a:a + 4] = True
        sectors.update({a // 32, (a + 3) // 32})
    return len(sectors), int(touched.sum()) / (32 * len(sectors))


@pytest.mark.parametrize("addresses", [
    [4 + 4 * t for t in range(32)],          # misaligned by one word: 5 sectors
    [2 + 4 * t for t in range(32)],          # not even word-aligned: words straddle sectors
    [30 + 4 * t for t in range(32)],
    [128 * t for t in range(32)],            # one word per sector
    [64] * 32,                               # a broadcast: one word
    [4 * t for t in range(17)],              # a partial warp
    [4 * ((t * 7) % 32) for t in range(32)], # permuted but dense
    [1000 + 12 * t for t in range(32)],
])
def test_sectors_touched(student, addresses):
    sectors, efficiency = expected(addresses)
    got = student.sectors_touched(list(addresses))
    assert int(got[0]) == sectors, f"sectors: expected {sectors}, got {got[0]}"
    assert abs(float(got[1]) - efficiency) < 1e-9, f"efficiency: expected {efficiency:.4f}, got {got[1]}"


def test_accepts_a_numpy_array(student):
    got = student.sectors_touched(np.arange(32, dtype=np.int64) * 4 + 64)
    assert int(got[0]) == 4 and abs(float(got[1]) - 1.0) < 1e-12
