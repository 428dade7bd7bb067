"""The Triton kind end to end on the CPU path: the jailed child, the judged cases, the hostile checks.

Each grading starts a jailed Python that imports torch and Triton (about 2 s here): slow."""
from __future__ import annotations

from pathlib import Path

import pytest

from grader import api

pytest.importorskip("torch")
pytest.importorskip("triton")
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
EXERCISE = ROOT / "exercises" / "triton_vector_add"
KERNEL = (ROOT / "reference" / "triton_vector_add" / "solution.py").read_text()


def graded(tmp_path, source: str, name: str = "sub.py"):
    path = tmp_path / name
    path.write_text(source)
    return api.grade(EXERCISE, path, seed=1)


def by_category(report):
    out = {}
    for t in report.tests:
        out.setdefault(t.category, []).append(t)
    return out


def test_the_reference_scores_full_marks_in_the_shared_results_shape(tmp_path):
    report = graded(tmp_path, KERNEL)
    assert report.score == report.max_score == 100
    doc = report.to_json() if hasattr(report, "to_json") else None
    names = [t.name for t in report.tests]
    assert "Loads" in names and any("Memory traffic" in n for n in names)
    if doc is not None:
        assert {"name", "score", "max_score", "output"} <= set(doc["tests"][0])


def test_an_unmasked_store_names_the_tensor_offset_program_and_line(tmp_path):
    source = KERNEL.replace("tl.store(out_ptr + offsets, x + y, mask=mask)", "tl.store(out_ptr + offsets, x + y)")
    safety = by_category(graded(tmp_path, source))["memory-safety"][0]
    assert not safety.passed
    assert "an unmasked store of out[1000] (it has 1000 elements) by program 3" in safety.output
    assert "sub.py:12" in safety.output


@pytest.mark.parametrize("hostile, words", [
    ("import subprocess\nsubprocess.run(['id'])\n", "not allowed"),
    ("open('/etc/hostname').read()\n", "not allowed"),
    ("import os\nos.system('true')\n", "not allowed"),
    ("import ctypes\n", "not allowed"),
    ("import grader\n", "No module named"),
])
def test_hostile_module_code_does_not_load(tmp_path, hostile, words):
    report = graded(tmp_path, hostile + KERNEL)
    load = report.tests[0]
    assert not load.passed and words in load.output
    assert report.score == 0


def test_a_launcher_that_never_returns_is_stopped_at_its_time_limit(tmp_path):
    source = KERNEL.replace("    BLOCK = 256\n", "    BLOCK = 256\n    while True:\n        pass\n")
    report = graded(tmp_path, source)
    correctness = by_category(report)["correctness"][0]
    assert not correctness.passed and "time limit" in correctness.output


def test_a_kernel_that_peeks_at_the_grader_through_torch_finds_nothing(tmp_path):
    # torch.load and friends open files through Python's open: refused outside the jail's folder.
    source = "import torch\ntorch.load('/work/main/pyproject.toml')\n" + KERNEL
    report = graded(tmp_path, source)
    assert not report.tests[0].passed


def test_a_gpu_asked_for_where_none_is_usable_is_graded_on_the_cpu_path_and_says_so(tmp_path, monkeypatch):
    from grader.run.parent import device_probe

    monkeypatch.setattr(device_probe, "probe", lambda: device_probe.GpuInfo(False, reason="no NVIDIA driver"))
    monkeypatch.setattr("grader.triton.gpu.probe", device_probe.probe)
    path = tmp_path / "sub.py"
    path.write_text(KERNEL)
    report = api.grade(EXERCISE, path, backend="gpu", seed=1)
    assert report.score == report.max_score and report.backend == "emu"
    assert any("none is usable (no NVIDIA driver)" in n for n in report.notes)
    assert not any("GPU" in n for n in api.grade(EXERCISE, path, backend="emu", seed=1).notes)


def test_an_autotuned_kernel_runs_its_first_config_and_scores_full_marks(tmp_path):
    source = KERNEL.replace("@triton.jit\n", "@triton.autotune(configs=[triton.Config({}, num_warps=4), "
                                             "triton.Config({}, num_warps=8)], key=['n'])\n@triton.jit\n")
    assert "@triton.autotune" in source
    report = graded(tmp_path, source)
    assert report.score == report.max_score, [t.output for t in report.tests if not t.passed]


def test_a_scratch_tensor_the_launcher_allocates_is_in_bounds_and_an_overrun_of_it_is_named(tmp_path):
    kernel = KERNEL.replace("def add_kernel(x_ptr, y_ptr, out_ptr, n,", "def add_kernel(x_ptr, y_ptr, out_ptr, r_ptr, n,")
    kernel = kernel.replace("    tl.store(out_ptr + offsets, x + y, mask=mask)\n",
                            "    tl.store(out_ptr + offsets, x + y, mask=mask)\n    tl.store(r_ptr + pid + PAST, pid)\n")
    kernel = kernel.replace("add_kernel[grid](x, y, out, n,",
                            "r = torch.empty(grid[0], dtype=torch.int32)\n    add_kernel[grid](x, y, out, r, n,")
    kernel = kernel.replace("BLOCK: tl.constexpr)", "BLOCK: tl.constexpr, PAST: tl.constexpr = 0)")
    fine = "import torch\n" + kernel
    assert "r_ptr + pid" in fine and "torch.empty" in fine
    report = graded(tmp_path, fine)
    assert report.score == report.max_score, [t.output for t in report.tests if not t.passed]
    past = fine.replace("BLOCK=BLOCK)", "BLOCK=BLOCK, PAST=1)")
    safety = by_category(graded(tmp_path, past))["memory-safety"][0]
    assert not safety.passed
    assert "an unmasked store of the launcher's tensor passed as r_ptr[4] (it has 4 elements) by program 3" in safety.output


def test_a_nan_the_kernel_computes_is_told_apart_from_an_element_never_written(tmp_path):
    # 0 / 0 in the last block's lanes: NaN the kernel stores, not the grader's fill still in place
    nan_tail = KERNEL.replace("x + y, mask=mask)", "tl.where(offsets < 768, x + y, (x - x) / (y - y)), mask=mask)")
    assert "(x - x) / (y - y)" in nan_tail
    correct = by_category(graded(tmp_path, nan_tail))["correctness"][0]
    assert not correct.passed
    assert "NaN written by the kernel" in correct.output and "never written" not in correct.output
    floor = (ROOT / "reference" / "triton_vector_add" / "wrong" / "grid_floor.py").read_text()
    correct = by_category(graded(tmp_path, floor, "floor.py"))["correctness"][0]
    assert "never written" in correct.output and "NaN written by the kernel" not in correct.output


def test_a_nan_read_from_an_input_guard_and_stored_is_not_never_written(tmp_path):
    # x one element ahead: the last lane reads x's guard (x's fill, a NaN) and stores it into out[n - 1]
    ahead = KERNEL.replace("tl.load(x_ptr + offsets, mask=mask)", "tl.load(x_ptr + offsets + 1, mask=mask)")
    assert "x_ptr + offsets + 1" in ahead
    report = by_category(graded(tmp_path, ahead))
    correct = report["correctness"][0]
    assert "NaN written by the kernel" in correct.output and "never written" not in correct.output
    assert "x[1000]" in report["memory-safety"][0].output


def test_each_float_tensor_is_filled_with_a_nan_of_its_own():
    import numpy as np

    from grader.exercise import load
    from grader.triton.grade import _float_poison

    spec = load(EXERCISE).spec
    patterns = [_float_poison(spec, p) for p in spec.tensors]
    assert len(set(patterns)) == len(patterns) == 3
    assert all(np.isnan(np.array([bits], dtype=np.uint32).view(np.float32)[0]) for bits in patterns)


def test_a_dead_load_of_the_output_is_told_but_fails_nothing(tmp_path):
    source = KERNEL.replace("    tl.store(out_ptr", "    stale = tl.load(out_ptr + offsets, mask=mask)\n    tl.store(out_ptr")
    report = graded(tmp_path, source)
    safety = by_category(report)["memory-safety"][0]
    assert safety.passed
    assert not by_category(report)["traffic"][0].passed  # the dead load still moves out's sectors
    assert "a load of out[0] before anything was stored there" in safety.output and "sub.py:12" in safety.output


def test_a_load_of_the_output_that_reaches_it_fails_correctness_and_is_named_as_why(tmp_path):
    source = KERNEL.replace("tl.store(out_ptr + offsets, x + y, mask=mask)",
                            "tl.store(out_ptr + offsets, tl.load(out_ptr + offsets, mask=mask) + x + y, mask=mask)")
    correctness = by_category(graded(tmp_path, source))["correctness"][0]
    assert not correctness.passed
    assert "Possibly why:" in correctness.output and "a load of out[0] before anything was stored there" in correctness.output
