"""grader.staff.autolab: autograde.tar and autograde-Makefile, run with `make` in a folder laid out
as Autolab lays it out (docs/lab.md: the handin renamed to its base name, the Makefile renamed)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from grader.cli import main
from grader.errors import UsageError
from grader.staff import autolab

ROOT = Path(__file__).resolve().parent.parent
EXERCISE = ROOT / "exercises" / "vector_add"
WRONG = ROOT / "reference" / "vector_add" / "wrong" / "no_guard.cu"

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make, as Autolab's image has")


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> autolab.Lab:
    return autolab.build_lab(EXERCISE, tmp_path_factory.mktemp("lab"))


def run_make(lab: autolab.Lab, tmp_path: Path, handin: bytes | None) -> list[str]:
    """An empty folder with the two files and the handin, then `make`, as Tango runs it (stdout and
    stderr together); the output's lines."""
    work = tmp_path / "job"
    work.mkdir()
    shutil.copy(lab.tarball, work / "autograde.tar")
    shutil.copy(lab.makefile, work / "Makefile")
    if handin is not None:
        (work / lab.handin).write_bytes(handin)
    environ = {**os.environ, "PYTHON": sys.executable}
    proc = subprocess.run(["make"], cwd=work, env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout
    return proc.stdout.rstrip().splitlines()


def autoresult(lines: list[str]) -> dict:
    """The last line parsed as Autolab parses it (assessment_autograde_core.rb: bare words before a
    colon are quoted first)."""
    return json.loads(re.sub(r"([a-zA-Z0-9]+):", r'"\1":', lines[-1]))


def grade_cli(source: Path, tmp_path: Path) -> dict:
    out = tmp_path / "grade.json"
    subprocess.run([sys.executable, "-m", "grader", "run", str(EXERCISE), str(source), "--backend", "emu", "--json", str(out),
                    "--quiet"], env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True, capture_output=True, timeout=300)
    return json.loads(out.read_text())


def test_the_tarball_holds_the_grader_and_the_exercise(lab):
    with tarfile.open(lab.tarball) as tar:
        names = set(tar.getnames())
        config = json.loads(tar.extractfile("kernel-grader.json").read())
    for required in ("kernel-grader/pyproject.toml", "kernel-grader/grader/staff/autolab.py", "exercises/vector_add/spec.toml",
                     "reference/vector_add/solution.cu"):
        assert required in names, required
    assert not any("/wrong/" in n or "__pycache__" in n for n in names)
    assert config["problem"] == "autograded" and config["filename"] == "submission.cu"
    makefile = lab.makefile.read_text()
    assert "tar xf autograde.tar" in makefile and "-m grader.staff.autolab kernel-grader.json -A" in makefile
    assert "FROM python:3.12-slim" in (lab.image / "Dockerfile").read_text() and "autodriver" in (lab.image / "Dockerfile").read_text()
    assert "`autograded`" in lab.readme.read_text()


def test_reference_gets_full_marks_under_make(lab, tmp_path):
    lines = run_make(lab, tmp_path, (ROOT / "reference/vector_add/solution.cu").read_bytes())
    assert autoresult(lines) == {"scores": {"autograded": 100.0}, "scoreboard": [100.0, None]}
    semantic = json.loads(lines[-2])
    assert semantic["_presentation"] == "semantic" and all(c["passed"] for c in semantic["Checks"].values())


def test_wrong_file_gets_the_score_grade_gives(lab, tmp_path):
    lines = run_make(lab, tmp_path, WRONG.read_bytes())
    expected = grade_cli(WRONG, tmp_path)
    result = autoresult(lines)
    assert 0 < result["scores"]["autograded"] < 100
    assert result["scores"]["autograded"] == pytest.approx(expected["score"])
    assert result["scoreboard"] == [result["scores"]["autograded"], None]
    assert any("Memory safety" in line and "FAILED" in line for line in lines)


def test_a_compile_error_scores_zero_and_the_output_says_why(lab, tmp_path):
    lines = run_make(lab, tmp_path, (ROOT / "reference/vector_add/wrong/does_not_compile.cu").read_bytes())
    assert autoresult(lines)["scores"] == {"autograded": 0.0}
    assert any("FAILED Compiles" in line for line in lines)


def test_a_missing_handin_scores_zero_with_a_message(lab, tmp_path):
    lines = run_make(lab, tmp_path, None)
    assert autoresult(lines)["scores"] == {"autograded": 0.0}
    assert any("submission.cu" in line for line in lines[:-1])


def test_without_dash_a_no_autoresult_is_printed(lab, tmp_path):
    work = tmp_path / "w"
    work.mkdir()
    with tarfile.open(lab.tarball) as tar:
        tar.extractall(work, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    (work / "submission.cu").write_bytes((ROOT / "reference/vector_add/solution.cu").read_bytes())
    proc = subprocess.run([sys.executable, "-m", "grader.staff.autolab", "kernel-grader.json"], cwd=work, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(work / "kernel-grader")}, timeout=300)
    assert proc.returncode == 0 and '"scores"' not in proc.stdout and "score: 100 / 100" in proc.stdout


def test_a_problem_name_autolab_cannot_parse_is_refused(tmp_path):
    with pytest.raises(UsageError, match="colon"):
        autolab.build_lab(EXERCISE, tmp_path, problem="Part 1: kernel")


def test_cli_writes_the_files(tmp_path):
    result = CliRunner().invoke(main, ["autolab", str(EXERCISE), "--out", str(tmp_path / "al"), "--problem", "Kernel"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "al/autograde.tar").is_file() and (tmp_path / "al/autograde-Makefile").is_file()
    assert "'Kernel'" in result.output
