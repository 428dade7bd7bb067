"""What a careful TA expects at first contact: full marks where everything that can run passes, the
same score for the same file, grader failures never charged to the student, true messages."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader import api
from grader.checks import hidden
from grader.checks.performance import step_fraction
from grader.results import to_json

ROOT = Path(__file__).resolve().parent.parent
LEVEL2 = ROOT / "exercises" / "level2"
WRONG = ROOT / "reference" / "level2" / "wrong"


def _without_times(doc: dict) -> dict:
    doc = json.loads(json.dumps(doc))
    doc.pop("execution_time")
    doc["extra_data"].pop("stages")
    for t in doc["tests"]:
        if t["name"] == "Compiles":
            t["output"] = t["output"].split(" in ")[0]  # the compile time, and "(cached)"
    return doc


def test_the_seed_comes_from_the_exercise_the_content_and_the_secret():
    a = api.derive_seed("level2", "ab" * 32, secret="")
    assert a == api.derive_seed("level2", "ab" * 32, secret="")
    assert len({a, api.derive_seed("level1", "ab" * 32, secret=""), api.derive_seed("level2", "cd" * 32, secret=""),
                api.derive_seed("level2", "ab" * 32, secret="course")}) == 4
    assert 0 <= a < 2**31


def test_a_file_graded_twice_gets_identical_results(tmp_path):
    copy = tmp_path / "missing_first_barrier.cu"  # a regrade: the same bytes, another time and place
    copy.write_bytes((WRONG / "missing_first_barrier.cu").read_bytes())
    first = to_json(api.grade(LEVEL2, WRONG / "missing_first_barrier.cu", backend="emu"))
    second = to_json(api.grade(LEVEL2, copy, backend="emu"))
    assert first["extra_data"]["seeds"] == second["extra_data"]["seeds"]
    assert _without_times(first) == _without_times(second)


def test_the_reference_gets_full_marks_without_a_gpu_and_the_line_says_why():
    report = api.grade(LEVEL2, ROOT / "reference" / "level2" / "solution.cu", backend="emu")
    assert (report.score, report.max_score, report.raw_score, report.raw_max) == (100, 100, 85, 85)
    assert report.score_line().startswith("score: 100 / 100 (performance not run here: needs a GPU")


def test_a_proven_race_costs_the_correctness_points_every_time():
    report = api.grade(LEVEL2, WRONG / "missing_second_barrier.cu", backend="emu")
    tests = {t.name: t for t in report.tests}
    assert tests["Correctness"].score == 0 and tests["Correctness"].extra["race"]
    assert "missing_second_barrier.cu:29" in tests["Correctness"].output  # the race's lines are named
    assert tests["Hidden tests"].score == 0 and tests["Global memory traffic"].extra.get("gated")
    assert tests["Races and barriers"].score == 0 and tests["Memory safety"].passed


@pytest.mark.parametrize("reached, fraction", [(1.3, 1.0), (1.0, 1.0), (0.99, 0.75), (0.75, 0.75), (0.74, 0.5),
                                               (0.5, 0.5), (0.26, 0.25), (0.2, 0.0), (0.0, 0.0)])
def test_performance_points_move_in_quarter_steps(reached, fraction):
    assert step_fraction(reached) == fraction


def test_never_written_is_told_apart_from_a_nan_the_kernel_wrote(tmp_path):
    source = (ROOT / "reference" / "level2" / "solution.cu").read_text()
    beta = tmp_path / "beta_zero.cu"  # C = A*B + 0 * C: reads C, which holds no data yet
    beta.write_text(source.replace("C[row * N + col] = acc;", "C[row * N + col] = acc + 0.0f * C[row * N + col];"))
    text = next(t.output for t in api.grade(LEVEL2, beta, backend="emu").tests if t.name == "Correctness")
    assert "never written" not in text and "NaN written by the kernel" in text
    assert "beta_zero.cu:38" in text and "reads C before the kernel has written it" in text
    half = tmp_path / "half_rows.cu"  # the last row of every block never stored
    half.write_text(source.replace("if (row < N && col < N)", "if (row < N && col < N && ty != 31)"))
    text = next(t.output for t in api.grade(LEVEL2, half, backend="emu").tests if t.name == "Correctness")
    assert "never written by the kernel" in text and "NaN written" not in text and "reads C" not in text


def test_pytest_missing_is_the_graders_fault_not_the_students(monkeypatch):
    monkeypatch.setattr(hidden, "pytest_available", lambda: False)
    report = api.grade(LEVEL2, ROOT / "reference" / "level2" / "solution.cu", backend="emu")
    assert report.score == 100
    assert [(n.name, n.grader_fault) for n in report.grader_faults] == [("Hidden tests", True)]
    assert "pytest" in report.grader_faults[0].reason and "grader's problem" in report.grader_faults[0].reason
    assert "Hidden tests" not in {t.name for t in report.tests}


def _run_grade(tmp_path: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True, text=True, timeout=300,
                          cwd=ROOT, env={**os.environ, "KERNEL_GRADER_CACHE": "off", **(env or {})})


def test_a_broken_compiler_is_not_blamed_on_the_student_and_grade_exits_1(tmp_path):
    # A CuPy whose NVRTC binding does not import, as on a machine where the install went wrong.
    fake = tmp_path / "fake" / "cupy_backends"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('libnvrtc.so.13: cannot open shared object file')\n")
    out = tmp_path / "r.json"
    proc = _run_grade(tmp_path, str(LEVEL2), str(ROOT / "reference/level2/solution.cu"), "--backend", "emu", "--json", str(out),
                      env={"PYTHONPATH": str(tmp_path / "fake")})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "compile-time bomb" not in proc.stdout and "grader's problem" in proc.stdout
    doc = json.loads(out.read_text())
    assert doc["tests"] == [] and all(n["grader_fault"] for n in doc["extra_data"]["not_run"])
    assert "cannot open shared object" in doc["extra_data"]["not_run"][0]["reason"]


def test_grade_list_outside_the_repository_says_where_it_looked(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "grader", "list"], capture_output=True, text=True, cwd=tmp_path, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 2 and str(tmp_path / "exercises") in proc.stderr and "grade list path/to/exercises" in proc.stderr


def test_doctor_says_what_this_machine_can_grade():
    proc = _run_grade(Path("."), "doctor")
    assert proc.returncode == 0, proc.stdout
    for name in ("pytest", "NVRTC", "emulator", "GPU", "ncu", "compute-sanitizer"):
        assert name in proc.stdout
    assert "grading works here" in proc.stdout


def test_a_profiler_that_cannot_measure_is_the_graders_fault():
    from concurrent.futures import Future

    from grader.checks import REGISTRY
    from grader.checks.base import Context, CorrectnessSummary
    from grader.checks.counters import NCU_STAGE
    from grader.exercise import load
    from grader.tools import Tools

    exercise = load(LEVEL2)
    ctx = Context(exercise=exercise, backend="gpu", runner=None, seed=1, tools=Tools(ncu="/usr/bin/ncu"), source_name="s.cu",
                  source="", has_reference=True, emu_available=True)
    ctx.correctness = CorrectnessSummary(10, 10)
    failed: Future = Future()
    failed.set_result((None, "ncu reported 0 profiled launch(es), expected 2"))
    ctx.background[NCU_STAGE] = failed
    assert REGISTRY["traffic"].judge(ctx, exercise.spec.checks["traffic"]) == []
    (fault,) = ctx.not_run
    assert fault.grader_fault and fault.points == 15 and "ncu reported 0" in fault.reason
