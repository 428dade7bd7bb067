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
