"""The emulator reproduces Nsight Compute's global-memory counts exactly (golden data from an H200).

tests/data/ncu_level2.json was measured with bench/ncu_golden.py (see docs/gpu-evidence.md): the
level2 reference and every wrong submission at N = 33, 64 and 100, two of them not multiples of 32.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from grader.compile import compile_source
from grader.emu import Emulator
from grader.exercise import Harness, load

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = json.loads((ROOT / "tests/data/ncu_level2.json").read_text())
GLOBAL = (
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
)
# Shared stores match too; shared loads do not, by design: ptxas merges four ld.shared.f32 of
# As[ty][k..k+3] into one LDS.128, which PTX cannot show (docs/emulator.md, "Agreement").
SHARED_STORES = ("smsp__sass_inst_executed_op_shared_st.sum", "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum")
CASES = [(f, n) for f, sizes in sorted(GOLDEN["files"].items()) for n in sorted(sizes, key=int)]


def emulate(path: Path, n: int) -> dict[str, int]:
    exercise = load(ROOT / "exercises" / "level2")
    compiled = compile_source(path.read_text(), path.name)
    assert compiled.ok, compiled.log
    emu = Emulator(compiled.ptx, source_name=path.name)
    inputs = Harness(exercise).make_inputs({"N": n}, np.random.default_rng(0))
    a, b = (emu.alloc(inputs[k].nbytes, name=k) for k in "AB")
    emu.write(a, inputs["A"])
    emu.write(b, inputs["B"])
    c = emu.alloc(n * n * 4, name="C")
    emu.write(c, np.full(n * n, np.nan, np.float32))
    grid = ((n + 31) // 32, (n + 31) // 32, 1)
    report = emu.launch("matmul_tiled", grid=grid, block=(32, 32, 1), args=[a, b, c, n], track_hazards=False)
    return report.counters


@pytest.mark.slow
@pytest.mark.parametrize("name, n", CASES, ids=[f"{f}-N{n}" for f, n in CASES])
def test_global_counts_match_ncu(name, n):
    measured = GOLDEN["files"][name][n]["counters"]
    got = emulate(ROOT / "reference" / "level2" / name, int(n))
    keys = GLOBAL + SHARED_STORES
    assert {k: got.get(k) for k in keys} == {k: int(measured[k]) for k in keys}
