"""grader.staff.prairielearn: the question folder, and its entry point run on a /grade tree laid out
as PrairieLearn lays out a grading job (docs/externalGrading.md, externalGraderCommon.buildDirectory)."""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from grader.cli import main
from grader.errors import UsageError
from grader.staff import prairielearn as pl

ROOT = Path(__file__).resolve().parent.parent
EXERCISE = ROOT / "exercises" / "vector_add"
WRONG = ROOT / "reference" / "vector_add" / "wrong" / "no_guard.cu"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> pl.Question:
    return pl.build_question(EXERCISE, tmp_path_factory.mktemp("pl"))


def job(question: pl.Question, tmp_path: Path, files: dict[str, bytes]) -> Path:
    """/grade as PrairieLearn builds it: serverFilesCourse, tests (the question's tests/), student,
    data/data.json, and no results/ (the grader must make it)."""
    grade = tmp_path / "grade"
    for sub in ("serverFilesCourse", "student", "data", "shared"):
        (grade / sub).mkdir(parents=True)
    shutil.copytree(question.question / "tests", grade / "tests")
    (grade / "data" / "data.json").write_text(json.dumps({"params": {}, "submitted_answers": {}}))
    for name, data in files.items():
        (grade / "student" / name).parent.mkdir(parents=True, exist_ok=True)
        (grade / "student" / name).write_bytes(data)
    return grade


def run_entrypoint(grade: Path, **env: str) -> dict:
    """The entrypoint as PrairieLearn runs it: made executable, run with nothing but the image's environment."""
    entry = grade / "tests" / "run_grader"
    entry.chmod(entry.stat().st_mode | stat.S_IXUSR)
    environ = {**os.environ, pl.ROOT_VARIABLE: str(grade), "KERNEL_GRADER_PYTHON": sys.executable,
               "PYTHONPATH": str(ROOT), **env}
    proc = subprocess.run([str(entry)], env=environ, capture_output=True, text=True, timeout=300, cwd=grade)
    assert proc.returncode == 0, proc.stderr
    return json.loads((grade / "results" / "results.json").read_text())


def grade_cli(source: Path, tmp_path: Path) -> dict:
    out = tmp_path / "grade.json"
    subprocess.run([sys.executable, "-m", "grader", "run", str(EXERCISE), str(source), "--backend", "emu", "--json", str(out),
                    "--quiet"], env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True, capture_output=True, timeout=300)
    return json.loads(out.read_text())


def test_question_folder_follows_prairielearns_formats(built):
    info = json.loads((built.question / "info.json").read_text())
    assert info["type"] == "v3" and info["gradingMethod"] == "External" and info["singleVariant"] is True
    uuid.UUID(info["uuid"])
    options = info["externalGradingOptions"]
    assert options["image"] == pl.DEFAULT_IMAGE and options["entrypoint"] == "/grade/tests/run_grader"
    assert isinstance(options["timeout"], int) and options["timeout"] <= 600
    html = (built.question / "question.html").read_text()
    assert '<pl-file-editor file-name="submission.cu" ace-mode="ace/mode/c_cpp" source-file-name="skeleton.cu">' in html
    assert "<pl-external-grader-results>" in html and "<pl-submission-panel>" in html and "<markdown>" in html
    assert (built.question / "skeleton.cu").read_bytes() == (EXERCISE / "skeleton.cu").read_bytes()
    tests = built.question / "tests"
    assert (tests / "exercises/vector_add/spec.toml").is_file() and (tests / "reference/vector_add/solution.cu").is_file()
    assert not list(tests.rglob("wrong"))
    assert json.loads((tests / "kernel-grader.json").read_text())["exercise"] == "exercises/vector_add"
    subprocess.run(["bash", "-n", str(tests / "run_grader")], check=True)
    assert (tests / "run_grader").stat().st_mode & stat.S_IXUSR
    assert (built.image / "Dockerfile").read_text().count("FROM python:3.12-slim") == 1
    assert "FROM nvidia/cuda:" in (built.image / "Dockerfile.gpu").read_text()
    assert (built.image / "kernel-grader/pyproject.toml").is_file() and (built.image / "kernel-grader/grader/api.py").is_file()


def test_uuid_is_stable_and_upload_variant(built, tmp_path):
    again = pl.build_question(EXERCISE, tmp_path, upload=True)
    assert again.uuid == built.uuid  # a rebuilt question replaces the old one in PrairieLearn
    html = (again.question / "question.html").read_text()
    assert '<pl-file-upload file-names="submission.cu"></pl-file-upload>' in html and "pl-file-editor" not in html
    assert not (again.question / "skeleton.cu").exists()


def test_a_timeout_past_prairielearns_limit_is_refused(tmp_path):
    with pytest.raises(UsageError, match="600"):
        pl.build_question(EXERCISE, tmp_path, timeout=590)


def test_reference_scores_one(built, tmp_path):
    results = run_entrypoint(job(built, tmp_path, {"submission.cu": (ROOT / "reference/vector_add/solution.cu").read_bytes()}))
    assert results["gradable"] is True and results["score"] == 1.0
    # PrairieLearn shows per-test points only when every test has both fields.
    assert all({"name", "points", "max_points", "message", "output"} <= set(t) for t in results["tests"])
    assert any(t["name"] == "Performance" and t["max_points"] == 0 and t["message"].startswith("not run") for t in results["tests"])
    assert results["kernel_grader"]["backend"] == "emu"


def test_wrong_file_gets_the_points_grade_gives(built, tmp_path):
    results = run_entrypoint(job(built, tmp_path, {"submission.cu": WRONG.read_bytes()}))
    expected = grade_cli(WRONG, tmp_path)
    assert 0 < results["score"] < 1
    assert results["score"] == pytest.approx(expected["score"] / expected["extra_data"]["max_score"])
    graded = {t["name"]: (t["points"], t["max_points"]) for t in results["tests"] if t["max_points"] or t["name"] == "Compiles"}
    assert graded == {t["name"]: (t["score"], t["max_score"]) for t in expected["tests"]}


def test_a_hostile_file_name_is_graded_and_shown_harmlessly(built, tmp_path):
    name = "$(touch PWNED)\x1b[31m\nkernel.cu"
    grade = job(built, tmp_path, {name: (ROOT / "reference/vector_add/solution.cu").read_bytes()})
    results = run_entrypoint(grade)
    assert results["gradable"] is True and results["score"] == 1.0
    note = results["message"].splitlines()[0]
    assert "please name it submission.cu" in note.lower() and "\x1b" not in json.dumps(results)
    assert "?kernel.cu" in note  # the newline and the escape shown as "?", on one line
    assert not list(tmp_path.rglob("PWNED"))


def test_a_missing_file_is_not_gradable_and_says_why(built, tmp_path):
    results = run_entrypoint(job(built, tmp_path, {"notes.txt": b"hello"}))
    assert results["gradable"] is False
    assert "submission.cu" in results["message"] and results["format_errors"]


def test_a_compile_error_is_graded_zero(built, tmp_path):
    broken = ROOT / "reference/vector_add/wrong/does_not_compile.cu"
    results = run_entrypoint(job(built, tmp_path, {"submission.cu": broken.read_bytes()}))
    assert results["gradable"] is True and results["score"] == 0.0
    assert any(t["name"] == "Compiles" and t["message"] == "failed" for t in results["tests"])


def test_python_that_cannot_start_still_leaves_results(built, tmp_path):
    results = run_entrypoint(job(built, tmp_path, {"submission.cu": b""}), KERNEL_GRADER_PYTHON="/nonexistent/python")
    assert results["gradable"] is False and "not a verdict" in results["message"]


def test_cli_writes_the_question(tmp_path):
    result = CliRunner().invoke(main, ["prairielearn", str(EXERCISE), "--out", str(tmp_path / "pl"), "--image", "me/kg"])
    assert result.exit_code == 0, result.output
    assert "docker build -t me/kg" in result.output
    assert json.loads((tmp_path / "pl/questions/vector_add/info.json").read_text())["externalGradingOptions"]["image"] == "me/kg"


def test_a_file_name_that_would_break_the_html_is_refused(tmp_path):
    with pytest.raises(UsageError, match="plain file name"):
        pl.build_question(EXERCISE, tmp_path, filename='a" onload="x.cu')
