"""Hidden tests of bank_conflict_degree: tile widths 31, 32, 33, 48, 64 and every access pattern."""
import math

import pytest

ACCESS = {"row": lambda t: (0, t), "column": lambda t: (t, 0), "diagonal": lambda t: (t, t), "broadcast": lambda t: (0, 0)}


def expected(width, access):
    # Distinct words per bank: by counting, bank by bank.
    words = {ACCESS[access](t)[0] * width + ACCESS[access](t)[1] for t in range(32)}
    return max(sum(1 for w in words if w % 32 == bank) for bank in range(32))


@pytest.mark.parametrize("width", [31, 32, 33, 48, 64, 65])
@pytest.mark.parametrize("access", ["row", "column", "diagonal", "broadcast"])
def test_degree(student, width, access):
    want = expected(width, access)
    got = student.bank_conflict_degree(width, access)
    assert got == want, f"tile[32][{width}], {access}: expected degree {want}, got {got}"


def test_column_degree_is_the_gcd_rule(student):
    for width in (40, 56, 96):
        assert student.bank_conflict_degree(width, "column") == math.gcd(width, 32), f"tile[32][{width}] column"
