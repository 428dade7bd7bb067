"""WARP_SZ and the special registers: kernels compiled from CUDA C by NVRTC read each one."""

from __future__ import annotations

import numpy as np
import pytest

from grader.emu import Emulator

WARPSIZE = r'''
extern "C" __global__ void warp_sum(const int* in, int* out) {
  int lane = threadIdx.x % warpSize;
  int warp = threadIdx.x / warpSize;
  int v = in[blockIdx.x * blockDim.x + threadIdx.x];
  for (int o = warpSize / 2; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);
  if (lane == 0) out[blockIdx.x * (blockDim.x / warpSize) + warp] = v;
  if (threadIdx.x == 0 && blockIdx.x == 0) out[gridDim.x * (blockDim.x / warpSize)] = warpSize;
}
'''

# one column per special register, read through inline asm as a student's asm() would
SPECIALS = ["%tid.x", "%tid.y", "%ntid.x", "%ntid.y", "%ctaid.x", "%nctaid.x", "%laneid", "%warpid",
            "%nwarpid", "%lanemask_eq", "%lanemask_le", "%lanemask_lt", "%lanemask_ge", "%lanemask_gt",
            "%dynamic_smem_size", "%total_smem_size", "%smid", "%nsmid"]
_READS = "\n".join(
    f'  asm volatile("mov.u32 %0, {r};" : "=r"(v)); out[t * NCOLS + {i}] = v;'
    for i, r in enumerate(SPECIALS)
)
SPECIAL_SRC = (r'''
extern "C" __global__ void specials(unsigned* out) {
  __shared__ unsigned pad[16];
  unsigned v;
  unsigned t = (blockIdx.x * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  if (threadIdx.y == 0 && threadIdx.x < 16) pad[threadIdx.x] = threadIdx.x * 7 + blockIdx.x;
''' + _READS.replace("%", "%%").replace("%%0", "%0") + r'''
  __syncthreads();
  out[t * NCOLS + NCOLS - 1] = pad[(threadIdx.x + 1) % 16];
}
''').replace("NCOLS", str(len(SPECIALS) + 1))

CLOCKS = r'''
extern "C" __global__ void clocks(long long* out, int n) {
  long long t0 = clock64();
  unsigned c0 = clock();
  unsigned long long g0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
  float s = 0.f;
  for (int i = 0; i < n; ++i) s += i * 0.5f;
  long long t1 = clock64();
  unsigned c1 = clock();
  unsigned long long g1;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1));
  unsigned hi;
  asm volatile("mov.u32 %0, %%clock_hi;" : "=r"(hi));
  out[threadIdx.x * 5 + 0] = t1 - t0;
  out[threadIdx.x * 5 + 1] = (long long)(c1 - c0);
  out[threadIdx.x * 5 + 2] = (long long)(g1 - g0);
  out[threadIdx.x * 5 + 3] = hi;
  out[threadIdx.x * 5 + 4] = (long long)s;
}
'''


def test_warpsize_reduction_runs(compile_ptx):
    ptx = compile_ptx(WARPSIZE)
    assert "WARP_SZ" in ptx  # the construct under test is really in the PTX
    emu = Emulator(ptx)
    grid, block = 3, 128
    x = np.arange(grid * block, dtype=np.int32) % 97
    a = emu.alloc(x.nbytes)
    emu.write(a, x)
    nw = grid * block // 32
    o = emu.alloc(4 * (nw + 1))
    r = emu.launch("warp_sum", grid=(grid,), block=(block,), args=[a, o])
    assert r.status == "ok", r.message
    got = emu.read(o, np.int32, nw + 1)
    np.testing.assert_array_equal(got[:nw], x.reshape(nw, 32).sum(axis=1))
    assert got[nw] == 32


def test_special_register_values(compile_ptx):
    emu = Emulator(compile_ptx(SPECIAL_SRC))
    bx, by, gx, dyn = 40, 2, 3, 24
    n = bx * by * gx
    ncol = len(SPECIALS) + 1
    o = emu.alloc(4 * n * ncol)
    r = emu.launch("specials", grid=(gx,), block=(bx, by), shared_bytes=dyn, args=[o])
    assert r.status == "ok", r.message
    got = emu.read(o, np.uint32, n * ncol).reshape(gx, by, bx, ncol)
    col = {name: got[..., i] for i, name in enumerate(SPECIALS)}
    b, y, x = np.meshgrid(np.arange(gx), np.arange(by), np.arange(bx), indexing="ij")
    flat = y * bx + x  # linear thread index in the block
    lane = (flat % 32).astype(np.uint64)
    np.testing.assert_array_equal(col["%tid.x"], x)
    np.testing.assert_array_equal(col["%tid.y"], y)
    assert (col["%ntid.x"] == bx).all() and (col["%ntid.y"] == by).all()
    np.testing.assert_array_equal(col["%ctaid.x"], b)
    assert (col["%nctaid.x"] == gx).all()
    np.testing.assert_array_equal(col["%laneid"], lane)
    np.testing.assert_array_equal(col["%warpid"], flat // 32)
    assert (col["%nwarpid"] == (bx * by + 31) // 32).all()
    eq = (np.uint64(1) << lane)
    m32 = np.uint64(0xFFFFFFFF)
    np.testing.assert_array_equal(col["%lanemask_eq"], eq)
    np.testing.assert_array_equal(col["%lanemask_lt"], eq - np.uint64(1))
    np.testing.assert_array_equal(col["%lanemask_le"], (eq << np.uint64(1)) - np.uint64(1))
    np.testing.assert_array_equal(col["%lanemask_gt"], ~((eq << np.uint64(1)) - np.uint64(1)) & m32)
    np.testing.assert_array_equal(col["%lanemask_ge"], ~(eq - np.uint64(1)) & m32)
    assert (col["%dynamic_smem_size"] == dyn).all()
    # the hardware adds reserved and rounded-up space; the static array and the dynamic bytes at least
    assert (col["%total_smem_size"] >= dyn + 64).all()
    np.testing.assert_array_equal(got[..., -1], (x + 1) % 16 * 7 + b)
    assert (col["%smid"] < col["%nsmid"]).all()


def test_clocks_are_deterministic_and_advance(compile_ptx):
    emu = Emulator(compile_ptx(CLOCKS))
    outs = []
    for _ in range(2):
        o = emu.alloc(8 * 5 * 64)
        r = emu.launch("clocks", grid=(1,), block=(64,), args=[o, 10])
        assert r.status == "ok", r.message
        outs.append(emu.read(o, np.int64, 5 * 64).reshape(64, 5))
    np.testing.assert_array_equal(outs[0], outs[1])  # same file, same numbers
    d = outs[0]
    assert (d[:, 0] > 0).all() and (d[:, 1] > 0).all() and (d[:, 2] > 0).all()
    assert (d[:, 3] == 0).all()  # %clock_hi: the high half of a small count
    assert (d[:, 4] == int(sum(i * 0.5 for i in range(10)))).all()


@pytest.mark.parametrize("reg", ["%clusterid.x", "%envreg3", "%pm0"])
def test_an_unmodelled_special_register_is_refused_with_its_line(compile_ptx, reg):
    src = r'''
extern "C" __global__ void k(unsigned* out) {
  unsigned v;
  asm volatile("mov.u32 %0, REG;" : "=r"(v));
  out[threadIdx.x] = v;
}
'''.replace("REG", reg.replace("%", "%%"))
    emu = Emulator(compile_ptx(src))
    o = emu.alloc(4 * 32)
    r = emu.launch("k", grid=(1,), block=(32,), args=[o])
    assert r.status == "unsupported"
    assert reg in r.message and "line 4" in r.message
