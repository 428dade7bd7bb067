"""Emulator.free and the emulator backend's release of buffers after a launch."""

from __future__ import annotations

import numpy as np
import pytest

from grader.backends.emu import EmuDevice
from grader.emu import Emulator

COPY = r'''
__device__ int counter;
extern "C" __global__ void copy(const int* src, int* dst, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i];
}
'''


def test_a_launch_that_reads_a_freed_buffer_faults(compile_ptx):
    emu = Emulator(compile_ptx(COPY))
    src = emu.alloc(128, name="src")
    emu.write(src, np.arange(32, dtype=np.int32))
    dst = emu.alloc(128, name="dst")
    emu.free(src)
    r = emu.launch("copy", grid=1, block=32, args=[src, dst, 32])
    assert r.status == "ok", r.message
    assert {e.kind for e in r.memory_errors} == {"out-of-bounds-read"}
    assert "freed" in r.memory_errors[0].detail and "src" in r.memory_errors[0].detail
    assert not (emu.read(dst, np.int32, 32) == np.arange(32)).any()  # nothing of src was left to copy


def test_free_refuses_what_alloc_did_not_return(compile_ptx):
    emu = Emulator(compile_ptx(COPY))
    a = emu.alloc(16)
    with pytest.raises(ValueError):
        emu.free(emu.symbol("counter"))
    with pytest.raises(ValueError):
        emu.free(a + 4)
    emu.free(a)
    with pytest.raises(ValueError):
        emu.free(a)


def test_backend_releases_buffers_after_a_launch(compile_ptx, tmp_path):
    ptx = tmp_path / "copy.ptx"
    ptx.write_text(compile_ptx(COPY))
    device = EmuDevice()
    kernel = device.load(str(ptx), "copy")
    emu = kernel[0]
    first = device.upload("src", np.arange(32, dtype=np.int32) + 1000)
    out = device.empty("dst", np.dtype(np.int32), 32, fill_nan=False)
    assert device.launch(kernel, (1, 1, 1), (32, 1, 1), 0, [first.arg, out.arg, 32], step_limit=10_000).error is None
    np.testing.assert_array_equal(device.download(out), np.arange(32) + 1000)
    device.free([first, out])
    device.free([first])  # releasing twice is harmless
    assert emu.heap.find(first.arg) == -1 and emu.heap.find(out.arg) == -1
    assert not np.any(emu.heap.data.view(np.int32) >= 1000)  # the freed contents are gone too
    # a later launch handed the earlier launch's pointers finds nothing there
    second = device.empty("dst", np.dtype(np.int32), 32, fill_nan=False)
    outcome = device.launch(kernel, (1, 1, 1), (32, 1, 1), 0, [first.arg, second.arg, 32], step_limit=10_000)
    assert outcome.findings["memory_errors"] and "freed" in outcome.findings["memory_errors"][0]["detail"]


def test_buffers_sit_where_the_gpu_backend_puts_them_modulo_4k(compile_ptx, tmp_path):
    """GpuBufferPlacement: each buffer a CuPy block of 4 KiB guard + data + 4 KiB guard, rounded to
    512 bytes, packed in allocation order; a freed block is reused. The histogram golden's launch:
    data (4,099 bytes) in a 12,800-byte block, so bins at 12,800 + 4,096, 512 mod 4096 (as on the GPU)."""
    from grader.backends.emu import GpuBufferPlacement

    ptx = tmp_path / "copy.ptx"
    ptx.write_text(compile_ptx(COPY))
    device = EmuDevice()
    device.load(str(ptx), "copy")
    data = device.upload("data", np.zeros(4099, dtype=np.uint8))
    bins = device.empty("bins", np.dtype(np.uint32), 256, fill_nan=True)
    assert (data.arg % 4096, bins.arg % 4096) == (0, 512)
    device.free([bins])
    again = device.empty("bins", np.dtype(np.uint32), 256, fill_nan=True)
    assert again.arg % 4096 == 512 and again.arg != bins.arg  # the GPU's block again, at a fresh address

    p = GpuBufferPlacement()
    first = p.place(np.dtype(np.uint8), 4099)  # a 12,800-byte block at 0
    second = p.place(np.dtype(np.uint32), 256)  # a 9,216-byte block at 12,800
    assert (first, second) == (4096, 12800 + 4096)
    p.release(first)
    third = p.place(np.dtype(np.uint32), 256)
    assert third == 4096  # split from the freed 12,800-byte block; 3,584 bytes at 9,216 stay free
    p.release(second)
    assert p.place(np.dtype(np.uint16), 3) == 12800 + 4096  # 8,704 bytes: the smallest free block that fits
    assert p.place(np.dtype(np.uint8), 100) == 12800 + 9216 + 4096  # 8,704 bytes again: a new block
    p.release(third)  # merges with the 3,584 bytes after it (one cudaMalloc): 12,800 bytes at 0 again
    assert p.place(np.dtype(np.uint8), 4099) == 4096
