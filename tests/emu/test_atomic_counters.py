"""Atomics in the traffic counters: global atom/red sectors and requests, shared atomic wavefronts,
per source line, under Nsight Compute's names."""

from __future__ import annotations

import numpy as np

from grader.emu import Emulator
from grader.emu.ops_memory import COUNTER_KEYS

ATOM_SECT = "l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum"
RED_SECT = "l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum"
ATOM_REQ = "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum"
RED_REQ = "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum"
SH_ATOM_INST = "smsp__inst_executed_op_shared_atom.sum"
SH_ATOM_WAVES = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum"
ST_SECT = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"

PER_THREAD = r'''
extern "C" __global__ void sum(const float* x, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(out, x[i]);
}
'''

PER_BLOCK = r'''
extern "C" __global__ void sum(const float* x, float* out, int n) {
  __shared__ float s[128];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  s[t] = i < n ? x[i] : 0.f;
  __syncthreads();
  for (int k = 64; k > 0; k >>= 1) {
    if (t < k) s[t] += s[t + k];
    __syncthreads();
  }
  if (t == 0) atomicAdd(out, s[0]);
}
'''

USED_RESULT = r'''
extern "C" __global__ void claim(unsigned* counter, unsigned* slot, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) slot[i] = atomicAdd(counter, 1u);   // the old value is used: an ATOM
}
'''

SHARED_HIST = r'''
extern "C" __global__ void hist(const int* x, unsigned* bins, int n) {
  __shared__ unsigned h[32];
  int t = threadIdx.x;
  if (t < 32) h[t] = 0;
  __syncthreads();
  int i = blockIdx.x * blockDim.x + t;
  if (i < n) atomicAdd(&h[x[i] & 31], 1u);
  __syncthreads();
  if (t < 32) atomicAdd(&bins[t], h[t]);
}
'''


def _run(ptx, name, args_fn, grid, block):
    emu = Emulator(ptx)
    args = args_fn(emu)
    report = emu.launch(name, grid=grid, block=block, args=args)
    assert report.status == "ok", report.message
    return emu, args, report


def _floats(emu, n):
    addr = emu.alloc(4 * n)
    emu.write(addr, np.ones(n, dtype=np.float32))
    return addr


def test_every_atomic_key_is_reported_even_when_zero(compile_ptx):
    for key in (ATOM_SECT, RED_SECT, ATOM_REQ, RED_REQ, SH_ATOM_INST, SH_ATOM_WAVES):
        assert key in COUNTER_KEYS
    _, _, report = _run(compile_ptx(PER_BLOCK.replace("atomicAdd(out, s[0])", "out[blockIdx.x] = s[0]")),
                        "sum", lambda e: [_floats(e, 256), e.alloc(8), 256], 2, 128)
    assert report.counters[RED_SECT] == 0 and report.counters[ATOM_SECT] == 0


def test_one_atomic_per_thread_costs_a_sector_per_warp_against_one_per_block(compile_ptx):
    n = 1000
    _, (x, out, _), per_thread = _run(compile_ptx(PER_THREAD), "sum",
                                      lambda e: [_floats(e, n), e.alloc(4), n], 8, 128)
    emu, (x2, out2, _), per_block = _run(compile_ptx(PER_BLOCK), "sum",
                                         lambda e: [_floats(e, n), e.alloc(4), n], 8, 128)
    # atomicAdd's result is unused: ptxas makes it a RED, and so does the emulator's count.
    # 1000 threads in 32 warps (the last one partial), all lanes on one address: one request per warp,
    # and the lanes on one address served one after another, a sector each (as ncu counts on an H200).
    assert per_thread.counters[RED_SECT] == 1000 and per_thread.counters[RED_REQ] == 32
    assert per_thread.counters[ATOM_SECT] == 0
    # One lane per block: 8 requests of one sector each.
    assert per_block.counters[RED_SECT] == 8 and per_block.counters[RED_REQ] == 8
    assert emu.read(out2, np.float32, 1)[0] == n


def test_an_atomic_whose_result_is_used_counts_as_atom(compile_ptx):
    def args(e):
        return [e.alloc(4), e.alloc(4 * 100), 100]
    emu, (counter, slot, _), report = _run(compile_ptx(USED_RESULT), "claim", args, 1, 128)
    assert report.counters[ATOM_REQ] == 4 and report.counters[ATOM_SECT] == 100  # 100 lanes on one word
    assert report.counters[RED_REQ] == 0
    assert sorted(emu.read(slot, np.uint32, 100).tolist()) == list(range(100))


def test_counts_are_per_source_line(compile_ptx):
    _, _, report = _run(compile_ptx(PER_BLOCK), "sum", lambda e: [_floats(e, 256), e.alloc(4), 256], 2, 128)
    lines = {line for line, c in report.per_line.items() if c.get(RED_SECT)}
    assert lines == {PER_BLOCK.splitlines().index("  if (t == 0) atomicAdd(out, s[0]);") + 1}


def test_shared_atomics_count_instructions_and_wavefronts_by_distinct_words(compile_ptx):
    n = 64
    def args(e):
        x = e.alloc(4 * n)
        # warp 0: every lane on bin 0 (one word: one wavefront); warp 1: 32 distinct bins (one each)
        e.write(x, np.r_[np.zeros(32), np.arange(32)].astype(np.int32))
        return [x, e.alloc(4 * 32), n]
    emu, (_, bins, _), report = _run(compile_ptx(SHARED_HIST), "hist", args, 1, 64)
    assert report.counters[SH_ATOM_INST] == 2
    assert report.counters[SH_ATOM_WAVES] == 2
    got = emu.read(bins, np.uint32, 32)
    assert got[0] == 33 and (got[1:] == 1).all()
    # the merge: one warp of 32 lanes on 32 consecutive words, result unused -> RED
    assert report.counters[RED_SECT] == 4 and report.counters[RED_REQ] == 1
