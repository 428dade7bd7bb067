"""Warp collectives reached on divergent paths: the Volta rendezvous of `.sync` collectives.

Expected values are computed by hand from the PTX ISA's shfl.sync pseudo-code (bfly: source lane
j = lane ^ b, every j <= 31 valid with c = 31), with each lane supplying its own branch's operand.
"""

from __future__ import annotations

import numpy as np

from grader.emu import Emulator

FULL = 0xFFFFFFFF

SHFL_BOTH = r'''
extern "C" __global__ void k(const int* x, int* out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x, v = x[t];
  if (t & 1) v = __shfl_xor_sync(0xffffffff, v, 1); else v = __shfl_xor_sync(0xffffffff, v + 1, 1);
  out[t] = v;
}
'''

BALLOT_BOTH = r'''
extern "C" __global__ void k(const int* x, unsigned* out) {
  int t = threadIdx.x, v = x[t];
  unsigned b;
  if (v % 3 == 0) b = __ballot_sync(0xffffffff, v > 10); else b = __ballot_sync(0xffffffff, v > 5);
  out[t] = b;
}
'''

NESTED = r'''
extern "C" __global__ void k(const int* x, int* out) {
  int t = threadIdx.x, v = x[t];
  if (t < 12) {
    if (t & 1) v = __shfl_xor_sync(0xffffffff, v, 5); else v = __shfl_xor_sync(0xffffffff, v * 2, 5);
  } else {
    v = __shfl_xor_sync(0xffffffff, v - 7, 5);
  }
  out[t] = v;
}
'''

EXITED = r'''
extern "C" __global__ void k(const int* x, int* out, int n, int use_active) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  int v = x[t];
  unsigned m = use_active ? __activemask() : 0xffffffffu;
  if (t & 1) v = __shfl_xor_sync(m, v, 1); else v = __shfl_xor_sync(m, v + 1, 1);
  out[t] = v;
}
'''

EXIT_INSIDE = r'''
extern "C" __global__ void k(const int* x, int* out) {
  int t = threadIdx.x, v = x[t];
  if (t & 1) {
    if (t > 20) { out[t] = -1; return; }
    v = __shfl_xor_sync(0xffffffff, v, 1);
  } else {
    v = __shfl_xor_sync(0xffffffff, v + 1, 1);
  }
  out[t] = v;
}
'''

UNMATCHED = r'''
extern "C" __global__ void k(const int* x, int* out) {
  int t = threadIdx.x, v = x[t];
  if (t & 1)
    v = __shfl_xor_sync(0xffffffff, v, 1);
  out[t] = v;
}
'''

SYNCWARP = r'''
extern "C" __global__ void k(int* out) {
  __shared__ int s[32];
  int t = threadIdx.x;
  if (t < 16) { s[t] = t * 3; __syncwarp(); } else { s[t] = t + 100; __syncwarp(); }
  out[t] = s[t ^ 16];
}
'''


def _put(emu, arr):
    addr = emu.alloc(arr.nbytes)
    emu.write(addr, arr)
    return addr


def _run(emu, n, *args, grid=1, block=None, dtype=np.int32, **kw):
    out = _put(emu, np.zeros(n, dtype))
    r = emu.launch("k", grid=grid, block=block or n, args=[*args[:1], out, *args[1:]], **kw)
    return r, emu.read(out, dtype, n)


def test_shfl_in_both_branches_meets(compile_ptx):
    emu = Emulator(compile_ptx(SHFL_BOTH))
    n = 128
    x = (np.arange(n, dtype=np.int32) * 7) % 23
    r, got = _run(emu, n, _put(emu, x), grid=2, block=64)
    assert r.status == "ok" and not r.barrier_errors, r.message
    t = np.arange(n)
    a = np.where(t & 1, x, x + 1)  # each lane's own operand
    np.testing.assert_array_equal(got, a[t ^ 1])


def test_ballot_in_both_branches(compile_ptx):
    emu = Emulator(compile_ptx(BALLOT_BOTH))
    x = np.array([(i * 5 + 3) % 17 for i in range(32)], dtype=np.int32)
    r, got = _run(emu, 32, _put(emu, x), dtype=np.uint32)
    assert r.status == "ok" and not r.barrier_errors, r.message
    pred = np.where(x % 3 == 0, x > 10, x > 5)
    want = sum(1 << i for i in range(32) if pred[i])
    np.testing.assert_array_equal(got, np.full(32, want, np.uint32))


def test_nested_divergence_meets_three_paths(compile_ptx):
    emu = Emulator(compile_ptx(NESTED))
    x = np.arange(32, dtype=np.int32) * 3 + 1
    r, got = _run(emu, 32, _put(emu, x))
    assert r.status == "ok" and not r.barrier_errors, r.message
    t = np.arange(32)
    a = np.where(t < 12, np.where(t & 1, x, x * 2), x - 7)
    np.testing.assert_array_equal(got, a[t ^ 5])


def test_membermask_excludes_exited_lanes(compile_ptx):
    emu = Emulator(compile_ptx(EXITED))
    n = 54  # the second warp has 22 live lanes, the rest returned at `if (t >= n) return;`
    x = (np.arange(64, dtype=np.int32) * 11) % 29
    t = np.arange(n)
    want = np.where(t & 1, x[:n], x[:n] + 1)[t ^ 1]
    for use_active in (1, 0):
        out = _put(emu, np.zeros(n, np.int32))
        r = emu.launch("k", grid=1, block=64, args=[_put(emu, x), out, n, use_active])
        assert r.status == "ok" and not r.barrier_errors, (use_active, r.message, r.barrier_errors)
        np.testing.assert_array_equal(emu.read(out, np.int32, n), want)


def test_lanes_exiting_inside_the_region_are_not_waited_for(compile_ptx):
    emu = Emulator(compile_ptx(EXIT_INSIDE))
    x = np.arange(32, dtype=np.int32) * 2
    r, got = _run(emu, 32, _put(emu, x))
    assert r.status == "ok" and not r.barrier_errors, (r.message, r.barrier_errors)
    t = np.arange(32)
    a = np.where(t & 1, x, x + 1)
    live = ~((t & 1) & (t > 20)).astype(bool)
    want = np.where(live, a[t ^ 1], -1)
    # even lanes whose partner exited read an undefined value: only check defined lanes
    defined = live & live[t ^ 1]
    np.testing.assert_array_equal(got[defined], want[defined])
    assert (got[~live] == -1).all()


def test_unmatched_collective_is_a_divergent_warp_error(compile_ptx):
    emu = Emulator(compile_ptx(UNMATCHED))
    x = np.arange(32, dtype=np.int32)
    r, got = _run(emu, 32, _put(emu, x))
    assert r.status == "ok", r.message  # reported, not hung, not crashed
    assert [e.kind for e in r.barrier_errors] == ["divergent-warp"]
    e = r.barrier_errors[0]
    assert e.line == 5 and e.block == (0, 0, 0)
    assert "shfl" in e.detail and "16 member lanes" in e.detail
    np.testing.assert_array_equal(got[::2], x[::2])  # the lanes that skipped the shuffle


def test_syncwarp_in_both_branches(compile_ptx):
    emu = Emulator(compile_ptx(SYNCWARP))
    out = _put(emu, np.zeros(32, np.int32))
    r = emu.launch("k", grid=1, block=32, args=[out])
    assert r.status == "ok" and not r.barrier_errors, r.message
    t = np.arange(32)
    s = np.where(t < 16, t * 3, t + 100)
    np.testing.assert_array_equal(emu.read(out, np.int32, 32), s[t ^ 16])
