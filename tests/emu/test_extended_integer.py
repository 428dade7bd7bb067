"""Carry-chain arithmetic (add.cc/addc/sub.cc/subc/mad.cc/madc) and the math library paths that use it."""

from __future__ import annotations

import numpy as np

from grader.emu import Emulator

M32, M64 = (1 << 32) - 1, (1 << 64) - 1

CARRY = r'''
extern "C" __global__ void carry(const unsigned long long* a, const unsigned long long* b, unsigned long long* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned long long x = a[i], y = b[i];
  unsigned xl = (unsigned)x, xh = (unsigned)(x >> 32), yl = (unsigned)y, yh = (unsigned)(y >> 32);
  unsigned sl, sh, dl, dh, p0, p1, p2, p3, c;
  // 64-bit add and subtract from 32-bit halves
  asm("add.cc.u32 %0, %2, %3;\n\taddc.u32 %1, %4, %5;" : "=r"(sl), "=r"(sh) : "r"(xl), "r"(yl), "r"(xh), "r"(yh));
  asm("sub.cc.u32 %0, %2, %3;\n\tsubc.u32 %1, %4, %5;" : "=r"(dl), "=r"(dh) : "r"(xl), "r"(yl), "r"(xh), "r"(yh));
  // the carry out of a 64-bit add of the whole values, and a 128-bit product's words by mad.cc/madc
  asm("{\n\t.reg .u64 t;\n\tadd.cc.u64 t, %1, %2;\n\taddc.u32 %0, 0, 0;\n\t}" : "=r"(c) : "l"(x), "l"(y));
  asm("{\n\t"
      "mul.lo.u32 %0, %4, %6;\n\t"
      "mul.hi.u32 %1, %4, %6;\n\t"
      "mad.lo.cc.u32 %1, %5, %6, %1;\n\t"
      "madc.hi.u32 %2, %5, %6, 0;\n\t"
      "mad.lo.cc.u32 %1, %4, %7, %1;\n\t"
      "madc.hi.cc.u32 %2, %4, %7, %2;\n\t"
      "addc.u32 %3, 0, 0;\n\t"
      "mad.lo.cc.u32 %2, %5, %7, %2;\n\t"
      "madc.hi.u32 %3, %5, %7, %3;\n\t"
      "}" : "=r"(p0), "=r"(p1), "=r"(p2), "=r"(p3) : "r"(xl), "r"(xh), "r"(yl), "r"(yh));
  unsigned long long* o = out + 5 * i;
  o[0] = ((unsigned long long)sh << 32) | sl;
  o[1] = ((unsigned long long)dh << 32) | dl;
  o[2] = c;
  o[3] = ((unsigned long long)p1 << 32) | p0;
  o[4] = ((unsigned long long)p3 << 32) | p2;
}
'''

HUGE_ARGS = r'''
extern "C" __global__ void huge(const float* x, const double* y, float* out, double* outd, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[2 * i] = sinf(x[i]);
  out[2 * i + 1] = cosf(x[i]);
  outd[i] = sin(y[i]);
}
'''


def _run(emu, kernel, args, grid=(1,), block=(64,)):
    argv, bufs = [], []
    for a in args:
        if isinstance(a, np.ndarray):
            addr = emu.alloc(a.nbytes)
            emu.write(addr, a)
            argv.append(addr)
            bufs.append((addr, a))
        else:
            argv.append(a)
    r = emu.launch(kernel, grid=grid, block=block, args=argv)
    assert r.status == "ok", r.message
    return [emu.read(addr, a.dtype, a.size) for addr, a in bufs]


def test_carry_chains(compile_ptx):
    ptx = compile_ptx(CARRY)
    assert "addc.u32" in ptx and "madc.hi.cc.u32" in ptx
    rng = np.random.default_rng(0)
    n = 64
    a = rng.integers(0, 2**64, n, dtype=np.uint64)
    b = rng.integers(0, 2**64, n, dtype=np.uint64)
    a[0], b[0] = M64, 1  # every carry ripples
    a[1], b[1] = 0, 1  # every borrow ripples
    _, _, out = _run(Emulator(ptx), "carry", [a, b, np.zeros(5 * n, np.uint64), n])
    for i in range(n):
        x, y = int(a[i]), int(b[i])
        exp = [(x + y) & M64, (x - y) & M64, (x + y) >> 64, (x * y) & M64, (x * y) >> 64]
        assert [int(v) for v in out[5 * i:5 * i + 5]] == exp, i


def test_math_library_argument_reduction_for_huge_arguments(compile_ptx):
    n = 32
    rng = np.random.default_rng(1)
    x = (rng.uniform(1e5, 1e30, n) * rng.choice([-1, 1], n)).astype(np.float32)
    y = rng.uniform(1e10, 1e300, n) * rng.choice([-1, 1], n)
    _, _, out, outd = _run(Emulator(compile_ptx(HUGE_ARGS)), "huge",
                           [x, y, np.zeros(2 * n, np.float32), np.zeros(n), n])
    xd = x.astype(np.float64)
    # CUDA's sinf/cosf are within 2 ulp at any argument; a float's ulp below 1 is at most 2**-24
    np.testing.assert_allclose(out.reshape(n, 2), np.stack([np.sin(xd), np.cos(xd)], 1), rtol=0, atol=2 * 2.0 ** -24)
    np.testing.assert_allclose(outd, np.sin(y), rtol=0, atol=4 * 2.0 ** -53)
