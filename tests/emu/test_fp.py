"""Exact float32 / cvt / integer semantics, checked against rational arithmetic and Python ints."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from grader.emu import fp

MODES = ("rn", "rz", "rm", "rp")
INF = np.float32(np.inf)
NAN = np.float32(np.nan)
F32_MAX = np.finfo(np.float32).max
TINY = np.float32(2.0**-149)  # smallest subnormal


# ---------------------------------------------------------------- an independent rounding reference


def round_exact(r: Fraction, rnd: str, p: int = 24, emin: int = -126, emax: int = 127) -> float:
    """Round a rational to a binary float (p-bit significand) with IEEE rounding, as a Python float.

    Uses nothing but integer arithmetic. A zero result carries the sign of ``r`` (callers test
    exactly-zero results separately).
    """
    if r == 0:
        return 0.0
    neg = r < 0
    m = -r if neg else r
    e = m.numerator.bit_length() - m.denominator.bit_length()
    if Fraction(2) ** e > m:
        e -= 1
    if Fraction(2) ** (e + 1) <= m:
        e += 1
    quantum = Fraction(2) ** (max(e, emin) - (p - 1))
    n = m / quantum
    fl = n.numerator // n.denominator
    rem = n - fl
    up = {
        "rn": rem > Fraction(1, 2) or (rem == Fraction(1, 2) and fl % 2 == 1),
        "rz": False,
        "rm": neg and rem > 0,
        "rp": (not neg) and rem > 0,
    }[rnd]
    val = (fl + up) * quantum
    largest = (2**p - 1) * Fraction(2) ** (emax - p + 1)
    if val > largest:
        to_inf = rnd == "rn" or (rnd == "rp" and not neg) or (rnd == "rm" and neg)
        mag = math.inf if to_inf else float(largest)
    else:
        mag = float(val)
    return -mag if neg else mag


def ref32(r: Fraction, rnd: str) -> np.float32:
    return np.float32(round_exact(r, rnd))


def bits(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32).view(np.uint32)


def assert_same_f32(got, want, context=None):
    """Bitwise equality, except that any NaN matches any NaN."""
    got = np.asarray(got, dtype=np.float32)
    want = np.asarray(want, dtype=np.float32)
    assert got.dtype == np.float32
    both_nan = np.isnan(got) & np.isnan(want)
    bad = (bits(got) != bits(want)) & ~both_nan
    if bad.any():
        i = np.flatnonzero(bad)[:5]
        extra = "" if context is None else f" inputs {[tuple(c[j] for c in context) for j in i]}"
        raise AssertionError(
            f"{bad.sum()} mismatches, e.g. got {got.ravel()[i]} want {want.ravel()[i]}{extra}"
        )


def F(x) -> Fraction:
    return Fraction(float(x))


# ---------------------------------------------------------------- input generators


def random_bits(rng, n):
    """Uniform over finite float32 bit patterns: every exponent, subnormals, both signs."""
    u = rng.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32)
    x = u.view(np.float32)
    return np.where(np.isfinite(x), x, np.float32(1.5))


def moderate(rng, n, spread=20):
    return (rng.standard_normal(n) * 2.0 ** rng.integers(-spread, spread, size=n)).astype(np.float32)


def small(rng, n):
    """Values whose products and sums land in the subnormal range."""
    return (rng.standard_normal(n) * 2.0 ** rng.integers(-150, -60, size=n)).astype(np.float32)


def large(rng, n):
    sign = rng.choice([-1.0, 1.0], size=n)
    return (sign * rng.uniform(1, 2, n) * 2.0 ** rng.integers(60, 127, size=n)).astype(np.float32)


def midpoint_products(rng, n):
    """a*b exactly halfway between two float32 values (an odd 25-bit integer times 2^k)."""
    a_int = rng.integers(2**11, 2**12, size=n) * 2 + 1  # odd, 13 bits
    lo = (2**24 + a_int - 1) // a_int
    hi = (2**25 - 1) // a_int
    b_int = rng.integers(lo, hi + 1)
    b_int = np.where(b_int % 2 == 0, b_int + 1, b_int)
    b_int = np.where(a_int * b_int >= 2**25, b_int - 2, b_int)
    assert np.all((a_int * b_int) % 2 == 1) and np.all(a_int * b_int >= 2**24)
    scale_a = 2.0 ** rng.integers(-30, 10, size=n)
    scale_b = 2.0 ** rng.integers(-30, 10, size=n)
    sign = rng.choice([-1.0, 1.0], size=n)
    a = (sign * a_int * scale_a).astype(np.float32)
    b = (b_int * scale_b).astype(np.float32)
    return a, b


def fma_cases(rng, n):
    cases = []
    a, b = moderate(rng, n), moderate(rng, n)
    cases.append((a, b, moderate(rng, n)))
    cases.append((random_bits(rng, n), random_bits(rng, n), random_bits(rng, n)))
    # a*b on a half-ulp of float32, c a tiny nudge (or nothing): the naive float64 route
    # double-rounds exactly here.
    a, b = midpoint_products(rng, n)
    prod = a.astype(np.float64) * b.astype(np.float64)
    nudge = rng.choice([-1.0, 0.0, 1.0], size=n) * np.abs(prod) * 2.0 ** -rng.integers(30, 80, size=n)
    cases.append((a, b, nudge.astype(np.float32)))
    # cancellation: c = -round(a*b) plus/minus a few ulps
    a, b = moderate(rng, n), moderate(rng, n)
    c = -(a * b)
    c = np.nextafter(c, np.where(rng.random(n) < 0.5, INF, -INF)).astype(np.float32)
    cases.append((a, b, np.where(rng.random(n) < 0.3, -(a * b), c).astype(np.float32)))
    # subnormal results, and overflow
    cases.append((small(rng, n), moderate(rng, n, 40), small(rng, n)))
    cases.append((large(rng, n), large(rng, n), large(rng, n)))
    return cases


# ---------------------------------------------------------------- FMA


@pytest.mark.parametrize("rnd", MODES)
def test_fma_random_and_adversarial_vs_fraction(rnd):
    rng = np.random.default_rng(list(MODES).index(rnd))
    for a, b, c in fma_cases(rng, 1500):
        got = fp.fma_f32(a, b, c, rnd)
        want = []
        for x, y, z in zip(a, b, c):
            exact = F(x) * F(y) + F(z)
            if exact == 0:  # exact zero: sign rules tested separately; use the op's own result
                want.append(np.float32(0.0))
            else:
                want.append(ref32(exact, rnd))
        want = np.array(want, dtype=np.float32)
        nonzero = want != 0
        assert_same_f32(got[nonzero], want[nonzero], (a[nonzero], b[nonzero], c[nonzero]))
        # where the exact result is 0, the result must be a zero
        assert np.all(got[~nonzero] == 0)


def test_fma_differs_from_naive_double_rounding():
    # The naive route (float64 fma-free a*b + c, then float32) fails on midpoints; ours must not.
    rng = np.random.default_rng(7)
    a, b = midpoint_products(rng, 2000)
    prod = a.astype(np.float64) * b.astype(np.float64)
    c = (np.sign(rng.standard_normal(2000)) * np.abs(prod) * 2.0**-60).astype(np.float32)
    naive = (prod + c.astype(np.float64)).astype(np.float32)
    got = fp.fma_f32(a, b, c)
    want = np.array([ref32(F(x) * F(y) + F(z), "rn") for x, y, z in zip(a, b, c)], np.float32)
    assert_same_f32(got, want)
    assert np.any(bits(naive) != bits(want)), "test inputs no longer hit double rounding"


def test_fma_specials_and_signed_zeros():
    cases = [
        # a, b, c, rnd, expected
        (INF, 0.0, 1.0, "rn", NAN),
        (INF, 1.0, -INF, "rn", NAN),
        (INF, 2.0, 1.0, "rz", INF),  # exact infinity is not rounded to FLT_MAX
        (-INF, 2.0, 1.0, "rp", -INF),
        (NAN, 1.0, 1.0, "rn", NAN),
        (1.0, 1.0, NAN, "rm", NAN),
        (2.0, 3.0, -6.0, "rn", 0.0),
        (2.0, 3.0, -6.0, "rz", 0.0),
        (2.0, 3.0, -6.0, "rp", 0.0),
        (2.0, 3.0, -6.0, "rm", -0.0),
        (0.0, 5.0, 0.0, "rm", 0.0),
        (-0.0, 5.0, 0.0, "rm", -0.0),
        (-0.0, 5.0, 0.0, "rn", 0.0),
        (-0.0, 5.0, -0.0, "rn", -0.0),
        (F32_MAX, 2.0, 0.0, "rn", INF),
        (F32_MAX, 2.0, 0.0, "rz", F32_MAX),
        (F32_MAX, 2.0, 0.0, "rm", F32_MAX),
        (-F32_MAX, 2.0, 0.0, "rm", -INF),
        (TINY, 0.5, 0.0, "rn", 0.0),  # halfway to the smallest subnormal: ties to even (zero)
        (TINY, 0.5, 0.0, "rp", TINY),
        (-TINY, 0.5, 0.0, "rm", -TINY),
        (-TINY, 0.5, 0.0, "rz", -0.0),
        (-TINY, 0.25, 0.0, "rp", -0.0),
    ]
    for a, b, c, rnd, want in cases:
        got = fp.fma_f32(np.float32(a), np.float32(b), np.float32(c), rnd)
        assert_same_f32(got, np.float32(want), [(a, b, c, rnd)])


def test_fma_rn_fast_path_is_bit_identical_to_the_exact_path():
    # fma_f32(..., "rn") rounds one float64 sum except on float32 midpoints and below float32's
    # normal range; over every case family (midpoints, cancellation, subnormals, overflow, random
    # bit patterns with NaN and inf) it must agree bit for bit with the exact TwoSum path.
    rng = np.random.default_rng(11)
    cases = fma_cases(rng, 20000)
    a, b = midpoint_products(rng, 20000)
    cases.append((a, b, np.zeros(20000, np.float32)))  # exact midpoints: ties to even
    cases.append((a, b, -np.zeros(20000, np.float32)))
    for a, b, c in cases:
        assert_same_f32(fp.fma_f32(a, b, c), fp._fma_exact(a, b, c, "rn"), (a, b, c))
        # broadcast scalar operands take the same path
        assert_same_f32(fp.fma_f32(a, b[0], c), fp._fma_exact(a, np.broadcast_to(b[0], a.shape), c, "rn"))


def test_nan_results_are_canonical():
    nan = fp.fma_f32(np.array([INF]), np.array([np.float32(0)]), np.array([np.float32(1)]))
    assert bits(nan)[0] == 0x7FFFFFFF
    assert bits(fp.add_f32(np.array([INF]), np.array([-INF])))[0] == 0x7FFFFFFF


# ---------------------------------------------------------------- add, sub, mul, div, sqrt


def binary_cases(rng, n):
    return [
        (moderate(rng, n), moderate(rng, n)),
        (random_bits(rng, n), random_bits(rng, n)),
        (moderate(rng, n, 3), moderate(rng, n, 3)),
        (small(rng, n), small(rng, n)),
        (large(rng, n), large(rng, n)),
        (small(rng, n), large(rng, n)),
    ]


OPS = {
    "add": (fp.add_f32, lambda x, y: x + y),
    "sub": (fp.sub_f32, lambda x, y: x - y),
    "mul": (fp.mul_f32, lambda x, y: x * y),
    "div": (fp.div_f32, lambda x, y: x / y),
}


@pytest.mark.parametrize("rnd", MODES)
@pytest.mark.parametrize("name", sorted(OPS))
def test_binary_ops_vs_fraction(name, rnd):
    func, exact_op = OPS[name]
    rng = np.random.default_rng(hash((name, rnd)) % 2**32)
    for a, b in binary_cases(rng, 600):
        if name == "div":
            b = np.where(b == 0, np.float32(3), b)
        got = func(a, b, rnd)
        exact = [exact_op(F(x), F(y)) for x, y in zip(a, b)]
        want = np.array([ref32(r, rnd) if r != 0 else 0.0 for r in exact], np.float32)
        nz = np.array([r != 0 for r in exact])
        assert_same_f32(got[nz], want[nz], (a[nz], b[nz]))
        assert np.all(got[~nz] == 0)


def test_add_sub_signed_zero_rules():
    for rnd in MODES:
        neg = rnd == "rm"
        for a, b in [(1.5, -1.5), (-2.0, 2.0), (0.0, -0.0), (-0.0, 0.0)]:
            got = fp.add_f32(np.float32(a), np.float32(b), rnd)
            assert got == 0 and bool(np.signbit(got)) == neg, (a, b, rnd)
        # x - x is +0 except in round-down mode
        got = fp.sub_f32(np.float32(3.0), np.float32(3.0), rnd)
        assert got == 0 and bool(np.signbit(got)) == neg
        got = fp.add_f32(np.float32(-0.0), np.float32(-0.0), rnd)
        assert np.signbit(got)
        got = fp.add_f32(np.float32(0.0), np.float32(0.0), rnd)
        assert not np.signbit(got)


def test_div_specials():
    cases = [
        (1.0, 0.0, INF),
        (-1.0, 0.0, -INF),
        (1.0, -0.0, -INF),
        (0.0, 0.0, NAN),
        (INF, INF, NAN),
        (1.0, INF, 0.0),
        (-1.0, INF, -0.0),
        (0.0, -5.0, -0.0),
        (INF, -2.0, -INF),
    ]
    for rnd in MODES:
        for a, b, want in cases:
            assert_same_f32(fp.div_f32(np.float32(a), np.float32(b), rnd), np.float32(want), [(a, b)])
    # overflow and underflow respect the mode
    assert fp.div_f32(F32_MAX, np.float32(0.5), "rn") == INF
    assert fp.div_f32(F32_MAX, np.float32(0.5), "rz") == F32_MAX
    assert fp.div_f32(TINY, np.float32(4.0), "rp") == TINY
    assert fp.div_f32(TINY, np.float32(4.0), "rn") == 0
    assert_same_f32(fp.div_f32(-TINY, np.float32(4.0), "rz"), np.float32(-0.0))


def test_rcp_is_correctly_rounded_division():
    rng = np.random.default_rng(3)
    x = np.concatenate([moderate(rng, 500), random_bits(rng, 500)])
    x = np.where(x == 0, np.float32(7), x)
    for rnd in MODES:
        want = np.array([ref32(1 / F(v), rnd) for v in x], np.float32)
        assert_same_f32(fp.rcp_f32(x, rnd), want, (x,))
    assert_same_f32(fp.rcp_f32(np.float32(-0.0)), -INF)


def sqrt_exact_proxy(x: float) -> Fraction:
    """A rational that rounds like sqrt(x) in every mode: floor(sqrt) at 2^-200 plus a sticky half."""
    a = Fraction(x)
    k = 400
    scaled = a * 2 ** (2 * k)
    assert scaled.denominator == 1
    s = math.isqrt(scaled.numerator)
    if s * s == scaled.numerator:
        return Fraction(s, 2**k)
    return Fraction(2 * s + 1, 2 ** (k + 1))


@pytest.mark.parametrize("rnd", MODES)
def test_sqrt_vs_integer_sqrt(rnd):
    rng = np.random.default_rng(11 + MODES.index(rnd))
    x = np.abs(np.concatenate([random_bits(rng, 800), moderate(rng, 800), small(rng, 200)]))
    squares = (np.float32(rng.integers(1, 4096, size=200)) ** 2).astype(np.float32)
    x = np.concatenate([x, squares])
    x = np.where(x == 0, np.float32(2), x)
    want = np.array([ref32(sqrt_exact_proxy(float(v)), rnd) for v in x], np.float32)
    assert_same_f32(fp.sqrt_f32(x, rnd), want, (x,))


def test_sqrt_specials():
    for rnd in MODES:
        assert_same_f32(fp.sqrt_f32(np.float32(-0.0), rnd), np.float32(-0.0))
        assert_same_f32(fp.sqrt_f32(np.float32(0.0), rnd), np.float32(0.0))
        assert np.isnan(fp.sqrt_f32(np.float32(-1.0), rnd))
        assert np.isnan(fp.sqrt_f32(-INF, rnd))
        assert fp.sqrt_f32(INF, rnd) == INF
        assert np.isnan(fp.sqrt_f32(NAN, rnd))


# ---------------------------------------------------------------- ftz, sat, min, max


def test_flush_subnormal_and_saturate():
    x = np.array([TINY, -TINY, 2.0**-127, -(2.0**-127), 2.0**-126, 0.0, -0.0, 1.0], np.float32)
    got = fp.flush_subnormal_f32(x)
    want = np.array([0.0, -0.0, 0.0, -0.0, 2.0**-126, 0.0, -0.0, 1.0], np.float32)
    assert_same_f32(got, want)
    x = np.array([NAN, -NAN, -1.0, -0.0, 0.0, 0.25, 1.0, 1.5, INF, -INF], np.float32)
    want = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.25, 1.0, 1.0, 1.0, 0.0], np.float32)
    assert_same_f32(fp.saturate_f32(x), want)


def test_min_max_nan_and_zero_rules():
    a = np.array([NAN, 1.0, NAN, 0.0, -0.0, 2.0, -INF], np.float32)
    b = np.array([1.0, NAN, NAN, -0.0, 0.0, 3.0, 5.0], np.float32)
    assert_same_f32(fp.min_f32(a, b), np.array([1.0, 1.0, NAN, -0.0, -0.0, 2.0, -INF], np.float32))
    assert_same_f32(fp.max_f32(a, b), np.array([1.0, 1.0, NAN, 0.0, 0.0, 3.0, 5.0], np.float32))
    assert bits(fp.max_f32(np.array([NAN]), np.array([NAN])))[0] == 0x7FFFFFFF


# ---------------------------------------------------------------- approximate functions


def test_approx_special_values():
    table = {
        "ex2": [(-INF, 0.0), (0.0, 1.0), (-0.0, 1.0), (INF, INF), (NAN, NAN), (1.0, 2.0), (200.0, INF)],
        "lg2": [(0.0, -INF), (-0.0, -INF), (-1.0, NAN), (-INF, NAN), (INF, INF), (NAN, NAN), (8.0, 3.0)],
        "rsqrt": [(0.0, INF), (-0.0, -INF), (-4.0, NAN), (INF, 0.0), (NAN, NAN), (4.0, 0.5)],
        "rcp": [(0.0, INF), (-0.0, -INF), (INF, 0.0), (-INF, -0.0), (4.0, 0.25), (NAN, NAN)],
        "sqrt": [(-0.0, -0.0), (-1.0, NAN), (INF, INF), (9.0, 3.0)],
        "sin": [(0.0, 0.0), (-0.0, -0.0), (INF, NAN), (-INF, NAN), (NAN, NAN)],
        "cos": [(0.0, 1.0), (-0.0, 1.0), (INF, NAN), (NAN, NAN)],
        "tanh": [(0.0, 0.0), (-0.0, -0.0), (INF, 1.0), (-INF, -1.0), (NAN, NAN)],
    }
    for op, rows in table.items():
        x = np.array([r[0] for r in rows], np.float32)
        want = np.array([r[1] for r in rows], np.float32)
        assert_same_f32(fp.approx_f32(op, x), want, [(op,)] * len(rows) and (x,))
    with pytest.raises(ValueError):
        fp.approx_f32("exp", np.float32(1))


def test_approx_accuracy():
    rng = np.random.default_rng(5)
    x = (rng.random(2000) * 20 - 10).astype(np.float32)
    refs = {
        "ex2": lambda v: 2.0**v,
        "sin": math.sin,
        "cos": math.cos,
        "tanh": math.tanh,
    }
    for op, f in refs.items():
        want = np.array([f(float(v)) for v in x], np.float64)
        got = fp.approx_f32(op, x).astype(np.float64)
        assert np.all(np.abs(got - want) <= np.abs(want) * 2.0**-23 + 2.0**-40), op
    pos = np.abs(x) + np.float32(0.01)
    assert np.allclose(fp.approx_f32("lg2", pos), np.log2(pos.astype(np.float64)), rtol=2**-22)
    assert np.allclose(fp.approx_f32("rsqrt", pos), 1 / np.sqrt(pos.astype(np.float64)), rtol=2**-23)


# ---------------------------------------------------------------- cvt


INT_RANGES = {
    "s8": (-(2**7), 2**7 - 1),
    "u8": (0, 2**8 - 1),
    "s16": (-(2**15), 2**15 - 1),
    "u16": (0, 2**16 - 1),
    "s32": (-(2**31), 2**31 - 1),
    "u32": (0, 2**32 - 1),
    "s64": (-(2**63), 2**63 - 1),
    "u64": (0, 2**64 - 1),
}
ROUND_INT = {
    "rni": lambda q: round(q),  # Python rounds Fractions half to even
    "rzi": lambda q: math.trunc(q),
    "rmi": lambda q: math.floor(q),
    "rpi": lambda q: math.ceil(q),
}


@pytest.mark.parametrize("src", [np.float32, np.float64])
@pytest.mark.parametrize("dst", sorted(INT_RANGES))
def test_cvt_float_to_int_vs_python(dst, src):
    rng = np.random.default_rng(hash((dst, src.__name__)) % 2**32)
    lo, hi = INT_RANGES[dst]
    width = int(dst[1:])
    specials = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, -0.0, 0.0, lo, hi, lo - 1.0, hi + 1.0, 2.0**width,
                -(2.0**width), 3e9, -3e9, 1e30, -1e30, math.inf, -math.inf]
    vals = np.concatenate([
        np.array(specials),
        rng.standard_normal(400) * 2.0 ** rng.integers(0, width + 3, size=400),
        rng.integers(-4, 5, size=50) + rng.choice([0.0, 0.5, 0.25, 0.75], size=50),
    ]).astype(src)
    for rnd, f in ROUND_INT.items():
        got = fp.cvt_float_to_int(vals, dst, rnd)
        assert got.dtype == np.dtype(fp._INT_TYPES[dst])
        for v, g in zip(vals, got):
            if math.isinf(v):
                want = hi if v > 0 else lo
            else:
                want = min(max(f(Fraction(float(v))), lo), hi)
            assert int(g) == want, (float(v), dst, rnd, int(g), want)


def test_cvt_float_to_int_nan_rule():
    # NaN -> 0, except f64 source or 64-bit destination: 1 << (width - 1) (PTX ISA 9.7.9.21).
    f32nan, f64nan = np.array([NAN]), np.array([np.nan])
    assert fp.cvt_float_to_int(f32nan, "s32", "rni")[0] == 0
    assert fp.cvt_float_to_int(f32nan, "u16", "rzi")[0] == 0
    assert fp.cvt_float_to_int(f64nan, "s32", "rzi")[0] == -(2**31)
    assert fp.cvt_float_to_int(f64nan, "u32", "rzi")[0] == 2**31
    assert fp.cvt_float_to_int(f64nan, "s8", "rzi")[0] == -128
    assert fp.cvt_float_to_int(f32nan, "s64", "rni")[0] == -(2**63)
    assert fp.cvt_float_to_int(f32nan, "u64", "rni")[0] == 2**63


@pytest.mark.parametrize("rnd", MODES)
@pytest.mark.parametrize("src", ["s32", "u32", "s64", "u64", "s16"])
def test_cvt_int_to_float_vs_fraction(src, rnd):
    rng = np.random.default_rng(hash((src, rnd)) % 2**32)
    lo, hi = INT_RANGES[src]
    dtype = fp._INT_TYPES[src]
    width = int(src[1:])
    edge = [lo, hi, 0, 1, -1 if lo < 0 else 2, 2**24 + 1, 2**24 + 3, 2**53 + 1, 2**62 + 2**39 + 1]
    edge = [v for v in edge if lo <= v <= hi]
    rand = [int(v) for v in rng.integers(0, 2**63, size=300, dtype=np.uint64) >> rng.integers(0, 63, 300).astype(np.uint64)]
    rand = [v % (hi - lo + 1) + lo for v in rand]
    # random values with a long run of bits that sit exactly on or near a float32/float64 midpoint
    mid = [(2**24 + 2 * i + 1) << s for i in range(20) for s in (0, 5, width - 27) if s >= 0]
    mid += [(2**53 + 2 * i + 1) << s for i in range(10) for s in (0, width - 56) if s >= 0]
    mid = [v for v in mid if v <= hi] + [-v for v in mid if -v >= lo]
    vals = edge + rand + mid
    x = np.array(vals, dtype=dtype)
    got32 = fp.cvt_int_to_float(x, "f32", rnd)
    assert got32.dtype == np.float32
    want32 = np.array([round_exact(Fraction(v), rnd) for v in vals], np.float32)
    assert_same_f32(got32, want32, (x,))
    got64 = fp.cvt_int_to_float(x, "f64", rnd)
    assert got64.dtype == np.float64
    want64 = [round_exact(Fraction(v), rnd, p=53, emin=-1022, emax=1023) for v in vals]
    assert [float(g) for g in got64] == want64


@pytest.mark.parametrize("rnd", MODES)
def test_cvt_f64_to_f32_vs_fraction(rnd):
    rng = np.random.default_rng(21 + MODES.index(rnd))
    u = rng.integers(0, 2**64, size=2000, dtype=np.uint64)
    x = u.view(np.float64)
    x = x[np.isfinite(x)]
    x = np.concatenate([
        x,
        rng.standard_normal(1000) * 2.0 ** rng.integers(-160, 140, size=1000),
        [1e300, -1e300, 3.4028235677973366e38, 2.0**-150, -(2.0**-150), 2.0**-151, 1 + 2.0**-24],
    ])
    got = fp.cvt_float_to_float(x, "f32", rnd)
    want = np.array([ref32(Fraction(float(v)), rnd) if v != 0 else v for v in x], np.float32)
    assert_same_f32(got, want, (x,))


def test_cvt_float_to_float_misc():
    x32 = np.array([1.5, -2.5, 0.5, -0.5, 3.7, NAN, INF, -0.0], np.float32)
    assert_same_f32(fp.cvt_float_to_float(x32, "f32", "rni"), [2.0, -2.0, 0.0, -0.0, 4.0, NAN, INF, -0.0])
    assert_same_f32(fp.cvt_float_to_float(x32, "f32", "rzi"), [1.0, -2.0, 0.0, -0.0, 3.0, NAN, INF, -0.0])
    assert_same_f32(fp.cvt_float_to_float(x32, "f32", "rmi"), [1.0, -3.0, 0.0, -1.0, 3.0, NAN, INF, -0.0])
    assert_same_f32(fp.cvt_float_to_float(x32, "f32", "rpi"), [2.0, -2.0, 1.0, -0.0, 4.0, NAN, INF, -0.0])
    wide = fp.cvt_float_to_float(x32, "f64")
    assert wide.dtype == np.float64
    assert np.array_equal(wide[:5], x32[:5].astype(np.float64))
    assert bits(fp.cvt_float_to_float(np.array([np.nan]), "f32", "rn"))[0] == 0x7FFFFFFF
    assert fp.cvt_float_to_float(np.array([1e300]), "f32", "rz")[0] == F32_MAX
    assert fp.cvt_float_to_float(np.array([np.inf]), "f32", "rz")[0] == INF


# ---------------------------------------------------------------- integer helpers


def py_trunc_div(a: int, b: int) -> tuple[int, int]:
    q = abs(a) // abs(b)
    if (a < 0) != (b < 0):
        q = -q
    return q, a - q * b


def wrap(v: int, width: int, signed: bool) -> int:
    v &= (1 << width) - 1
    if signed and v >= 1 << (width - 1):
        v -= 1 << width
    return v


@pytest.mark.parametrize("width", [16, 32, 64])
@pytest.mark.parametrize("signed", [True, False])
def test_div_rem_vs_python(width, signed):
    rng = np.random.default_rng(width + signed)
    dtype = np.dtype(f"{'i' if signed else 'u'}{width // 8}")
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, size=500, dtype=dtype, endpoint=True)
    b = rng.integers(info.min, info.max, size=500, dtype=dtype, endpoint=True)
    b = np.where(rng.random(500) < 0.3, (b % dtype.type(100)).astype(dtype), b)  # small divisors
    edges_a = [info.min, info.max, 0, 7, info.min, 12345]
    edges_b = [dtype.type(-1) if signed else dtype.type(1), 1, 3, dtype.type(-2) if signed else 2, 0, 0]
    a = np.concatenate([a, np.array(edges_a, dtype=dtype)])
    b = np.concatenate([b, np.array(edges_b, dtype=dtype)])
    with np.errstate(all="raise"):  # the helpers must not leak warnings
        q = fp.div_int(a, b, signed)
        r = fp.rem_int(a, b, signed)
    assert q.dtype == dtype and r.dtype == dtype
    for x, y, gq, gr in zip(a.tolist(), b.tolist(), q.tolist(), r.tolist()):
        if y == 0:
            assert gq == (-1 if signed else info.max) and gr == x
            continue
        wq, wr = py_trunc_div(x, y)
        assert (gq, gr) == (wrap(wq, width, signed), wrap(wr, width, signed)), (x, y)


def test_div_int_min_by_minus_one_and_raw_bits():
    assert fp.div_int(np.array([-(2**31)], np.int32), np.array([-1], np.int32), True)[0] == -(2**31)
    assert fp.rem_int(np.array([-(2**31)], np.int32), np.array([-1], np.int32), True)[0] == 0
    # Raw uint32 register bits interpreted as signed: -7 / 2 == -3.
    raw = np.array([-7], np.int32).view(np.uint32)
    q = fp.div_int(raw, np.array([2], np.uint32), True)
    assert q.dtype == np.int32 and q[0] == -3
    assert fp.div_int(np.array([7], np.uint32), 0, False)[0] == 0xFFFFFFFF  # width from a


@pytest.mark.parametrize("width", [16, 32, 64])
@pytest.mark.parametrize("signed", [True, False])
def test_mul_hi_vs_python(width, signed):
    rng = np.random.default_rng(100 + width + signed)
    dtype = np.dtype(f"{'i' if signed else 'u'}{width // 8}")
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, size=500, dtype=dtype, endpoint=True)
    b = rng.integers(info.min, info.max, size=500, dtype=dtype, endpoint=True)
    a = np.concatenate([a, np.array([info.min, info.max, info.min, info.max, 0, 1], dtype)])
    b = np.concatenate([b, np.array([info.min, info.max, info.max, 1, info.max, info.min], dtype)])
    got = fp.mul_hi(a, b, width, signed)
    assert got.dtype == dtype
    for x, y, g in zip(a.tolist(), b.tolist(), got.tolist()):
        assert g == wrap((x * y) >> width, width, signed), (x, y)


@pytest.mark.parametrize("width", [16, 32, 64])
def test_shifts_vs_python(width):
    rng = np.random.default_rng(200 + width)
    udt = np.dtype(f"u{width // 8}")
    sdt = np.dtype(f"i{width // 8}")
    a = rng.integers(0, np.iinfo(udt).max, size=300, dtype=udt, endpoint=True)
    n = np.concatenate([rng.integers(0, width, size=250), [width, width + 1, 255, 2**31, 2**32 - 1] * 10])
    n = n.astype(np.uint32)
    shl = fp.shift_left(a, n, width)
    shr_u = fp.shift_right(a, n, width, signed=False)
    shr_s = fp.shift_right(a.view(sdt), n, width, signed=True)
    assert shr_s.dtype == sdt and shr_u.dtype == udt
    for x, k, l, ru, rs in zip(a.tolist(), n.tolist(), shl.tolist(), shr_u.tolist(), shr_s.tolist()):
        k_eff = min(k, width)
        assert l == ((x << k_eff) & ((1 << width) - 1) if k < width else 0)
        assert ru == (x >> k_eff if k < width else 0)
        xs = wrap(x, width, True)
        assert rs == (xs >> min(k, width - 1))  # Python >> on negatives is the sign fill
    # a negative Python shift amount is read as a huge u32 and clamps
    assert fp.shift_left(np.array([1], np.uint32), -1, 32)[0] == 0
    assert fp.shift_right(np.array([-8], np.int32), 40, 32, signed=True)[0] == -1
