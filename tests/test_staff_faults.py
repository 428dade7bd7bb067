"""Faults in the course staff's own code (the harness, a hidden test) are the grader's, never the student's.

Each test builds a small exercise in a temporary folder from vector_add (a one-line kernel: a grading
takes about a second on the emulator) and breaks one piece of the staff's code in it.
"""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader import api, results
from grader.errors import SpecError
from grader.exercise import load

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = ROOT / "reference" / "vector_add" / "solution.cu"
GOOD_HARNESS = (ROOT / "exercises" / "vector_add" / "harness.py").read_text()


def _exercise(tmp_path: Path, harness: str = GOOD_HARNESS, hidden: dict[str, str] | None = None,
              hidden_points: float | None = None) -> Path:
    """A copy of vector_add under tmp_path/exercises/vector_add with the given harness and hidden tests."""
    root = tmp_path / "exercises" / "vector_add"
    shutil.copytree(ROOT / "exercises" / "vector_add", root)
    shutil.copytree(ROOT / "reference" / "vector_add", tmp_path / "reference" / "vector_add")
    (root / "harness.py").write_text(harness)
    if hidden is not None:
        (root / "tests").mkdir()
        for name, text in hidden.items():
            (root / "tests" / name).write_text(text)
    if hidden_points is not None:
        spec = (root / "spec.toml").read_text()
        (root / "spec.toml").write_text(spec.replace("[limits]", f"[hidden_tests]\npoints = {hidden_points}\n\n[limits]"))
    return root


def _broken(where: str) -> str:
    """vector_add's harness with a KeyError in one of its functions."""
    text = GOOD_HARNESS + '''

def magnitude(inputs, sizes):
    return {"out": abs(inputs["x"].astype(np.float64)) + abs(inputs["y"].astype(np.float64))}
'''
    marker = {"make_inputs": '    n = sizes["n"]\n',
              "reference": '    return {"out": inputs["x"]',
              "magnitude": '    return {"out": abs('}[where]
    assert marker in text
    return text.replace(marker, '    sizes["no such size"]\n' + marker, 1)


def _student_text(document: dict) -> str:
    """Everything a student reads in a results document: the output and every test's output."""
    return document["output"] + "\n".join(t["output"] for t in document["tests"]) + \
        "\n".join(n["reason"] for n in document["extra_data"]["not_run"])


@pytest.mark.parametrize("where", ["make_inputs", "reference", "magnitude"])
def test_a_harness_that_raises_scores_nothing_and_is_the_graders_fault(tmp_path, where):
    report = api.grade(_exercise(tmp_path, _broken(where)), SOLUTION, backend="emu")
    assert [t.category for t in report.tests] == ["compile"]  # nothing judged on the broken harness
    checks = {n.category for n in report.not_run}
    assert checks == {"correctness", "memory-safety", "traffic", "performance"}
    assert all(n.grader_fault for n in report.not_run)
    assert report.grader_faults and report.raw_max == 0  # every point left the denominator
    assert all("KeyError" in n.detail and "no such size" in n.detail for n in report.not_run)
    assert all(f"harness.py, in {where}" in n.reason for n in report.not_run)
    document = results.to_json(report)
    results.validate(document)
    assert all(n["detail"] for n in document["extra_data"]["not_run"])
    shown = _student_text(document) + "\n".join(results.summary_lines(report))
    assert "Traceback" not in shown and "no such size" not in shown and "KeyError" not in shown
    assert "exited with status" not in shown


def test_a_harness_that_does_not_import_is_the_graders_fault(tmp_path):
    report = api.grade(_exercise(tmp_path, GOOD_HARNESS + "\nraise RuntimeError('staff typo')\n"), SOLUTION, backend="emu")
    assert [t.category for t in report.tests] == ["compile"]
    assert report.not_run and all(n.grader_fault and "staff typo" in n.detail for n in report.not_run)


def test_a_good_harness_has_no_fault(tmp_path):
    report = api.grade(_exercise(tmp_path, _broken("make_inputs").replace('    sizes["no such size"]\n', "")), SOLUTION,
                       backend="emu")
    assert not report.grader_faults
    assert all(t.passed for t in report.tests) and "correctness" in {t.category for t in report.tests}


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True, text=True, env=env, timeout=300)


def test_grade_exits_1_with_the_traceback_on_stderr_only(tmp_path):
    out = tmp_path / "results.json"
    done = _cli("run", str(_exercise(tmp_path, _broken("reference"))), str(SOLUTION), "--backend", "emu", "--json", str(out))
    assert done.returncode == 1, done.stderr
    assert "Traceback" in done.stderr and "no such size" in done.stderr and "harness.py" in done.stderr
    assert "Traceback" not in done.stdout and "no such size" not in done.stdout
    document = json.loads(out.read_text())
    assert "no such size" in document["extra_data"]["not_run"][0]["detail"]
    assert "no such size" not in _student_text(document)


HIDDEN = '''
import numpy as np


def test_sum_is_right(launch, make_inputs):
    out = launch({"n": 40}, make_inputs({"n": 40}))
    assert out.error is None, out.error
'''


def test_a_hidden_test_that_raises_valueerror_is_the_graders_fault(tmp_path):
    broken = HIDDEN + '''

def test_staff_bug(launch, make_inputs):
    raise ValueError("staff wrote this wrong")
'''
    root = _exercise(tmp_path, hidden={"test_hidden.py": broken}, hidden_points=5)
    report = api.grade(root, SOLUTION, backend="emu")
    hidden = [n for n in report.not_run if n.name == "Hidden tests"]
    assert len(hidden) == 1 and hidden[0].grader_fault
    assert "test_staff_bug" in hidden[0].reason and "ValueError" in hidden[0].detail
    assert "staff wrote this wrong" not in _student_text(results.to_json(report))
    # The launches themselves were fine: the other checks are graded.
    assert {t.category for t in report.tests} >= {"correctness", "memory-safety"}
    assert all(t.passed for t in report.tests)


def test_a_hidden_assertion_is_the_students(tmp_path):
    failing = HIDDEN + '''

def test_wrong_claim(launch, make_inputs):
    out = launch({"n": 40}, make_inputs({"n": 40}))
    assert np.all(out["out"] == 12345.0), "out should be 12345 everywhere"
'''
    report = api.grade(_exercise(tmp_path, hidden={"test_hidden.py": failing}, hidden_points=5), SOLUTION, backend="emu")
    assert not report.grader_faults
    hidden = [t for t in report.tests if t.name == "Hidden tests"]
    assert len(hidden) == 1 and not hidden[0].passed and hidden[0].score == pytest.approx(2.5)
    assert "out should be 12345 everywhere" in hidden[0].output


def test_hidden_points_without_test_files_are_refused_at_load(tmp_path):
    root = _exercise(tmp_path, hidden_points=5)
    with pytest.raises(SpecError, match=r"\[hidden_tests\] gives 5 points but .* holds no test_\*\.py file"):
        load(root)
    (root / "tests").mkdir()
    (root / "tests" / "helpers.py").write_text("")  # not a test file
    with pytest.raises(SpecError):
        load(root)
    done = _cli("run", str(root), str(SOLUTION), "--backend", "emu")
    assert done.returncode == 2 and "no test_*.py file" in done.stderr


def test_hidden_tests_with_no_points_and_no_files_load(tmp_path):
    assert load(_exercise(tmp_path, hidden_points=0)).spec.hidden_tests.points == 0


def test_batch_records_a_harness_fault_as_grader_error_and_grades_it_again(tmp_path):
    from grader.staff import batch

    root = _exercise(tmp_path, _broken("make_inputs"))
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(SOLUTION, subs / "alice.cu")
    out = tmp_path / "out"
    first = batch.run_batch(root, subs, out, batch.Options(backend="emu", workers=1, fork_server=False))
    assert first.graded_now == 1 and first.summary.by_status == {"grader-error": 1}
    document = json.loads((out / batch.RESULTS / "alice.json").read_text())
    assert document["extra_data"]["batch"]["status"] == "grader-error"
    assert "no such size" in document["extra_data"]["not_run"][0]["detail"]
    assert "no such size" not in _student_text(document)
    rows = list(csv.reader((out / batch.CSV_NAME).open()))
    alice = dict(zip(rows[0], rows[2]))
    assert alice["id"] == "alice" and alice["total"] == "" and alice["status"] == "grader-error"
    assert sum(n for _, n in first.summary.histogram) == 0  # no score to place in a band
    # Fixed, the next run grades it again (a grader error is never kept as done).
    (root / "harness.py").write_text(GOOD_HARNESS)
    second = batch.run_batch(root, subs, out, batch.Options(backend="emu", workers=1, fork_server=False))
    assert second.graded_now == 1 and second.summary.by_status == {"graded": 1}


def test_grade_batch_exits_1_when_a_submission_was_not_graded(tmp_path):
    root = _exercise(tmp_path, _broken("reference"))
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(SOLUTION, subs / "bob.cu")
    done = _cli("batch", str(root), str(subs), "--out", str(tmp_path / "out"), "--backend", "emu", "--workers", "1")
    assert done.returncode == 1, done.stderr
    assert "1 submission(s) were not graded" in done.stderr


@pytest.mark.gpu
@pytest.mark.parametrize("where", ["make_inputs", "reference"])
def test_a_harness_fault_on_the_gpu_backend(tmp_path, where):
    report = api.grade(_exercise(tmp_path, _broken(where)), SOLUTION, backend="gpu")
    assert [t.category for t in report.tests] == ["compile"]
    assert report.not_run and all(n.grader_fault and "no such size" in n.detail for n in report.not_run)
    assert "no such size" not in _student_text(results.to_json(report))


def _one_wrong(tmp_path: Path, header: str, harness: str = GOOD_HARNESS) -> Path:
    """The tmp exercise with a single wrong file: wrong_op.cu (x - y: wrong at every size) under `header`."""
    root = _exercise(tmp_path, harness)
    wrong = tmp_path / "reference" / "vector_add" / "wrong"
    body = (wrong / "wrong_op.cu").read_text().split("\n", 1)[1]
    shutil.rmtree(wrong)
    wrong.mkdir()
    (wrong / "wrong_op.cu").write_text(header + "\n" + body)
    return root


def test_validate_says_not_graded_when_the_expected_check_was_gated(tmp_path):
    from grader.staff.validate import validate

    result = validate(_one_wrong(tmp_path, "// expect: memory-safety"), backend="emu", seed=1)
    (ok, text), = [(ok, text) for ok, text in result.items if "wrong_op.cu" in text]
    assert not ok
    assert "memory-safety was not graded (gated: the kernel did not produce a correct result" in text
    assert "passed it" not in text


def test_validate_says_fails_when_the_expected_check_failed(tmp_path):
    from grader.staff.validate import validate

    result = validate(_one_wrong(tmp_path, "// expect: correctness"), backend="emu", seed=1)
    assert (True, "wrong/wrong_op.cu: fails correctness") in result.items


def test_validate_reports_a_harness_fault_as_not_graded(tmp_path):
    from grader.staff.validate import validate

    result = validate(_one_wrong(tmp_path, "// expect: correctness", _broken("reference")), backend="emu", seed=1)
    texts = [text for ok, text in result.items if not ok]
    assert any(t.startswith("reference scores") and "grader fault" in t and "KeyError" in t for t in texts), texts
    assert any(t.startswith("wrong/wrong_op.cu: not graded (grader fault:") for t in texts), texts
    assert not any("cannot run on this backend" in text for _, text in result.items)


def test_reading_an_output_of_a_failed_launch_is_the_students_failure():
    from grader.run.child.hidden_tests import KernelRun

    run = KernelRun()
    run.error = "an out-of-bounds write at line 7"
    with pytest.raises(AssertionError, match="no output 'C': the launch failed"):
        run["C"]
    with pytest.raises(KeyError):
        KernelRun()["C"]  # a launch that ran: a name it does not have is the test's own mistake
