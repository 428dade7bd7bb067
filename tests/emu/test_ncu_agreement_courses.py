"""The emulator's global counters, atomics included, against Nsight Compute's goldens for the
course exercises (reduction, softmax, histogram, half_gemv).

The goldens are measured on a GPU with

    python bench/ncu_golden.py exercises/reduction --sizes 1000,4099,8197 --out tests/data/ncu_reduction.json
    python bench/ncu_golden.py exercises/softmax --sizes "rows=4,cols=1000;rows=8,cols=257" --out tests/data/ncu_softmax.json
    python bench/ncu_golden.py exercises/histogram --sizes 1000,4099,16384 --out tests/data/ncu_histogram.json
    python bench/ncu_golden.py exercises/half_gemv --sizes "M=17,K=256;M=64,K=512;M=9,K=257" --out tests/data/ncu_half_gemv.json

and a test is skipped while its golden file is absent. Inputs are the harness's with seed 1, as
`grade profile` (and so ncu_golden.py) uses.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
EXERCISES = ("reduction", "softmax", "histogram", "half_gemv")
GLOBAL = (
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",
    # Shared-memory atomics: instructions and wavefronts.
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum",
    "smsp__inst_executed_op_shared_atom.sum",
)


# Global atomics follow the rule fitted to ncu in traffic.atomic_sectors, which reads address bits
# 7..11: EmuDevice places buffers where the GPU backend does (GpuBufferPlacement), so each case here
# sees the addresses of the golden's fresh profile process (histogram's bins at 512 mod 4096).

# Kernels whose atomics land where bytes read past the input send them: on a GPU those bytes are the
# harness's guard words, on the emulator a fault. Their data-dependent atomic counts are not compared.
READS_PAST_INPUT = {("histogram", "wrong/unguarded_stride_loop.cu")}
SHARED_ATOMIC = ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum", "smsp__inst_executed_op_shared_atom.sum")


def _cases():
    out = []
    for ex in EXERCISES:
        path = ROOT / "tests" / "data" / f"ncu_{ex}.json"
        if not path.exists():
            out.append(pytest.param(ex, None, None, marks=pytest.mark.skip(reason=f"no golden {path.name} yet "
                                                                        "(bench/ncu_golden.py on a GPU)")))
            continue
        golden = json.loads(path.read_text())
        for name, by_size in sorted(golden["files"].items()):
            for key in sorted(by_size):
                out.append(pytest.param(ex, name, key, id=f"{ex}-{name}-{key}"))
    return out


def _sizes(key: str, names) -> dict[str, int]:
    if "=" not in key:
        (name,) = names
        return {name: int(key)}
    return {k: int(v) for k, v in (p.split("=") for p in key.split(","))}


@pytest.mark.slow
@pytest.mark.parametrize("exercise, name, key", _cases())
def test_global_and_atomic_counts_match_ncu(exercise, name, key, tmp_path):
    from grader.backends.emu import EmuDevice
    from grader.compile import compile_source
    from grader.exercise import Harness, load
    from grader.run.child.launch import launch_kernel

    golden = json.loads((ROOT / "tests" / "data" / f"ncu_{exercise}.json").read_text())["files"][name][key]
    if golden.get("error"):
        pytest.skip(f"ncu reported: {golden['error']}")
    ex = load(ROOT / "exercises" / exercise)
    sizes = _sizes(key, ex.spec.sizes)
    compiled = compile_source((ROOT / "reference" / exercise / name).read_text(), Path(name).name)
    assert compiled.ok, compiled.log
    artifact = tmp_path / "k.ptx"
    artifact.write_text(compiled.ptx)
    inputs = Harness(ex).make_inputs(sizes, np.random.default_rng(1))
    device = EmuDevice()
    launched = launch_kernel(ex.spec, device, device.load(str(artifact), ex.spec.kernel.name), sizes, inputs,
                             step_limit=ex.spec.limits.step_limit)
    got = launched.outcome.findings["counters"]
    measured = golden["counters"]
    if any(v != v for v in measured.values()):  # NaN: ncu had no row for a launch that faulted on the GPU
        pytest.skip("ncu measured nothing for this launch (it faulted on the GPU)")
    keys = [k for k in GLOBAL if k in measured
            and not ((exercise, name) in READS_PAST_INPUT and k in SHARED_ATOMIC)]
    assert {k: got.get(k) for k in keys} == {k: int(measured[k]) for k in keys}
