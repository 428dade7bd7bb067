"""End-to-end: the rest of the course kernels and the launch outcomes (trap, step limit, barriers)."""

from __future__ import annotations

import numpy as np
import pytest

from grader.emu import Emulator

TRANSPOSE = r'''
#define T 32
extern "C" __global__ void transpose(const float* in, float* out, int rows, int cols) {
  __shared__ float tile[T][T + PAD];
  int x = blockIdx.x * T + threadIdx.x, y = blockIdx.y * T + threadIdx.y;
  if (x < cols && y < rows) tile[threadIdx.y][threadIdx.x] = in[y * cols + x];
  __syncthreads();
  x = blockIdx.y * T + threadIdx.x; y = blockIdx.x * T + threadIdx.y;
  if (x < rows && y < cols) out[y * rows + x] = tile[threadIdx.x][threadIdx.y];
}
'''

REDUCE = r'''
extern "C" __global__ void block_sum(const float* x, float* out, int n) {
  __shared__ float warp_sums[32];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? x[i] : 0.f;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (blockDim.x + 31) / 32 ? warp_sums[lane] : 0.f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    if (lane == 0) out[blockIdx.x] = v;
  }
}
'''

RMSNORM = r'''
extern "C" __global__ void rmsnorm(const float* x, const float* w, float* y, int d, float eps) {
  __shared__ float partial[256];
  const float* row = x + blockIdx.x * d;
  float s = 0.f;
  for (int j = threadIdx.x; j < d; j += blockDim.x) s += row[j] * row[j];
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) partial[threadIdx.x] += partial[threadIdx.x + k];
    __syncthreads();
  }
  float inv = rsqrtf(partial[0] / d + eps);
  for (int j = threadIdx.x; j < d; j += blockDim.x) y[blockIdx.x * d + j] = row[j] * inv * w[j];
}
'''

SWIGLU = r'''
extern "C" __global__ void swiglu(const float* x, const float* g, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { float v = x[i]; out[i] = v / (1.f + expf(-v)) * g[i]; }
}
'''

VADD4 = r'''
extern "C" __global__ void vadd4(const float4* a, const float4* b, float4* c, int n4) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) { float4 p = a[i], q = b[i]; c[i] = make_float4(p.x + q.x, p.y + q.y, p.z + q.z, p.w + q.w); }
}
'''

ATOMIC = r'''
extern "C" __global__ void hist(const int* v, int* bins, float* total, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { atomicAdd(&bins[v[i] % 8], 1); atomicAdd(total, 0.5f); }
}
'''

MISC = r'''
extern "C" __global__ void chatty(int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0) printf("hello %d %f\n", n, 1.5);
  if (i < n) out[i] = i * 2;
}
extern "C" __global__ void trapper(int* out, int n) {
  int i = threadIdx.x;
  out[i] = 1;
  if (i == n) __trap();
}
extern "C" __global__ void asm_trapper(int n) { if (threadIdx.x == n) asm("trap;"); }
extern "C" __global__ void asserter(int n) { assert(threadIdx.x < n); }
extern "C" __global__ void spin(volatile int* flag) { while (flag[0] == 0) { } }
'''

PERSIST = r'''
__device__ int calls = 0;
__device__ float cache[4] = {1.f, 2.f, 3.f, 4.f};
extern "C" __global__ void bump(int* out) {
  if (threadIdx.x == 0) { calls += 1; out[0] = calls; out[1] = (int)cache[3]; }
}
'''

DIVERGENT_BARRIER = r'''
extern "C" __global__ void bad_tiled(const float* A, const float* B, float* C, int N) {
  __shared__ float As[32][32];
  __shared__ float Bs[32][32];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * 32 + ty, col = blockIdx.x * 32 + tx;
  if (row < N && col < N) {
    float s = 0.f;
    for (int t = 0; t < (N + 31) / 32; ++t) {
      As[ty][tx] = t * 32 + tx < N ? A[row * N + t * 32 + tx] : 0.f;
      Bs[ty][tx] = t * 32 + ty < N ? B[(t * 32 + ty) * N + col] : 0.f;
      __syncthreads();
      for (int k = 0; k < 32; ++k) s += As[ty][k] * Bs[k][tx];
      __syncthreads();
    }
    C[row * N + col] = s;
  }
}
'''


def _put(emu, name, arr):
    addr = emu.alloc(arr.nbytes, name=name)
    emu.write(addr, arr)
    return addr


@pytest.mark.parametrize("pad,conflicts", [(1, False), (0, True)])
def test_transpose(compile_ptx, pad, conflicts):
    emu = Emulator(compile_ptx(TRANSPOSE.replace("PAD", str(pad))))
    rows, cols = 45, 70
    x = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
    src, dst = _put(emu, "in", x), _put(emu, "out", np.zeros(rows * cols, np.float32))
    r = emu.launch("transpose", grid=((cols + 31) // 32, (rows + 31) // 32), block=(32, 32),
                   args=[src, dst, rows, cols])
    assert r.status == "ok", r.message
    np.testing.assert_array_equal(emu.read(dst, np.float32, rows * cols).reshape(cols, rows), x.T)
    bc = r.counters["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"]
    assert (bc > 0) == conflicts
    if conflicts:
        # warp ty of block (bx, by) reads column ty of an unpadded tile: its a active lanes all hit
        # one bank, a wavefronts, a - 1 conflicts
        want = 0
        for bx in range((cols + 31) // 32):
            for by in range((rows + 31) // 32):
                for ty in range(32):
                    a = sum(1 for tx in range(32) if by * 32 + tx < rows) if bx * 32 + ty < cols else 0
                    want += max(a - 1, 0)
        assert bc == want
    assert r.counters["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"] == 0
    assert r.hazards == () and r.barrier_errors == ()


def test_reduction_with_shuffles(compile_ptx):
    emu = Emulator(compile_ptx(REDUCE))
    n, bs = 1000, 256
    x = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    nb = (n + bs - 1) // bs
    src, out = _put(emu, "x", x), _put(emu, "out", np.zeros(nb, np.float32))
    r = emu.launch("block_sum", grid=(nb,), block=(bs,), args=[src, out, n])
    assert r.status == "ok", r.message
    want = np.array([x[i * bs:(i + 1) * bs].astype(np.float64).sum() for i in range(nb)])
    np.testing.assert_allclose(emu.read(out, np.float32, nb), want, rtol=1e-5, atol=1e-4)
    assert r.hazards == ()


def test_reduction_block_not_multiple_of_32(compile_ptx):
    emu = Emulator(compile_ptx(REDUCE))
    n, bs = 50, 48
    x = np.ones(n, np.float32)
    out = _put(emu, "out", np.zeros(2, np.float32))
    r = emu.launch("block_sum", grid=(2,), block=(bs,), args=[_put(emu, "x", x), out, n])
    assert r.status == "ok", r.message
    np.testing.assert_array_equal(emu.read(out, np.float32, 2), [48.0, 2.0])


def test_rmsnorm(compile_ptx):
    emu = Emulator(compile_ptx(RMSNORM))
    rows, d = 5, 300
    rng = np.random.default_rng(5)
    x = rng.standard_normal((rows, d)).astype(np.float32)
    w = rng.standard_normal(d).astype(np.float32)
    y = _put(emu, "y", np.zeros(rows * d, np.float32))
    r = emu.launch("rmsnorm", grid=(rows,), block=(256,), args=[_put(emu, "x", x), _put(emu, "w", w), y, d, 1e-6])
    assert r.status == "ok", r.message
    x64 = x.astype(np.float64)
    want = x64 / np.sqrt((x64 ** 2).mean(axis=1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(emu.read(y, np.float32, rows * d).reshape(rows, d), want, rtol=1e-4, atol=1e-5)
    assert r.hazards == () and r.uninit_reads == ()


def test_swiglu(compile_ptx):
    emu = Emulator(compile_ptx(SWIGLU))
    n = 777
    rng = np.random.default_rng(9)
    x = (rng.standard_normal(n) * 4).astype(np.float32)
    g = rng.standard_normal(n).astype(np.float32)
    out = _put(emu, "out", np.zeros(n, np.float32))
    r = emu.launch("swiglu", grid=(4,), block=(256,), args=[_put(emu, "x", x), _put(emu, "g", g), out, n])
    assert r.status == "ok", r.message
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(emu.read(out, np.float32, n), x64 / (1 + np.exp(-x64)) * g, rtol=1e-5, atol=1e-6)


def test_float4_vector_add(compile_ptx):
    emu = Emulator(compile_ptx(VADD4))
    n4 = 99
    rng = np.random.default_rng(2)
    a = rng.standard_normal(4 * n4).astype(np.float32)
    b = rng.standard_normal(4 * n4).astype(np.float32)
    c = _put(emu, "C", np.zeros(4 * n4, np.float32))
    r = emu.launch("vadd4", grid=(1,), block=(128,), args=[_put(emu, "A", a), _put(emu, "B", b), c, n4])
    assert r.status == "ok", r.message
    np.testing.assert_array_equal(emu.read(c, np.float32, 4 * n4), a + b)
    # 99 float4 = 1584 bytes = 49.5 sectors per buffer, 4 warps
    assert r.counters["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"] == 50
    assert r.counters["l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"] == 4


def test_atomics(compile_ptx):
    emu = Emulator(compile_ptx(ATOMIC))
    n = 1001
    v = np.random.default_rng(4).integers(0, 1000, n).astype(np.int32)
    bins = _put(emu, "bins", np.zeros(8, np.int32))
    total = _put(emu, "total", np.zeros(1, np.float32))
    r = emu.launch("hist", grid=(4,), block=(256,), args=[_put(emu, "v", v), bins, total, n])
    assert r.status == "ok", r.message
    np.testing.assert_array_equal(emu.read(bins, np.int32, 8), np.bincount(v % 8, minlength=8))
    assert emu.read(total, np.float32, 1)[0] == np.float32(0.5 * n)


def test_printf_prints_and_leaves_the_kernel_alone(compile_ptx, capsys):
    emu = Emulator(compile_ptx(MISC))
    out = _put(emu, "out", np.zeros(40, np.int32))
    r = emu.launch("chatty", grid=(2,), block=(32,), args=[out, 40])
    assert r.status == "ok", r.message
    np.testing.assert_array_equal(emu.read(out, np.int32, 40), np.arange(40) * 2)
    assert r.memory_errors == ()
    assert capsys.readouterr().out == "hello 40 1.500000\n"


@pytest.mark.parametrize("kernel,args", [("trapper", "out"), ("asm_trapper", None), ("asserter", None)])
def test_trap_status(compile_ptx, kernel, args):
    emu = Emulator(compile_ptx(MISC))
    params = [5] if args is None else [_put(emu, "out", np.zeros(32, np.int32)), 5]
    r = emu.launch(kernel, grid=(1,), block=(32,), args=params)
    assert r.status == "trap", r.message
    assert "line" in r.message
    # the same kernels finish when the condition never holds
    params = [99] if args is None else [params[0], 99]
    assert emu.launch(kernel, grid=(1,), block=(32,), args=params).status == "ok"


def test_endless_loop_hits_step_limit(compile_ptx):
    emu = Emulator(compile_ptx(MISC))
    flag = _put(emu, "flag", np.zeros(1, np.int32))
    r = emu.launch("spin", grid=(1,), block=(32,), args=[flag], step_limit=5000)
    assert r.status == "step-limit"
    assert r.steps == 5000


def test_device_variable_persists_across_launches(compile_ptx):
    emu = Emulator(compile_ptx(PERSIST))
    out = _put(emu, "out", np.zeros(2, np.int32))
    for k in (1, 2, 3):
        assert emu.launch("bump", grid=(1,), block=(32,), args=[out]).status == "ok"
        np.testing.assert_array_equal(emu.read(out, np.int32, 2), [k, 4])
    assert emu.read(emu.symbol("calls"), np.int32, 1)[0] == 3


def test_barrier_inside_bounds_guard_reads_tiles_nobody_wrote(compile_ptx):
    """The threads outside the guard go straight to the kernel's end and exit; PTX releases a barrier
    that only exited threads hold up (compute-sanitizer's synccheck reports nothing), so the barrier
    itself is no error. What breaks is the tile: the exited threads never loaded their elements, and
    the threads inside the guard read them at line 13."""
    ptx = compile_ptx(DIVERGENT_BARRIER)
    n = 33
    emu = Emulator(ptx)
    a = _put(emu, "A", np.ones((n, n), np.float32))
    b = _put(emu, "B", np.ones((n, n), np.float32))
    c = _put(emu, "C", np.zeros((n, n), np.float32))
    r = emu.launch("bad_tiled", grid=(2, 2), block=(32, 32), args=[a, b, c, n])
    assert r.status == "ok", r.message
    assert r.barrier_errors == ()
    assert {u.line for u in r.uninit_reads} == {13}
    assert any(u.block[0] == 1 for u in r.uninit_reads)
    # at N = 32 every thread takes the branch: no finding
    emu = Emulator(ptx)
    a = _put(emu, "A", np.ones((32, 32), np.float32))
    r = emu.launch("bad_tiled", grid=(1, 1), block=(32, 32), args=[a, a, _put(emu, "C", np.zeros(1024, np.float32)), 32])
    assert r.status == "ok" and r.barrier_errors == () and r.uninit_reads == ()


EARLY_RETURN = r'''
extern "C" __global__ void early(const float* x, float* out, int n) {
  __shared__ float s[64];
  int t = threadIdx.x;
  if (t >= n) return;
  s[t] = x[t];
  __syncthreads();
  out[t] = s[n - 1 - t];
}
'''

HALF_WARP_BARRIER = r'''
extern "C" __global__ void half(const float* x, float* out, int n) {
  __shared__ float s[64];
  int t = threadIdx.x;
  s[t] = x[t];
  if (t < 16) __syncthreads();
  out[t] = s[63 - t];
}
'''


def test_early_return_before_barrier_is_no_barrier_error(compile_ptx):
    """`if (t >= n) return;` then __syncthreads(): the returning lanes exit, and PTX's bar.sync waits
    only for threads that have not exited, so the kernel is right when no one reads what the
    returned threads would have written."""
    emu = Emulator(compile_ptx(EARLY_RETURN))
    x = _put(emu, "x", np.arange(64, dtype=np.float32))
    out = _put(emu, "out", np.zeros(64, np.float32))
    r = emu.launch("early", grid=(1,), block=(64,), args=[x, out, 40])
    assert r.status == "ok", r.message
    assert r.barrier_errors == () and r.uninit_reads == ()
    np.testing.assert_array_equal(emu.read(out, np.float32, 40), np.arange(40, dtype=np.float32)[::-1])


def test_barrier_some_lanes_skip_and_run_on_is_reported(compile_ptx):
    """Lanes that skip a barrier and go on running (not exiting) are a barrier error."""
    emu = Emulator(compile_ptx(HALF_WARP_BARRIER))
    x = _put(emu, "x", np.arange(64, dtype=np.float32))
    out = _put(emu, "out", np.zeros(64, np.float32))
    r = emu.launch("half", grid=(1,), block=(64,), args=[x, out, 64])
    assert {e.kind for e in r.barrier_errors} == {"divergent-warp"}


DYNAMIC_SHARED = r'''
extern "C" __global__ void dyn_sum(const float* x, float* out, int n) {
  extern __shared__ float buf[];
  int t = threadIdx.x;
  buf[t] = t < n ? x[t] : 0.f;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (t < k) buf[t] += buf[t + k];
    __syncthreads();
  }
  if (t == 0) out[0] = buf[0];
}
'''


def test_dynamic_shared_memory(compile_ptx):
    emu = Emulator(compile_ptx(DYNAMIC_SHARED))
    x = np.arange(100, dtype=np.float32)
    out = _put(emu, "out", np.zeros(1, np.float32))
    r = emu.launch("dyn_sum", grid=(1,), block=(128,), shared_bytes=128 * 4, args=[_put(emu, "x", x), out, 100])
    assert r.status == "ok", r.message
    assert emu.read(out, np.float32, 1)[0] == x.sum()
    assert r.hazards == () and r.memory_errors == ()
    # too little dynamic shared memory for the block: reported, not a crash
    r = emu.launch("dyn_sum", grid=(1,), block=(128,), shared_bytes=64 * 4, args=[_put(emu, "x2", x), out, 100])
    assert any(e.space == "shared" for e in r.memory_errors)
