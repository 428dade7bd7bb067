"""Device printf on the emulator: CUDA formatting, (block, thread) order, a per-launch cap."""

from __future__ import annotations

import time

import numpy as np

from grader.emu import Emulator
from grader.emu.printf import MAX_BYTES, parse_format

SIMPLE = r'''
extern "C" __global__ void k() { printf("%d %f\n", threadIdx.x, 1.5f); }
'''

CONVERSIONS = r'''
extern "C" __global__ void k(float f, double d, long long big, const char* none) {
  printf("%i|%u|%x|%X|%#x|%o|%c|%5d|%-5d|%05d|%+d|%.3d|%ld|%lld|%llu|%hhd|%hd\n",
         -7, -1, 255, 255, 255, 8, 'z', 42, 42, 42, 42, 7, big, big, big, 300, 70000);
  printf("%f|%.2f|%8.3f|%e|%.3E|%g|%g|%G|%s|%.2s|%5s|%p|%%|%*d|%.*f\n",
         f, f, d, d, d, 0.0001, 1e20, 1e-20, "str", "abc", "ab", none, 6, 1, 3, f);
}
'''

ORDER = r'''
extern "C" __global__ void k() {
  int t = threadIdx.x;
  if (t % 2) printf("odd %d.%d\n", blockIdx.x, t); else printf("even %d.%d\n", blockIdx.x, t);
  if (t == 1) printf("again %d.%d\n", blockIdx.x, t);
}
'''

FLOOD = r'''
extern "C" __global__ void k(int reps) {
  for (int i = 0; i < reps; ++i) printf("thread %d block %d step %d\n", threadIdx.x, blockIdx.x, i);
}
'''


def test_format_layout_follows_natural_alignment():
    f = parse_format(b"%d %f %s %c %lld %g %x %p %*d\n")
    assert f.args == ((0, 4), (8, 8), (16, 8), (24, 4), (32, 8), (40, 8), (48, 4), (56, 8), (64, 4), (68, 4))


def test_printf_thread_and_float(compile_ptx, capsys):
    emu = Emulator(compile_ptx(SIMPLE))
    r = emu.launch("k", grid=2, block=3)
    assert r.status == "ok", r.message
    assert capsys.readouterr().out == "0 1.500000\n1 1.500000\n2 1.500000\n" * 2


def test_printf_conversions_like_c(compile_ptx, capsys):
    emu = Emulator(compile_ptx(CONVERSIONS))
    big = -(1 << 40) - 5
    r = emu.launch("k", grid=1, block=1, args=[2.25, 12345.678, big, 0])
    assert r.status == "ok", r.message
    line1 = "%i|%u|%x|%X|%#x|%o|%c|%5d|%-5d|%05d|%+d|%.3d|%d|%d|%d|%d|%d\n" % (
        -7, 2**32 - 1, 255, 255, 255, 8, "z", 42, 42, 42, 42, 7, big, big, big + 2**64, 44, 4464)
    line2 = "%f|%.2f|%8.3f|%e|%.3E|%g|%g|%G|%s|%.2s|%5s|%s|%%|%*d|%.*f\n" % (
        2.25, 2.25, 12345.678, 12345.678, 12345.678, 0.0001, 1e20, 1e-20, "str", "abc", "ab", "(nil)",
        6, 1, 3, 2.25)
    assert capsys.readouterr().out == line1 + line2


def test_printf_order_is_block_then_thread(compile_ptx, capsys):
    emu = Emulator(compile_ptx(ORDER))
    r = emu.launch("k", grid=2, block=40)
    assert r.status == "ok", r.message
    want = []
    for b in range(2):
        for t in range(40):
            want.append(f"{'odd' if t % 2 else 'even'} {b}.{t}")
            if t == 1:
                want.append(f"again {b}.{t}")
    assert capsys.readouterr().out.splitlines() == want


def test_printf_flood_is_capped_and_fast(compile_ptx, capsys):
    emu = Emulator(compile_ptx(FLOOD))
    start = time.perf_counter()
    r = emu.launch("k", grid=2048, block=256, args=[2])
    elapsed = time.perf_counter() - start
    assert r.status == "ok", r.message
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert len(out.encode()) <= MAX_BYTES + 200
    assert lines[:3] == ["thread 0 block 0 step 0", "thread 0 block 0 step 1", "thread 1 block 0 step 0"]
    printed = len(lines) - 1
    assert lines[-1] == (f"[emulator] printf output capped at 100,000 lines or {MAX_BYTES:,} bytes per "
                         f"launch: {2048 * 256 * 2 - printed:,} more printf calls dropped")
    assert elapsed < 10, elapsed  # about 1 s on an idle machine


def test_no_printf_output_without_printf(compile_ptx, capsys):
    emu = Emulator(compile_ptx('extern "C" __global__ void k(int* o) { o[threadIdx.x] = 1; }'))
    out = emu.alloc(128)
    assert emu.launch("k", grid=1, block=32, args=[out]).status == "ok"
    assert capsys.readouterr().out == ""
    np.testing.assert_array_equal(emu.read(out, np.int32, 32), 1)
