"""The emulator's atomic counters against Nsight Compute, one warp and one lane pattern at a time.

`tests/data/ncu_atomic_probe.json` was measured on an H200 with `python bench/atomic_probe.py --out
...`: 87 patterns (every lane's element index, or -1 for a lane that sits out) under six kernels
(global `red` and `atom` on u32 and f32, shared `atom` on u32 and f32). Here the same kernels run on
the emulator with the same patterns and their counters are compared with ncu's.
"""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = json.loads((ROOT / "tests" / "data" / "ncu_atomic_probe.json").read_text())
_spec = importlib.util.spec_from_file_location("atomic_probe", ROOT / "bench" / "atomic_probe.py")
atomic_probe = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(atomic_probe)

GLOBAL = {"red_u32": "red", "red_f32": "red", "atom_u32": "atom", "atom_f32": "atom"}


pytestmark = pytest.mark.slow  # 522 emulated launches, about 17 s on two cores


@pytest.fixture(scope="module")
def emulated(tmp_path_factory):
    """Counters of every (kernel, pattern) on the emulator."""
    from grader.backends.emu import EmuDevice
    from grader.compile import compile_source

    compiled = compile_source(atomic_probe.SOURCE, "atomic_probe.cu")
    assert compiled.ok, compiled.log
    ptx = tmp_path_factory.mktemp("probe") / "probe.ptx"
    ptx.write_text(compiled.ptx)
    device = EmuDevice()
    out = {}
    for name in atomic_probe.KERNELS:
        kernel = device.load(str(ptx), name)
        rows = []
        for pattern in PROBE["patterns"]:
            idx = device.upload("idx", np.array(pattern, dtype=np.int32))
            buf = device.upload("buf", np.zeros(4096, dtype=np.uint32))
            res = device.upload("out", np.zeros(32, dtype=np.uint32))
            outcome = device.launch(kernel, (1, 1, 1), (32, 1, 1), 0, [idx.arg, buf.arg, res.arg], step_limit=10**6)
            assert not outcome.error, outcome.error
            rows.append(outcome.findings["counters"])
            device.free([idx, buf, res])
        out[name] = rows
    return out


@pytest.mark.parametrize("kernel", sorted(GLOBAL))
def test_global_atomic_sectors_match_ncu_lane_pattern_by_pattern(emulated, kernel):
    op = GLOBAL[kernel]
    sectors, requests = (f"l1tex__t_{k}_pipe_lsu_mem_global_op_{op}.sum" for k in ("sectors", "requests"))
    off = []
    for i, (got, measured) in enumerate(zip(emulated[kernel], PROBE["counts"][kernel])):
        assert got.get(requests, 0) == measured[requests], (i, PROBE["patterns"][i])
        if got.get(sectors, 0) != measured[sectors]:
            off.append((i, got.get(sectors, 0), measured[sectors]))
    # Three scattered random patterns measured one sector more than the model (docs/emulator.md);
    # everything else, including every pattern of lanes sharing addresses, is exact.
    assert len(off) <= 3, off
    assert all(measured - got == 1 for _, got, measured in off), off


def test_shared_integer_atomic_wavefronts_match_ncu(emulated):
    wf, inst = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum", "smsp__inst_executed_op_shared_atom.sum"
    for i, (got, measured) in enumerate(zip(emulated["sh_u32"], PROBE["counts"]["sh_u32"])):
        assert (got.get(wf, 0), got.get(inst, 0)) == (measured[wf], measured[inst]), (i, PROBE["patterns"][i])


ABLATION = json.loads((ROOT / "tests" / "data" / "ncu_atomic_ablation.json").read_text())


def test_the_patterns_the_model_misses_depend_on_lane_order_and_sorted_lanes_match_it(tmp_path):
    """`tests/data/ncu_atomic_ablation.json` (`bench/atomic_probe.py --ablate`, on the H200) took the
    three patterns above that ncu counts one sector higher, and two it matches, and measured each with
    one lane dropped in turn, reordered, and shifted. What it shows, and what this test holds the
    emulator to: with the lanes in address order ncu's count is the model's, for every one of them;
    in other orders ncu counts what the model does or more (up to 3 sectors, for one shuffle), never
    fewer. So the emulator's count is a floor that the hardware reaches when the lanes come in address
    order (docs/emulator.md)."""
    from grader.backends.emu import EmuDevice
    from grader.compile import compile_source

    compiled = compile_source(atomic_probe.SOURCE, "atomic_probe.cu")
    assert compiled.ok, compiled.log
    ptx = tmp_path / "probe.ptx"
    ptx.write_text(compiled.ptx)
    device = EmuDevice()
    kernel = device.load(str(ptx), "red_u32")
    sectors = "l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum"
    sorted_seen = 0
    for pattern, about, measured in zip(ABLATION["patterns"], ABLATION["about"], ABLATION["counts"]["red_u32"]):
        idx = device.upload("idx", np.array(pattern, dtype=np.int32))
        buf = device.upload("buf", np.zeros(4096 * 32, dtype=np.uint32))
        res = device.upload("out", np.zeros(32, dtype=np.uint32))
        outcome = device.launch(kernel, (1, 1, 1), (32, 1, 1), 0, [idx.arg, buf.arg, res.arg], step_limit=10**6)
        device.free([idx, buf, res])
        got = outcome.findings["counters"].get(sectors, 0)
        assert 0 <= measured[sectors] - got <= 3, (about, pattern, got, measured[sectors])
        if about["change"] == "lanes sorted by address":
            sorted_seen += 1
            assert got == measured[sectors], (about, got, measured[sectors])
    assert sorted_seen == 5
