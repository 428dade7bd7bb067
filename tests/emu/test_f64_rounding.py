"""f64 arithmetic rounded as the hardware rounds it: FMA once, exactly; add/sub/mul/div/sqrt in all
four rounding modes. Checked against exact rational arithmetic."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from grader.emu import Emulator
from grader.emu.ops_float import _arith_f64, fma_f64

MODES = ("rn", "rz", "rm", "rp")


def _exact(q: Fraction, rnd: str) -> float:
    """Round a rational to float64 in mode rnd, by bisection-free neighbour search."""
    z = float(q)  # nearest, ties to even
    if rnd == "rn" or Fraction(z) == q:
        return z
    lo, hi = (z, float(np.nextafter(z, np.inf))) if Fraction(z) < q else (float(np.nextafter(z, -np.inf)), z)
    if rnd == "rm" or (rnd == "rz" and q > 0):
        return lo
    return hi


def _operands(scale, n=600, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n) * scale
    b = rng.normal(size=n)
    c = -a * b * (1 + rng.normal(size=n) * 1e-15)  # heavy cancellation: where a*b+c double-rounds
    c[::3] = rng.normal(size=c[::3].size) * scale
    return a, b, c


@pytest.mark.parametrize("scale", [1.0, 1e-150, 1e150, 1e-300, 1e300])
@pytest.mark.parametrize("rnd", MODES)
def test_fma_is_rounded_once(scale, rnd):
    a, b, c = _operands(scale)
    got = fma_f64(a, b, c, rnd)
    exp = [_exact(Fraction(x) * Fraction(y) + Fraction(z), rnd) for x, y, z in zip(a, b, c)]
    np.testing.assert_array_equal(got, exp)


def test_the_naive_product_plus_addend_would_be_wrong_here():
    a, b, c = _operands(1.0)
    exp = np.array([_exact(Fraction(x) * Fraction(y) + Fraction(z), "rn") for x, y, z in zip(a, b, c)])
    assert (a * b + c != exp).sum() > 50  # so the test above checks something


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("rnd", MODES)
def test_basic_arithmetic_in_every_rounding_mode(op, rnd):
    a, b, _ = _operands(1.0, n=400, seed=1)
    got = _arith_f64(op, rnd)(a, b)
    fn = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y, "div": lambda x, y: x / y}[op]
    np.testing.assert_array_equal(got, [_exact(fn(Fraction(x), Fraction(y)), rnd) for x, y in zip(a, b)])


@pytest.mark.parametrize("rnd", ["rz", "rm", "rp"])
def test_sqrt_in_directed_modes(rnd):
    x = np.abs(_operands(1.0, n=400, seed=2)[0])
    got = _arith_f64("sqrt", rnd)(x)
    for z, v in zip(got, x):
        below, above = float(np.nextafter(z, -np.inf)), float(np.nextafter(z, np.inf))
        if rnd == "rp":
            assert Fraction(below) ** 2 < Fraction(v) <= Fraction(z) ** 2
        else:
            assert Fraction(z) ** 2 <= Fraction(v) < Fraction(above) ** 2


KERNEL = r'''
extern "C" __global__ void k(const double* a, const double* b, const double* c, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[4 * i + 0] = fma(a[i], b[i], c[i]);
  out[4 * i + 1] = __fma_rz(a[i], b[i], c[i]);
  out[4 * i + 2] = __dadd_ru(a[i], c[i]);
  out[4 * i + 3] = __ddiv_rd(a[i], b[i]);
}
'''


def test_a_kernel_gets_the_hardware_roundings(compile_ptx):
    ptx = compile_ptx(KERNEL)
    assert "fma.rn.f64" in ptx and "fma.rz.f64" in ptx
    n = 64
    a, b, c = _operands(1.0, n=n, seed=3)
    emu = Emulator(ptx)
    bufs = []
    for arr in (a, b, c, np.zeros(4 * n)):
        addr = emu.alloc(arr.nbytes)
        emu.write(addr, arr)
        bufs.append(addr)
    r = emu.launch("k", grid=(1,), block=(64,), args=bufs + [n])
    assert r.status == "ok", r.message
    out = emu.read(bufs[3], np.float64, 4 * n).reshape(n, 4)
    for i in range(n):
        x, y, z = Fraction(a[i]), Fraction(b[i]), Fraction(c[i])
        assert list(out[i]) == [_exact(x * y + z, "rn"), _exact(x * y + z, "rz"), _exact(x + z, "rp"),
                                _exact(x / y, "rm")], i
