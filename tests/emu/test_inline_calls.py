"""`.func` calls: inlined at parse time; mutual recursion and oversized inlining are refused by name and line."""

from __future__ import annotations

import numpy as np

from grader.emu import Emulator, ptx

MUTUAL = r'''
__device__ int is_odd(int n);
__device__ int is_even(int n) { return n == 0 ? 1 : is_odd(n - 1); }
__device__ int is_odd(int n) { return n == 0 ? 0 : is_even(n - 1); }
extern "C" __global__ void k(const int* in, int* out) {
  out[threadIdx.x] = is_even(in[threadIdx.x]);
}
'''

CHAIN = r'''
__device__ __noinline__ int f1(int x) { return x * 3 + 1; }
__device__ __noinline__ int f2(int x) { return f1(x) + f1(x + 1); }
__device__ __noinline__ int f3(int x) { return f2(x) * f2(x - 1); }
extern "C" __global__ void k(const int* in, int* out) {
  out[threadIdx.x] = f3(in[threadIdx.x]);
}
'''


def _run(ptx_text):
    emu = Emulator(ptx_text)
    x = np.arange(32, dtype=np.int32) % 7
    a, o = emu.alloc(x.nbytes), emu.alloc(x.nbytes)
    emu.write(a, x)
    r = emu.launch("k", grid=(1,), block=(32,), args=[a, o])
    return r, x, emu.read(o, np.int32, 32)


def _f3(x):
    f1 = lambda v: v * 3 + 1  # noqa: E731
    f2 = lambda v: f1(v) + f1(v + 1)  # noqa: E731
    return f2(x) * f2(x - 1)


def test_mutual_recursion_is_refused_at_its_line(compile_ptx):
    r, _, _ = _run(compile_ptx(MUTUAL))
    assert r.status == "unsupported"
    assert "recursion" in r.message and "line 4" in r.message  # where the cycle closes: is_odd calls is_even


def test_nested_calls_are_inlined_into_the_kernel(compile_ptx):
    text = compile_ptx(CHAIN)
    assert text.count(".func") >= 3
    assert not any(i.opcode == "call" for i in ptx.parse(text).kernels["k"].instrs)
    r, x, out = _run(text)
    assert r.status == "ok", r.message
    np.testing.assert_array_equal(out, _f3(x.astype(np.int64)))


def test_inlining_past_the_cap_is_refused(compile_ptx, monkeypatch):
    monkeypatch.setattr(ptx, "MAX_INLINED_INSTRS", 20)
    r, _, _ = _run(compile_ptx(CHAIN))
    assert r.status == "unsupported"
    assert "too large to inline" in r.message and "line " in r.message
