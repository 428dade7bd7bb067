"""The emulator's record of which output elements a kernel wrote, and which it read first."""
import numpy as np
import pytest

from grader.compile import compile_source
from grader.emu import Emulator

pytest.importorskip("cupy_backends.cuda.libs.nvrtc")

SOURCE = r'''
extern "C" __global__ void accumulate(float* out, int n)      // reads out before writing it
{
    int i = threadIdx.x;
    if (i < n) out[i] += 1.0f;
}
extern "C" __global__ void zero_then_add(float* out, int n)   // writes first: no early read
{
    int i = threadIdx.x;
    if (i < n) { out[i] = 0.0f; out[i] += 1.0f; }
}
extern "C" __global__ void vector_store(float4* out, int n)   // one 16-byte store writes four elements
{
    int i = threadIdx.x;
    if (i < n / 4) out[i] = make_float4(1.f, 2.f, 3.f, 4.f);
}
extern "C" __global__ void atomic_into(float* out, int n)     // an atomic reads, then writes
{
    atomicAdd(&out[threadIdx.x % n], 1.0f);
}
'''


@pytest.fixture(scope="module")
def ptx() -> str:
    result = compile_source(SOURCE, "watch.cu")
    assert result.ok, result.log
    return result.ptx


def _launch(ptx: str, kernel: str, n: int, threads: int, watch: bool = True):
    emu = Emulator(ptx, "watch.cu")
    out = emu.alloc(4 * 64, name="out")
    if watch:
        emu.watch_output(out, 4)
    return emu.launch(kernel, grid=(1,), block=(threads,), args=[out, n])


def test_a_read_before_any_write_is_named_with_its_line(ptx):
    report = _launch(ptx, "accumulate", 10, 32)
    (read,) = report.output_reads
    assert (read.buffer, read.line, read.count) == ("out", 5, 10)
    assert report.unwritten == {"out": 54}  # 64 elements, 10 written


def test_writing_first_is_no_early_read(ptx):
    report = _launch(ptx, "zero_then_add", 64, 64)
    assert report.output_reads == () and report.unwritten == {"out": 0}


def test_a_vector_store_writes_every_element_it_covers(ptx):
    report = _launch(ptx, "vector_store", 40, 32)
    assert report.unwritten == {"out": 24}


def test_an_atomic_on_an_unwritten_output_is_an_early_read(ptx):
    report = _launch(ptx, "atomic_into", 8, 32)
    assert report.output_reads and report.output_reads[0].count == 8 and report.unwritten == {"out": 56}


def test_nothing_is_recorded_for_a_buffer_not_watched(ptx):
    report = _launch(ptx, "accumulate", 10, 32, watch=False)
    assert report.output_reads == () and report.unwritten == {}
