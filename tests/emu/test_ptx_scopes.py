"""Nested blocks: registers and labels declared in an inline asm block are local to it (PTX scoping)."""

from __future__ import annotations

import numpy as np

from grader.emu import Emulator
from grader.emu.ptx import parse

SRC = r'''
__device__ __forceinline__ unsigned spin(unsigned x) {
  unsigned r;
  // its own %r1 (shadowing the kernel's) and a label that both inlined copies declare
  asm("{\n\t.reg .pred p;\n\t.reg .u32 %%r1;\n\tmov.u32 %%r1, 0;\n\tmov.u32 %0, %1;\n"
      "LOOP:\n\tadd.u32 %0, %0, 3;\n\tadd.u32 %%r1, %%r1, 1;\n\tsetp.lt.u32 p, %%r1, 4;\n\t@p bra LOOP;\n\t}"
      : "=r"(r) : "r"(x));
  return r;
}
extern "C" __global__ void k(const unsigned* in, unsigned* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = spin(in[i]) + spin(in[i] * 2u) + i;
}
'''


def test_an_asm_block_shadows_outer_registers_and_labels(compile_ptx):
    ptx = compile_ptx(SRC)
    assert ptx.count("LOOP:") == 2  # the same label in two blocks: legal PTX
    k = parse(ptx).kernels["k"]
    assert len([name for name in k.labels if name.startswith("LOOP")]) == 2
    emu = Emulator(ptx)
    n = 70
    x = np.arange(n, dtype=np.uint32) * 5
    a, o = emu.alloc(x.nbytes), emu.alloc(x.nbytes)
    emu.write(a, x)
    r = emu.launch("k", grid=(1,), block=(96,), args=[a, o, n])
    assert r.status == "ok", r.message
    np.testing.assert_array_equal(emu.read(o, np.uint32, n), (x + 12) + (2 * x + 12) + np.arange(n))
