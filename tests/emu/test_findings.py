"""Findings: memory faults, hazards, uninitialised reads, barrier misuse, unsupported opcodes."""

from __future__ import annotations

import numpy as np

from grader.emu import Emulator

OOB = r'''
extern "C" __global__ void overrun(const float* a, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  c[i] = a[i] * 2.f;
}
'''

NO_SECOND_SYNC = r'''
extern "C" __global__ void rev(float* x) {
  __shared__ float s[64];
  s[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  x[threadIdx.x] = s[63 - threadIdx.x];
}
'''

UNINIT = r'''
extern "C" __global__ void peek(float* x) {
  __shared__ float s[64];
  if (threadIdx.x < 32) s[threadIdx.x] = 1.f;
  __syncthreads();
  x[threadIdx.x] = s[threadIdx.x];
}
'''

SHARED_OOB = r'''
extern "C" __global__ void sh(float* x, int k) {
  __shared__ float s[32];
  s[threadIdx.x + k] = 1.f;
  __syncthreads();
  x[threadIdx.x] = s[threadIdx.x];
}
'''

DIVERGENT_BLOCK = r'''
extern "C" __global__ void split(float* x) {
  __shared__ float s[64];
  if (threadIdx.x < 32) { s[threadIdx.x] = 1.f; __syncthreads(); }
  else { s[threadIdx.x] = 2.f; __syncthreads(); }
  x[threadIdx.x] = s[63 - threadIdx.x];
}
'''


def _put(emu, name, arr):
    addr = emu.alloc(arr.nbytes, name=name)
    emu.write(addr, arr)
    return addr


def test_out_of_bounds_is_reported_and_suppressed(compile_ptx):
    emu = Emulator(compile_ptx(OOB))
    n = 33 * 33
    a = _put(emu, "A", np.ones(n, np.float32))
    c = _put(emu, "C", np.zeros(n, np.float32))
    canary = _put(emu, "canary", np.full(64, 7, np.int32))
    # 18 blocks of 64 threads: the last 63 threads run up to 252 bytes past A and C, into the guard gaps
    r = emu.launch("overrun", grid=(18,), block=(64,), args=[a, c, n])
    assert r.status == "ok"
    kinds = {(e.space, e.kind, e.line) for e in r.memory_errors}
    assert kinds == {("global", "out-of-bounds-read", 4), ("global", "out-of-bounds-write", 4)}
    st = next(e for e in r.memory_errors if e.kind == "out-of-bounds-write")
    assert st.detail.startswith("4 bytes past the end of the 4356-byte buffer C")
    assert st.block == (17, 0, 0) and st.thread == (1, 0, 0)
    np.testing.assert_array_equal(emu.read(c, np.float32, n), 2.0)
    np.testing.assert_array_equal(emu.read(canary, np.int32, 64), 7)
    assert "line 4" in r.message


def test_missing_barrier_is_a_raw_hazard(compile_ptx):
    emu = Emulator(compile_ptx(NO_SECOND_SYNC.replace("__syncthreads();", "")))
    x = _put(emu, "x", np.arange(64, dtype=np.float32))
    r = emu.launch("rev", grid=(1,), block=(64,), args=[x])
    assert r.status == "ok"
    assert {h.kind for h in r.hazards} == {"RAW"}
    h = r.hazards[0]
    assert (h.first_line, h.second_line) == (4, 6)  # line 5 held the removed barrier
    # with the barrier: no hazard, right answer
    emu = Emulator(compile_ptx(NO_SECOND_SYNC))
    x = _put(emu, "x", np.arange(64, dtype=np.float32))
    r = emu.launch("rev", grid=(1,), block=(64,), args=[x])
    assert r.hazards == ()
    np.testing.assert_array_equal(emu.read(x, np.float32, 64), np.arange(64)[::-1])


def test_uninitialised_shared_read(compile_ptx):
    emu = Emulator(compile_ptx(UNINIT))
    x = _put(emu, "x", np.zeros(64, np.float32))
    r = emu.launch("peek", grid=(1,), block=(64,), args=[x])
    assert [(u.line, u.count) for u in r.uninit_reads] == [(6, 32 * 4)]
    # and the emulator does not pretend shared memory starts at zero
    assert np.isnan(emu.read(x, np.float32, 64)[32:]).all()


def test_shared_out_of_bounds(compile_ptx):
    emu = Emulator(compile_ptx(SHARED_OOB))
    x = _put(emu, "x", np.zeros(32, np.float32))
    r = emu.launch("sh", grid=(1,), block=(32,), args=[x, 1])
    [e] = r.memory_errors
    assert (e.space, e.kind, e.line) == ("shared", "out-of-bounds-write", 4)
    assert e.thread == (31, 0, 0)
    assert "past the end of the 128-byte shared memory" in e.detail


def test_divergent_block_barrier(compile_ptx):
    emu = Emulator(compile_ptx(DIVERGENT_BLOCK))
    x = _put(emu, "x", np.zeros(64, np.float32))
    r = emu.launch("split", grid=(1,), block=(64,), args=[x])
    assert r.status == "ok"
    kinds = {e.kind for e in r.barrier_errors}
    assert "divergent-block" in kinds
    assert all(e.line in (4, 5) for e in r.barrier_errors)


def test_unknown_opcode_is_unsupported():
    ptx = """
.version 9.5
.target sm_90
.address_size 64
.visible .entry k(.param .u64 k_param_0)
{
    .reg .b32 %r<3>;
    .loc 1 7 3
    mov.u32 %r1, %tid.x;
    frobnicate.b32 %r2, %r1;
    ret;
}
.file 1 "submission.cu"
"""
    emu = Emulator(ptx)
    r = emu.launch("k", grid=(1,), block=(32,), args=[0])
    assert r.status == "unsupported"
    assert "frobnicate.b32" in r.message and "line 7" in r.message
