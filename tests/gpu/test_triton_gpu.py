"""The Triton kind on a real GPU: every Triton exercise validates with its reference compiled by
Triton in a jailed child given the GPU; a missing store mask is caught by the guard regions of the
compiled run; a grading on the GPU and one on the CPU path alone agree on the score."""
from __future__ import annotations

from pathlib import Path

import pytest

from grader.api import grade
from grader.staff.validate import validate

pytest.importorskip("torch")
pytest.importorskip("triton")
pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]
TRITON = sorted(p.name for p in (ROOT / "exercises").iterdir() if p.name.startswith("triton_"))


@pytest.mark.parametrize("exercise", TRITON)
def test_triton_exercise_validates_on_the_gpu(exercise):
    result = validate(ROOT / "exercises" / exercise, backend="gpu", seed=1)
    failures = [text for ok, text in result.items if not ok]
    assert not failures, "\n".join(failures)


def test_the_reference_runs_compiled_on_the_gpu_and_scores_as_on_the_cpu():
    path = ROOT / "reference" / "triton_vector_add" / "solution.py"
    on_gpu = grade(ROOT / "exercises" / "triton_vector_add", path, backend="gpu", seed=3)
    on_cpu = grade(ROOT / "exercises" / "triton_vector_add", path, backend="emu", seed=3)
    assert on_gpu.backend == "gpu" and "Triton's compiler" in on_gpu.device, (on_gpu.device, on_gpu.notes)
    assert on_gpu.score == on_cpu.score == on_gpu.max_score


def test_an_unmasked_store_writes_into_the_guard_on_the_gpu(tmp_path):
    """The compiled run alone (the CPU's watch would name the store too): its guard regions see it."""
    import numpy as np

    from grader import exercise as exercise_module
    from grader.notebook import SourceMap
    from grader.triton import gpu as tritongpu
    from grader.triton.grade import Findings, case_params, harness, judge_case

    source = (ROOT / "reference" / "triton_vector_add" / "solution.py").read_text()
    source = source.replace("tl.store(out_ptr + offsets, x + y, mask=mask)", "tl.store(out_ptr + offsets, x + y)")
    exercise = exercise_module.load(ROOT / "exercises" / "triton_vector_add")
    spec, module, rng = exercise.spec, harness(exercise), np.random.default_rng(3)
    prepared = []
    for sizes in spec.public_cases:
        inputs = module.make_inputs(dict(sizes), rng)
        prepared.append(("correctness", sizes, inputs, module.reference(dict(inputs), dict(sizes))))
    run = tritongpu.run_cases(source, spec, prepared, case_params, 0, ())
    assert not run.fault and run.outcomes, run.fault
    findings = Findings()
    for i, outcome in run.outcomes:
        check, sizes, inputs, expected = prepared[i]
        judge_case(spec, sizes, inputs, expected, outcome, SourceMap("sub.py"), check, findings, prefix=tritongpu.PREFIX)
    problems = findings.by_check.get("memory-safety", [])
    assert any("compiled on the GPU" in p and "past the end of out" in p for p in problems), problems


def _performance(report):
    timed = [t for t in report.tests if t.category == "performance"]
    assert len(timed) == 1 and not report.not_run, (timed, report.not_run, report.notes)
    return timed[0]


def test_the_reference_vector_add_earns_every_performance_point_on_the_gpu():
    path = ROOT / "reference" / "triton_vector_add" / "solution.py"
    report = grade(ROOT / "exercises" / "triton_vector_add", path, backend="gpu", seed=5)
    assert report.backend == "gpu", report.notes
    timed = _performance(report)
    assert timed.passed and timed.score == timed.max_score == 10, timed.output
    assert "library (torch)" in timed.output and "µs" in timed.output


def test_a_vector_add_launched_chunk_by_chunk_from_python_earns_fewer_performance_points():
    path = ROOT / "tests" / "data" / "triton_slow" / "vector_add_python_loop.py"
    report = grade(ROOT / "exercises" / "triton_vector_add", path, backend="gpu", seed=5)
    assert report.backend == "gpu", report.notes
    right = [t for t in report.tests if t.category == "correctness"]
    assert right and all(t.passed for t in right), [t.output for t in right]
    timed = _performance(report)
    assert not timed.passed and timed.score < timed.max_score, timed.output
    assert timed.extra["min_us"]["submission"] > timed.extra["min_us"]["reference"], timed.extra
