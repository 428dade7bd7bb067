"""Exercises of several kernels launched in order (spec kernel.then): a two-pass reduction graded
end to end on the emulator, the spec's rules, and ncu's rows summed per launch."""
import textwrap

import pytest

from grader import spec as spec_module
from grader.errors import SpecError
from grader.tools import ncu_wrapper, sum_rows

SPEC = """
id = "two_pass"
title = "Two-pass sum"
sizes = ["n"]

[kernel]
name = "block_sums"
params = [
  { name = "x", type = "const float*", role = "in", shape = ["n"] },
  { name = "partials", type = "float*", role = "temp", shape = ["ceil(n / 256)"] },
  { name = "n", type = "int", value = "n" },
]
block = ["256"]
grid = ["ceil(n / 256)"]

[[kernel.then]]
name = "final_sum"
params = [
  { name = "partials", type = "float*" },
  { name = "out", type = "float*", role = "out", shape = ["1"] },
  { name = "m", type = "int", value = "ceil(n / 256)" },
]
block = ["256"]
grid = ["1"]

[tolerance]
ulps = 1.0
terms = "log2(n + 1) + 16"

[cases]
public = [{ n = 1 }, { n = 1000 }]
emu = [{ n = 1 }, { n = 257 }, { n = 5000 }]

[checks.correctness]
points = 50

[checks.race]
points = 25
size = { n = 5000 }

[checks.traffic]
points = 25
size = { n = 5000 }
"""

HARNESS = """
import numpy as np

def reference(inputs, sizes):
    return {"out": np.array([inputs["x"].astype(np.float64).sum()])}

def magnitude(inputs, sizes):
    return {"out": np.array([np.abs(inputs["x"].astype(np.float64)).sum()])}
"""

KERNELS = r'''
__device__ float block_sum(float v) {
  __shared__ float s[256];
  int t = threadIdx.x;
  s[t] = v;
  __syncthreads();
  for (int k = 128; k > 0; k >>= 1) {
    if (t < k) s[t] += s[t + k];
    __syncthreads();
  }
  return s[0];
}

extern "C" __global__ void block_sums(const float* x, float* partials, int n) {
  int i = blockIdx.x * 256 + threadIdx.x;
  float total = block_sum(i < n ? x[i] : 0.f);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

extern "C" __global__ void final_sum(const float* partials, float* out, int m) {
  float v = 0.f;
  for (int j = threadIdx.x; j < m; j += 256) v += partials[j];
  float total = block_sum(v);
  if (threadIdx.x == 0) *out = total;
}
'''


@pytest.fixture
def exercise(tmp_path):
    root = tmp_path / "exercises" / "two_pass"
    root.mkdir(parents=True)
    (root / "spec.toml").write_text(SPEC)
    (root / "harness.py").write_text(textwrap.dedent(HARNESS))
    (root / "skeleton.cu").write_text(KERNELS)
    ref = tmp_path / "reference" / "two_pass"
    ref.mkdir(parents=True)
    (ref / "solution.cu").write_text(KERNELS)
    return root


def test_the_chain_is_part_of_the_contract():
    import tomllib

    spec = spec_module.from_dict(tomllib.loads(SPEC))
    assert [k.name for k in spec.kernel.chain] == ["block_sums", "final_sum"]
    assert [p.name for p in spec.kernel.buffers] == ["x", "partials", "out"]
    assert [p.name for p in spec.kernel.outputs] == ["out"]  # temp buffers are not compared
    assert spec.kernel.then[0].params[0].role == "temp" and "final_sum(float* partials" in spec.kernel.signature
    raw = tomllib.loads(SPEC)
    raw["kernel"]["then"][0]["params"][0]["shape"] = ["4"]
    with pytest.raises(SpecError, match="kernel.then.0.params.0"):
        spec_module.from_dict(raw)


def test_a_two_pass_reduction_grades_end_to_end_on_the_emulator(exercise, tmp_path):
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    from grader import api

    good = tmp_path / "good.cu"
    good.write_text(KERNELS)
    report = api.grade(exercise, good, backend="emu", seed=1)
    by_cat = {t.category: t for t in report.tests}
    assert by_cat["correctness"].passed, by_cat["correctness"].output
    assert by_cat["race"].passed, by_cat["race"].output
    counters = by_cat["traffic"].extra["submission"]
    # both kernels' traffic: 5000 floats read (157 sectors), 20 partials stored and read back, one out
    assert counters["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] > 157
    assert counters["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"] >= 2

    missing = tmp_path / "missing.cu"
    missing.write_text(KERNELS.split("extern \"C\" __global__ void final_sum")[0])
    report = api.grade(exercise, missing, backend="emu", seed=1)
    compile_test = next(t for t in report.tests if t.category == "compile")
    assert not compile_test.passed and "No kernel named final_sum" in compile_test.output


def test_ncu_profiles_every_kernel_of_the_chain_and_sums_each_launch():
    argv = ncu_wrapper("ncu", ["m"], ["block_sums", "final_sum"])
    assert argv[argv.index("-k") + 1] == "regex:^(block_sums|final_sum)$"
    rows = [{"a": 1.0}, {"a": 2.0}, {"a": 10.0}, {"a": 20.0}]
    assert sum_rows(rows, 2) == [{"a": 3.0}, {"a": 30.0}]
    assert sum_rows(rows, 1) == rows
