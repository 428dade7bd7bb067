"""Buffer and scalar types beyond float and int: spec, default inputs, GPU canary layout, and a
launch through the emulator backend with every new type."""
import numpy as np
import pytest

from grader import spec as spec_module
from grader.backends.base import CANARY_BITS, GUARD_ELEMENTS
from grader.backends.gpu import canary_words_damaged, guard_layout

SPEC = {
    "id": "types", "title": "Types", "sizes": ["n"],
    "kernel": {"name": "k", "params": [
        {"name": "h", "type": "const __half*", "role": "in", "shape": ["n"]},
        {"name": "d", "type": "const double*", "role": "in", "shape": ["n"]},
        {"name": "c", "type": "const unsigned char*", "role": "in", "shape": ["n"]},
        {"name": "u", "type": "unsigned int*", "role": "out", "shape": ["n"]},
        {"name": "o", "type": "double*", "role": "out", "shape": ["n"]},
        {"name": "ho", "type": "__half*", "role": "out", "shape": ["n"]},
        {"name": "big", "type": "long long", "value": "n * 1000000000"},
        {"name": "scale", "type": "double", "value": "0.5"},
        {"name": "n", "type": "int", "value": "n"}],
        "block": ["64"], "grid": ["ceil(n / 64)"]},
    "cases": {"public": [{"n": 1}, {"n": 100}]},
    "checks": {"correctness": {"points": 10}},
}

KERNEL = r'''
#include <cuda_fp16.h>
extern "C" __global__ void k(const __half* h, const double* d, const unsigned char* c, unsigned int* u, double* o,
                             __half* ho, long long big, double scale, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    u[i] = (unsigned)c[i] + (unsigned)(big / 1000000000LL);
    o[i] = d[i] * scale;
    ho[i] = __hadd(h[i], h[i]);
  }
}
'''


def test_new_types_load_and_map_to_numpy_dtypes():
    spec = spec_module.from_dict(SPEC)
    assert [p.dtype for p in spec.kernel.params] == [
        "float16", "float64", "uint8", "uint32", "float64", "float16", "int64", "float64", "int32"]
    assert "const __half* h" in spec.kernel.signature and "long long big" in spec.kernel.signature


@pytest.mark.parametrize("dtype, count", [(np.float16, 7), (np.float16, 8), (np.float64, 5), (np.uint8, 3),
                                          (np.float32, 9)])
def test_gpu_canaries_cover_4_kib_on_each_side_in_whole_words(dtype, count):
    dt = np.dtype(dtype)
    guard, total = guard_layout(dt, count)
    assert guard * dt.itemsize == GUARD_ELEMENTS * 4 and (total * dt.itemsize) % 4 == 0
    raw = np.zeros(total, dtype=dt)
    raw.view(np.uint32)[...] = CANARY_BITS
    raw[guard:guard + count] = 0  # the kernel's writes inside the buffer
    assert canary_words_damaged(raw.view(np.uint32), dt, count) == {}
    raw[guard - 1] = 1  # one element before
    raw[total - 1] = 1  # the last element after
    words = max(1, dt.itemsize // 4)  # canary words one element covers
    assert canary_words_damaged(raw.view(np.uint32), dt, count) == {"before": words, "after": words}


def test_every_new_type_runs_through_the_emulator_backend(tmp_path):
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    from grader.backends.emu import EmuDevice
    from grader.compile import compile_source
    from grader.run.child.launch import launch_kernel

    compiled = compile_source(KERNEL, "k.cu", "sm_90")
    if not compiled.ok and "cuda_fp16.h" in compiled.log:
        pytest.skip("this NVRTC bundles no cuda_fp16.h")
    assert compiled.ok, compiled.log
    artifact = tmp_path / "k.ptx"
    artifact.write_text(compiled.ptx)
    spec = spec_module.from_dict(SPEC)
    rng = np.random.default_rng(0)
    inputs = {"h": rng.uniform(-1, 1, 100).astype(np.float16), "d": rng.uniform(-1, 1, 100),
              "c": rng.integers(0, 256, 100).astype(np.uint8)}
    device = EmuDevice()
    kernel = device.load(str(artifact), "k")
    launched = launch_kernel(spec, device, kernel, {"n": 100}, inputs, step_limit=100_000)
    assert launched.outcome.error is None, launched.outcome.error
    out = launched.contents
    assert np.array_equal(out["u"], inputs["c"].astype(np.uint32) + 100)
    assert np.array_equal(out["o"], inputs["d"] * 0.5)
    assert np.array_equal(out["ho"], inputs["h"] + inputs["h"])


BF16_SPEC = {
    "id": "bf", "title": "bf16", "sizes": ["n"],
    "kernel": {"name": "scale", "params": [
        {"name": "x", "type": "const __nv_bfloat16*", "role": "in", "shape": ["n"]},
        {"name": "y", "type": "__nv_bfloat16*", "role": "out", "shape": ["n"]},
        {"name": "n", "type": "int", "value": "n"}],
        "block": ["64"], "grid": ["ceil(n / 64)"]},
    "cases": {"public": [{"n": 100}]},
    "checks": {"correctness": {"points": 10}},
}

BF16_KERNEL = r'''
#include <cuda_bf16.h>
extern "C" __global__ void scale(const __nv_bfloat16* x, __nv_bfloat16* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n - 1) y[i] = __float2bfloat16(__bfloat162float(x[i]) * 3.0f);   // the last element is never written
}
'''


def test_bfloat16_values_in_the_harness_bits_on_the_device(tmp_path):
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    from grader import bfloat16
    from grader.backends.base import untouched
    from grader.backends.emu import EmuDevice
    from grader.compile import compile_source
    from grader.run.child.launch import launch_kernel

    values = np.array([1.0, 1.00390625, 1.01171875, -3.3e38, np.nan], dtype=np.float32)
    assert bfloat16.to_bits(values).tolist() == [0x3F80, 0x3F80, 0x3F82, 0xFF78, 0x7FFF]  # ties to even; -3.3e38 is 0xFF7843B0
    assert np.array_equal(bfloat16.to_values(bfloat16.to_bits(values[:3])), bfloat16.round_values(values[:3]))

    compiled = compile_source(BF16_KERNEL, "bf.cu", "sm_90")
    if not compiled.ok and "cuda_bf16.h" in compiled.log:
        pytest.skip("this NVRTC bundles no cuda_bf16.h")
    assert compiled.ok, compiled.log
    artifact = tmp_path / "bf.ptx"
    artifact.write_text(compiled.ptx)
    spec = spec_module.from_dict(BF16_SPEC)
    assert spec.kernel.params[0].is_bfloat16 and spec.kernel.params[0].device_dtype == "uint16"
    x = bfloat16.round_values(np.random.default_rng(0).uniform(-1, 1, 100))
    device = EmuDevice()
    launched = launch_kernel(spec, device, device.load(str(artifact), "scale"), {"n": 100}, {"x": x},
                             step_limit=100_000)
    assert launched.outcome.error is None, launched.outcome.error
    y = launched.contents["y"]
    assert y.dtype == np.float32
    assert np.array_equal(y[:99], bfloat16.round_values(x[:99] * np.float32(3.0)))
    assert untouched(y).tolist() == [False] * 99 + [True]  # never written, still recognised
