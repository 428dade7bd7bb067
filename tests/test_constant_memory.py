"""__constant__ arrays filled by the harness before every launch (spec kernel.constants)."""
import copy

import numpy as np
import pytest

from grader import spec as spec_module
from grader.errors import SpecError

SPEC = {
    "id": "conv", "title": "Conv", "sizes": ["n"],
    "kernel": {"name": "conv", "constants": ["taps"], "params": [
        {"name": "x", "type": "const float*", "role": "in", "shape": ["n + 4"]},
        {"name": "y", "type": "float*", "role": "out", "shape": ["n"]},
        {"name": "n", "type": "int", "value": "n"}],
        "block": ["128"], "grid": ["ceil(n / 128)"]},
    "cases": {"public": [{"n": 1}, {"n": 300}]},
    "checks": {"correctness": {"points": 10}},
}

KERNEL = r'''
__constant__ float taps[5];
extern "C" __global__ void conv(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float s = 0.f;
    for (int k = 0; k < 5; ++k) s += taps[k] * x[i + k];
    y[i] = s;
  }
}
'''


def test_constants_are_validated():
    spec = spec_module.from_dict(SPEC)
    assert spec.kernel.constants == ("taps",)
    bad = copy.deepcopy(SPEC)
    bad["kernel"]["constants"] = ["x"]
    with pytest.raises(SpecError, match="kernel.constants"):
        spec_module.from_dict(bad)


@pytest.mark.parametrize("declared, problem", [("taps[5]", None), ("weights[5]", "no __constant__ array named taps"),
                                               ("taps[2]", "holds 8 bytes")])
def test_the_harness_fills_constant_memory_on_the_emulator(tmp_path, declared, problem):
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    from grader.backends.emu import EmuDevice
    from grader.compile import compile_source
    from grader.run.child.launch import launch_kernel

    source = KERNEL.replace("taps[5]", declared, 1)
    if declared != "taps[5]":
        source = source.replace("taps[k]", declared.split("[")[0] + "[k % 2]")
    compiled = compile_source(source, "conv.cu", "sm_90")
    assert compiled.ok, compiled.log
    artifact = tmp_path / "conv.ptx"
    artifact.write_text(compiled.ptx)
    spec = spec_module.from_dict(SPEC)
    rng = np.random.default_rng(0)
    inputs = {"x": rng.uniform(-1, 1, 304).astype(np.float32), "taps": np.array([1, 2, 3, 2, 1], np.float32)}
    device = EmuDevice()
    launched = launch_kernel(spec, device, device.load(str(artifact), "conv"), {"n": 300}, inputs, step_limit=100_000)
    if problem:
        assert problem in launched.outcome.error
        return
    assert launched.outcome.error is None, launched.outcome.error
    x = inputs["x"].astype(np.float64)
    want = sum(inputs["taps"][k] * x[k:k + 300] for k in range(5))
    assert np.allclose(launched.contents["y"], want, rtol=1e-6, atol=1e-5)
