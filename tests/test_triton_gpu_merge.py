"""How a Triton grading joins the GPU's compiled run to the CPU path, tested without a GPU: the
"GPU" child is the CPU's interpreter child (grader.triton.gpu's worker given no GPU), so each case's
second outcome is real; what differs between the paths is staged by replacing one side.

Each grading starts two or three jailed Pythons that import torch and Triton: slow."""
from __future__ import annotations

from pathlib import Path

import pytest

from grader import api
from grader.triton import gpu as tritongpu
from grader.triton import grade as tritongrade
from grader.pyexercise.sandbox import LoadOutcome
from grader.triton.sandbox import CaseOutcome, TritonWorker

pytest.importorskip("torch")
pytest.importorskip("triton")
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
EXERCISE = ROOT / "exercises" / "triton_vector_add"
KERNEL = (ROOT / "reference" / "triton_vector_add" / "solution.py").read_text()


def _interpreter_as_gpu(source, *, gpu=None, **kwargs):
    return TritonWorker(source, **kwargs)  # the index is dropped: the interpreter stands in for the GPU


@pytest.fixture
def fake_gpu(monkeypatch):
    monkeypatch.setattr(tritongpu, "gpu_index", lambda requested: (None, "") if requested == "emu" else (0, ""))
    monkeypatch.setattr(tritongpu, "TritonWorker", _interpreter_as_gpu)


def graded(tmp_path, source: str, backend: str = "gpu"):
    path = tmp_path / "sub.py"
    path.write_text(source)
    return api.grade(EXERCISE, path, backend=backend, seed=1)


def test_both_runs_right_is_full_marks_on_the_gpu_backend(tmp_path, fake_gpu):
    report = graded(tmp_path, KERNEL)
    assert report.backend == "gpu" and report.score == report.max_score
    assert "Triton's compiler" in report.device and not report.notes


def test_a_problem_is_named_for_each_path_that_found_it(tmp_path, fake_gpu):
    source = KERNEL.replace("tl.store(out_ptr + offsets, x + y, mask=mask)", "tl.store(out_ptr + offsets, x + y)")
    safety = next(t for t in graded(tmp_path, source).tests if t.category == "memory-safety")
    cpu_only = next(t for t in graded(tmp_path, source, backend="emu").tests if t.category == "memory-safety")
    count = lambda t: int(t.output.split(" problem(s)")[0])  # noqa: E731 - "N problem(s):" heads the list
    assert not safety.passed and not cpu_only.passed
    # The compiled run's guard findings ("compiled on the GPU, n=...: the kernel wrote past the end of
    # out") join the CPU path's: one per case it wrote past the end in.
    assert count(safety) > count(cpu_only)


def test_the_emu_backend_runs_no_gpu_child(tmp_path, fake_gpu):
    report = graded(tmp_path, KERNEL, backend="emu")
    assert report.backend == "emu" and "Triton's compiler" not in report.device


def test_a_gpu_child_that_cannot_run_triton_is_a_note_and_the_cpu_verdicts_stand(tmp_path, monkeypatch):
    monkeypatch.setattr(tritongpu, "gpu_index", lambda requested: (0, ""))
    monkeypatch.setattr(tritongrade.tritongpu, "run_cases",
                        lambda *a, **k: tritongpu.GpuRun(fault="grader fault: torch sees no CUDA GPU in the grading's child"))
    report = graded(tmp_path, KERNEL)
    assert report.backend == "emu" and report.score == report.max_score
    assert any("The GPU path did not run (grader fault: torch sees no CUDA GPU" in n for n in report.notes)


class _InterpreterThatRaises(TritonWorker):
    """The CPU path's child, failing every case as an interpreter without a construct would."""

    def run_case(self, params, **kwargs):
        return CaseOutcome(False, error="InterpreterError: TypeError('only 0-dimensional arrays can be converted')", line=10)


def test_a_case_only_the_interpreter_fails_by_raising_is_judged_by_the_gpu(tmp_path, fake_gpu, monkeypatch):
    monkeypatch.setattr(tritongrade, "TritonWorker", _InterpreterThatRaises)
    report = graded(tmp_path, KERNEL)
    by = {t.category: t for t in report.tests}
    assert by["correctness"].passed and by["memory-safety"].passed, [t.output for t in report.tests]
    assert any("Triton's interpreter could not run" in n for n in report.notes)
    # The modelled traffic needs the interpreter: not run (the grader's limit), never failed.
    assert "traffic" not in by and any(n.category == "traffic" and n.grader_fault for n in report.not_run)


def test_a_case_both_paths_fail_is_the_students(tmp_path, fake_gpu, monkeypatch):
    monkeypatch.setattr(tritongrade, "TritonWorker", _InterpreterThatRaises)
    source = KERNEL.replace("BLOCK = 256", "BLOCK = 200")  # not a power of two: neither path runs it
    report = graded(tmp_path, source)
    assert not next(t for t in report.tests if t.category == "correctness").passed
    assert not any("could not run" in n for n in report.notes)


class _InterpreterThatCannotRun(TritonWorker):
    """The CPU path's child on a machine whose Triton interpreter fails the grader's own loop kernel."""

    def _start(self):
        self.fault = "grader fault: Triton 3.6.0's interpreter cannot run a loop kernel with NumPy 2.5.2"
        return LoadOutcome(False, error=self.fault)


def test_an_interpreter_that_cannot_run_leaves_the_gpu_to_judge_alone(tmp_path, fake_gpu, monkeypatch):
    monkeypatch.setattr(tritongrade, "TritonWorker", _InterpreterThatCannotRun)
    report = graded(tmp_path, KERNEL)
    by = {t.category: t for t in report.tests}
    assert report.backend == "gpu" and by["correctness"].passed and by["memory-safety"].passed, [t.output for t in report.tests]
    assert any("The CPU path did not run (grader fault: Triton 3.6.0" in n for n in report.notes)
    assert any(n.category == "traffic" and n.grader_fault for n in report.not_run)
    assert report.score == report.max_score  # the traffic points left the denominator
    # The GPU alone still fails a wrong kernel: its guard regions see the unmasked store.
    unmasked = graded(tmp_path, KERNEL.replace("tl.store(out_ptr + offsets, x + y, mask=mask)", "tl.store(out_ptr + offsets, x + y)"))
    assert not next(t for t in unmasked.tests if t.category == "memory-safety").passed


def test_with_the_interpreter_out_a_file_that_does_not_load_on_the_gpu_is_the_students(tmp_path, fake_gpu, monkeypatch):
    monkeypatch.setattr(tritongrade, "TritonWorker", _InterpreterThatCannotRun)
    report = graded(tmp_path, KERNEL + "\nthis is not python\n")
    assert not report.not_run and report.score == 0
    assert "does not load" in report.tests[0].output
