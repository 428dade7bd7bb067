"""The emulator's atomic counters against Nsight Compute, one warp and one lane pattern at a time.

`tests/data/ncu_atomic_probe.json` was measured on an H200 with `python bench/atomic_probe.py --out
...`: 87 patterns (every lane's element index, or -1 for a lane that sits out) under six kernels
(global `red` and `atom` on u32 and f32, shared `atom` on u32 and f32). `ncu_atomic_ablation.json`
(`--ablate`) holds 210 variants of five of them (lanes dropped, reordered, shifted) under `red_u32`,
and `ncu_atomic_fresh.json` (`--fresh 2024`) 221 patterns made after the sector rule of
traffic.atomic_sectors was fitted to the first two, under `red_u32` (all) and `atom_u32` (56), with the
probe buffer's device address. Here the same kernels run on the emulator with the same patterns and
their counters are compared with ncu's.

The global atomic sector rule reads address bits 7..11, so the probe buffer must sit where it sat on
the GPU: there it was the process's first allocation (`buffer_ptr` 2 MiB aligned); on the emulator it
is the device's first upload, which GpuBufferPlacement puts 4 KiB aligned too.
"""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
PROBE = json.loads((DATA / "ncu_atomic_probe.json").read_text())
ABLATION = json.loads((DATA / "ncu_atomic_ablation.json").read_text())
FRESH = json.loads((DATA / "ncu_atomic_fresh.json").read_text())
_spec = importlib.util.spec_from_file_location("atomic_probe", ROOT / "bench" / "atomic_probe.py")
atomic_probe = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(atomic_probe)

GLOBAL = {"red_u32": "red", "red_f32": "red", "atom_u32": "atom", "atom_f32": "atom"}

# Fresh patterns (random 16- and 24-line spans) where ncu counted one sector more than the fitted
# rule: known misses of the rule, whose cause is not known.
FRESH_KNOWN_MISSES = {("red_u32", 130), ("red_u32", 139)}


pytestmark = pytest.mark.slow  # about 1,300 emulated launches


@pytest.fixture(scope="module")
def probe_ptx(tmp_path_factory) -> str:
    from grader.compile import compile_source

    compiled = compile_source(atomic_probe.SOURCE, "atomic_probe.cu")
    assert compiled.ok, compiled.log
    ptx = tmp_path_factory.mktemp("probe") / "probe.ptx"
    ptx.write_text(compiled.ptx)
    return str(ptx)


def _run_patterns(ptx: str, kernel_name: str, patterns) -> list[dict]:
    """Counters of `kernel_name` for each pattern. The 512 KiB probe buffer and the result buffer are
    allocated first, as bench/atomic_probe.py does on the GPU, so the probe buffer is 4 KiB aligned."""
    from grader.backends.emu import EmuDevice

    device = EmuDevice()
    kernel = device.load(ptx, kernel_name)
    buf = device.upload("buf", np.zeros(4096 * 32, dtype=np.uint32))
    res = device.upload("out", np.zeros(32, dtype=np.uint32))
    assert buf.arg % 4096 == 0, hex(buf.arg)
    rows = []
    for pattern in patterns:
        idx = device.upload("idx", np.array(pattern, dtype=np.int32))
        outcome = device.launch(kernel, (1, 1, 1), (32, 1, 1), 0, [idx.arg, buf.arg, res.arg], step_limit=10**6)
        assert not outcome.error, outcome.error
        rows.append(outcome.findings["counters"])
        device.free([idx])
    return rows


@pytest.fixture(scope="module")
def emulated(probe_ptx):
    """Counters of every (kernel, pattern) of the probe on the emulator."""
    return {name: _run_patterns(probe_ptx, name, PROBE["patterns"]) for name in atomic_probe.KERNELS}


@pytest.mark.parametrize("kernel", sorted(GLOBAL))
def test_global_atomic_sectors_match_ncu_lane_pattern_by_pattern(emulated, kernel):
    op = GLOBAL[kernel]
    sectors, requests = (f"l1tex__t_{k}_pipe_lsu_mem_global_op_{op}.sum" for k in ("sectors", "requests"))
    for i, (got, measured) in enumerate(zip(emulated[kernel], PROBE["counts"][kernel])):
        assert got.get(requests, 0) == measured[requests], (i, PROBE["patterns"][i])
        assert got.get(sectors, 0) == measured[sectors], (i, PROBE["patterns"][i])


def test_shared_integer_atomic_wavefronts_match_ncu(emulated):
    wf, inst = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum", "smsp__inst_executed_op_shared_atom.sum"
    for i, (got, measured) in enumerate(zip(emulated["sh_u32"], PROBE["counts"]["sh_u32"])):
        assert (got.get(wf, 0), got.get(inst, 0)) == (measured[wf], measured[inst]), (i, PROBE["patterns"][i])


def test_global_atomic_sectors_match_ncu_on_the_ablation(probe_ptx):
    """The 210 variants of `ncu_atomic_ablation.json`: five probe patterns, three of which the old
    per-sector model undercounted, each with one lane dropped in turn, reordered, and shifted by a
    word, a sector, a line and eight lines. ncu's count there depends on the lane order and on address
    bits 7..11; the emulator matches every one."""
    sectors = "l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum"
    rows = _run_patterns(probe_ptx, "red_u32", ABLATION["patterns"])
    assert len(rows) == 210
    off = [(about, got.get(sectors, 0), measured[sectors])
           for got, measured, about in zip(rows, ABLATION["counts"]["red_u32"], ABLATION["about"])
           if got.get(sectors, 0) != measured[sectors]]
    assert not off, off


@pytest.mark.parametrize("kernel", ["red_u32", "atom_u32"])
def test_global_atomic_sectors_match_ncu_on_the_fresh_patterns(probe_ptx, kernel):
    """The out-of-sample probe (`ncu_atomic_fresh.json`): exact, except the two known misses, where
    the emulator is at most one sector below ncu."""
    assert FRESH["buffer_ptr"] % 4096 == 0  # as the emulator's first upload
    op = GLOBAL[kernel]
    sectors, requests = (f"l1tex__t_{k}_pipe_lsu_mem_global_op_{op}.sum" for k in ("sectors", "requests"))
    ran = [i for i, c in enumerate(FRESH["counts"][kernel]) if c is not None]
    rows = _run_patterns(probe_ptx, kernel, [FRESH["patterns"][i] for i in ran])
    assert len(rows) == {"red_u32": 221, "atom_u32": 56}[kernel]
    off = []
    for i, got in zip(ran, rows):
        measured = {k: int(float(v)) for k, v in FRESH["counts"][kernel][i].items()}
        assert got.get(requests, 0) == measured[requests], (i, FRESH["about"][i])
        if (kernel, i) in FRESH_KNOWN_MISSES:
            assert 0 <= measured[sectors] - got.get(sectors, 0) <= 1, (i, got.get(sectors, 0), measured[sectors])
        elif got.get(sectors, 0) != measured[sectors]:
            off.append((i, FRESH["about"][i], got.get(sectors, 0), measured[sectors]))
    assert not off, off
