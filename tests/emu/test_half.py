"""Half precision in the emulator (f16, bf16, packed pairs) against the PTX ISA's definitions:
one rounding of the exact result to nearest even, computed here with Python fractions."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from grader.emu import Emulator
from grader.emu.ops_half import bf16_to_f64, f32_to_bf16, round_exact

RNG = np.random.default_rng(7)
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")


def exact_round(value: Fraction, fmt: str) -> float:
    """Round an exact rational to f16 or bf16, nearest even, by brute force on the grid."""
    sig, qmin, largest = {"f16": (11, -24, 65504.0), "bf16": (8, -133, 3.3895313892515355e38)}[fmt]
    if value == 0:
        return 0.0
    mag = abs(value)
    e = mag.numerator.bit_length() - mag.denominator.bit_length()
    while Fraction(2) ** e > mag:
        e -= 1
    while Fraction(2) ** (e + 1) <= mag:
        e += 1
    q = Fraction(2) ** max(e + 1 - sig, qmin)
    n, rem = divmod(mag, q)
    if rem > q / 2 or (rem == q / 2 and n % 2 == 1):
        n += 1
    out = float(n * q)
    if out > largest:
        out = float("inf")
    return out if value > 0 else -out


def _f16_values(n):
    bits = RNG.integers(0, 0x7C00, n).astype(np.uint16) | (RNG.integers(0, 2, n).astype(np.uint16) << 15)
    return bits.view(np.float16)


def _bf16_values(n, span=20):
    v = (RNG.standard_normal(n) * np.exp2(RNG.integers(-span, span, n))).astype(np.float32)
    return bf16_to_f64(f32_to_bf16(v))


def test_round_exact_agrees_with_numpy_float16_and_brute_force():
    v = np.r_[RNG.standard_normal(2000) * np.exp2(RNG.integers(-30, 17, 2000)), 65519.99, 65520.0, 2.0 ** -25,
              3 * 2.0 ** -26, -2.0 ** -24]
    got = round_exact(v, None, "f16")
    assert np.array_equal(got, v.astype(np.float16).astype(np.float64))
    for x in v[:200]:
        assert round_exact(np.array([x]), None, "bf16")[0] == exact_round(Fraction(x), "bf16")


def test_f32_to_bf16_rounds_to_nearest_even():
    cases = {0x3F808000: 0x3F80, 0x3F818000: 0x3F82, 0x3F808001: 0x3F81, 0x7F7FFFFF: 0x7F80,
             0xFF800000: 0xFF80, 0x00000001: 0x0000, 0x80008000: 0x8000}
    bits = np.array(list(cases), dtype=np.uint32)
    assert f32_to_bf16(bits.view(np.float32)).tolist() == list(cases.values())
    assert f32_to_bf16(np.array([np.nan], dtype=np.float32))[0] == 0x7FFF


HALF_OPS = r'''
extern "C" __global__ void ops(const float* f, const unsigned short* a, const unsigned short* b,
                               const unsigned short* c, unsigned short* out, unsigned* packed, float* back, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned short r0, r1, r2, r3, r4, r5, r6;
  unsigned p0, p1;
  float g;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r0) : "f"(f[i]));
  asm("fma.rn.f16 %0, %1, %2, %3;" : "=h"(r1) : "h"(a[i]), "h"(b[i]), "h"(c[i]));
  asm("add.f16 %0, %1, %2;" : "=h"(r2) : "h"(a[i]), "h"(c[i]));
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r3) : "f"(f[i]));
  asm("fma.rn.bf16 %0, %1, %2, %3;" : "=h"(r4) : "h"(r3), "h"(r3), "h"(r3));
  asm("mul.rn.bf16 %0, %1, %2;" : "=h"(r5) : "h"(r3), "h"(r4));
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(p0) : "f"(f[i]), "f"(-f[i]));
  asm("mov.b32 %0, {%1, %2};" : "=r"(p1) : "h"(a[i]), "h"(b[i]));
  asm("fma.rn.f16x2 %0, %1, %2, %1;" : "=r"(p1) : "r"(p1), "r"(p0));
  asm("{ .reg .f16 lo, hi; mov.b32 {lo, hi}, %1; cvt.f32.f16 %0, hi; }" : "=f"(g) : "r"(p1));
  asm("min.f16 %0, %1, %2;" : "=h"(r6) : "h"(a[i]), "h"(b[i]));
  out[7 * i] = r0; out[7 * i + 1] = r1; out[7 * i + 2] = r2; out[7 * i + 3] = r3;
  out[7 * i + 4] = r4; out[7 * i + 5] = r5; out[7 * i + 6] = r6;
  packed[2 * i] = p0; packed[2 * i + 1] = p1;
  back[i] = g;
}
'''


def _bits16(v):
    with np.errstate(over="ignore"):
        return np.float16(v).view(np.uint16)


def _bf16_bits(v):
    return int(f32_to_bf16(np.array([v], dtype=np.float32))[0])


def test_half_instructions_round_exactly_as_the_ptx_isa_says(compile_ptx):
    n = 256
    f = (RNG.standard_normal(n) * np.exp2(RNG.integers(-20, 11, n))).astype(np.float32)
    f[:4] = [np.float32(1 + 2.0 ** -11), np.float32(65520.0), np.float32(2.0 ** -25), np.float32(-0.0)]
    a, b, c = _f16_values(n), _f16_values(n), _f16_values(n)
    emu = Emulator(compile_ptx(HALF_OPS))
    addrs = []
    for arr in (f, a, b, c):
        addr = emu.alloc(arr.nbytes)
        emu.write(addr, arr)
        addrs.append(addr)
    out, packed, back = emu.alloc(14 * n), emu.alloc(8 * n), emu.alloc(4 * n)
    report = emu.launch("ops", grid=2, block=128, args=[*addrs, out, packed, back, n])
    assert report.status == "ok", report.message
    got = emu.read(out, np.uint16, 7 * n).reshape(n, 7)
    pk = emu.read(packed, np.uint32, 2 * n).reshape(n, 2)
    gb = emu.read(back, np.float32, n)
    F = lambda v: Fraction(float(v))  # noqa: E731
    for i in range(n):
        assert got[i, 0] == _bits16(f[i]), i  # numpy's float32 -> float16 is IEEE round to nearest even
        want = exact_round(F(a[i]) * F(b[i]) + F(c[i]), "f16")
        assert got[i, 1] == _bits16(want) or (np.isnan(want) and got[i, 1] == 0x7FFF), i
        assert got[i, 2] == _bits16(exact_round(F(a[i]) + F(c[i]), "f16")), i
        assert got[i, 3] == _bf16_bits(f[i]), i
        h = bf16_to_f64(np.array([got[i, 3]], dtype=np.uint16))[0]
        r4 = exact_round(F(h) * F(h) + F(h), "bf16")
        assert got[i, 4] == _bf16_bits(r4), i
        r5 = exact_round(F(h) * F(r4), "bf16") if np.isfinite(r4) else None
        if r5 == 0:  # fractions have no signed zero: the sign of a zero product is the sign rule's
            r5 = -0.0 if np.signbit(h) != np.signbit(r4) else 0.0
        if r5 is not None:
            assert got[i, 5] == _bf16_bits(r5), i
        lo, hi = _bits16(-f[i]), _bits16(f[i])
        assert pk[i, 0] == (int(hi) << 16) | int(lo), i  # cvt.f16x2.f32 d, a, b: a in the upper half
        # p1 = {a, b} * p0 + {a, b}, lane by lane; its upper half (b's lane) read back as a float
        if not np.isfinite(np.float16(f[i])):
            continue  # 65520 rounds to infinity in half
        want_hi = exact_round(F(b[i]) * F(np.float16(f[i])) + F(b[i]), "f16")
        assert gb[i] == np.float32(want_hi) or (np.isnan(want_hi) and np.isnan(gb[i])), i
        assert got[i, 6] == _bits16(min(float(a[i]), float(b[i]))) or (a[i] == b[i] == 0), i
