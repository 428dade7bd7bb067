"""grader.staff.gradebook: a real batch's output exported for Canvas, Moodle and a spreadsheet,
read back with csv: each platform's columns, roster matching by exact identity only, every
unmatched submission and student listed, and no cell a spreadsheet would run as a formula."""
from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from grader.cli import main
from grader.errors import UsageError
from grader.staff import batch, gradebook

ROOT = Path(__file__).resolve().parent.parent
EXERCISE = ROOT / "exercises" / "vector_add"


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Path:
    """`grade batch` over three files: alice (the reference), bob (a wrong file) and one whose name
    a spreadsheet would read as a formula."""
    subs = tmp_path_factory.mktemp("subs")
    shutil.copy(ROOT / "reference/vector_add/solution.cu", subs / "alice.cu")
    shutil.copy(ROOT / "reference/vector_add/wrong/no_guard.cu", subs / "bob.cu")
    shutil.copy(ROOT / "reference/vector_add/wrong/no_guard.cu", subs / "=cmd.cu")
    out = tmp_path_factory.mktemp("batch") / "level_va"
    batch.run_batch(EXERCISE, subs, out, batch.Options(backend="emu", workers=2))
    return out


@pytest.fixture
def batch_out(graded, tmp_path) -> Path:
    copy = tmp_path / graded.name
    shutil.copytree(graded, copy)
    return copy


def write_csv(path: Path, rows: list[list[str]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    return path


def read_csv(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def set_submitters(batch_out: Path, student: str, submitters: list[str]) -> None:
    path = batch_out / "results" / f"{student}.json"
    doc = json.loads(path.read_text())
    doc["extra_data"]["batch"]["submitters"] = submitters
    path.write_text(json.dumps(doc))


def scores_of(batch_out: Path) -> dict[str, float]:
    return {p.stem: json.loads(p.read_text())["score"] for p in (batch_out / "results").glob("*.json")}


def test_canvas_export_has_the_importers_columns(batch_out, tmp_path):
    roster = write_csv(tmp_path / "canvas.csv", [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Homework 1 (11)"],
        ["    Points Possible", "", "", "", "", "10"],
        ["Alice A", "101", "S1", "alice", "Sec 1", "9"],
        ["=HYPERLINK(\"http://x\")", "102", "S2", "BOB", "Sec 1", ""],
        ["Carol C", "103", "S3", "carol", "Sec 2", ""],
    ])
    out = tmp_path / "canvas_out.csv"
    result = gradebook.export(batch_out, roster, "canvas", out, assignment="Vector add", assignment_id="4242")
    rows = read_csv(out)
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Vector add (4242)"]
    assert rows[1] == ["Points Possible", "", "", "", "", "100"]
    by_login = {r[3]: r for r in rows[2:]}
    scores = scores_of(batch_out)
    assert float(by_login["alice"][5]) == scores["alice"] == 100
    assert float(by_login["BOB"][5]) == pytest.approx(scores["bob"])  # matched ignoring case
    assert by_login["carol"][5] == ""  # no submission: left empty, never a 0 she did not get
    assert by_login["BOB"][0] == "'=HYPERLINK(\"http://x\")"  # shown as text, never run
    kinds = {(p.kind, p.submission or p.roster) for p in result.problems}
    assert kinds == {("unmatched-submission", "cmd"), ("no-submission", "carol")}
    problems = read_csv(result.problems_path)
    assert problems[0] == ["problem", "submission", "SIS Login ID", "detail"] and len(problems) == 3


def test_moodle_export_matches_gradescope_submitters_by_email_and_sid(batch_out, tmp_path):
    set_submitters(batch_out, "alice", ["Alice A <Alice@Uni.edu> 1001"])
    set_submitters(batch_out, "bob", ["Bob B <bob@uni.edu> 1002", "Dan D <dan@uni.edu> 1004"])  # a pair
    roster = write_csv(tmp_path / "moodle.csv", [
        ["First name", "Surname", "ID number", "Email address", "Institution"],
        ["Alice", "A", "1001", "alice@uni.edu", "U"],
        ["Bob", "B", "1002", "bob@uni.edu", "U"],
        ["Dan", "D", "1004", "dan@uni.edu", "U"],
        ["Alice", "Other", "1009", "alice2@uni.edu", "U"],  # same first name, different person: never matched by name
    ])
    out = tmp_path / "moodle_out.csv"
    gradebook.export(batch_out, roster, "moodle", out, key="ID number", assignment="Kernel 1")
    rows = read_csv(out)
    assert rows[0] == ["First name", "Surname", "ID number", "Email address", "Kernel 1"]
    grades = {r[2]: r[4] for r in rows[1:]}
    scores = scores_of(batch_out)
    assert float(grades["1001"]) == scores["alice"]
    assert float(grades["1002"]) == float(grades["1004"]) == pytest.approx(scores["bob"])  # both partners
    assert grades["1009"] == ""


def test_generic_export_keeps_the_roster_and_scales_points(batch_out, tmp_path):
    roster = write_csv(tmp_path / "r.csv", [["id", "name"], ["alice", "-1+1"], ["cmd", "@me"], ["zed", "Zed"]])
    out = tmp_path / "generic.csv"
    gradebook.export(batch_out, roster, "generic", out, points=10)
    rows = read_csv(out)
    assert rows[0] == ["id", "name", "submission", "score", "max score", "status"]
    assert rows[1] == ["alice", "'-1+1", "alice", "10", "10", "graded"]
    assert rows[2][0] == "cmd" and rows[2][1] == "'@me" and float(rows[2][3]) == pytest.approx(scores_of(batch_out)["cmd"] / 10)
    assert rows[3] == ["zed", "Zed", "", "", "10", "no submission"]


def test_two_submissions_for_one_student_leave_the_cell_empty(batch_out, tmp_path):
    roster = write_csv(tmp_path / "r.csv", [["id", "email"], ["bob", "bob@uni.edu"]])
    set_submitters(batch_out, "cmd", ["Bob B <bob@uni.edu> 1002"])
    result = gradebook.export(batch_out, roster, "generic", tmp_path / "g.csv", key="email")
    assert read_csv(tmp_path / "g.csv")[1][2] == "cmd"  # one submission names him: it is his
    set_submitters(batch_out, "alice", ["Bob B <bob@uni.edu> 1002"])
    result = gradebook.export(batch_out, roster, "generic", tmp_path / "g.csv", key="email")
    assert read_csv(tmp_path / "g.csv")[1][2:4] == ["", ""]  # two do: which one counts is staff's call
    several = [p for p in result.problems if p.kind == "several-submissions"]
    assert len(several) == 1 and set(several[0].submission.split("; ")) == {"alice", "cmd"}


def test_a_grader_error_is_no_grade(batch_out, tmp_path):
    path = batch_out / "results" / "bob.json"
    doc = json.loads(path.read_text())
    doc["extra_data"]["batch"]["status"] = "grader-error"
    path.write_text(json.dumps(doc))
    roster = write_csv(tmp_path / "r.csv", [["id"], ["bob"]])
    result = gradebook.export(batch_out, roster, "generic", tmp_path / "g.csv")
    assert read_csv(tmp_path / "g.csv")[1] == ["bob", "bob", "", "100", "grader-error"]
    assert any(p.kind == "not-graded" and p.submission == "bob" for p in result.problems)


def test_usage_errors(batch_out, tmp_path):
    roster = write_csv(tmp_path / "r.csv", [["login"], ["alice"]])
    with pytest.raises(UsageError, match="no column 'id'"):
        gradebook.export(batch_out, roster, "generic", tmp_path / "g.csv")
    with pytest.raises(UsageError, match="Canvas"):
        gradebook.export(batch_out, roster, "canvas", tmp_path / "g.csv", key="login")
    with pytest.raises(UsageError, match="Moodle"):
        gradebook.export(batch_out, roster, "moodle", tmp_path / "g.csv", key="login")
    (batch_out / "grades.csv").unlink()
    with pytest.raises(UsageError, match="grade batch"):
        gradebook.export(batch_out, roster, "generic", tmp_path / "g.csv", key="login")


def test_cli_lists_the_problems_on_stderr(batch_out, tmp_path):
    roster = write_csv(tmp_path / "r.csv", [["id"], ["alice"], ["nobody"]])
    result = CliRunner().invoke(main, ["gradebook", str(batch_out), "--roster", str(roster), "--format", "generic",
                                       "--out", str(tmp_path / "g.csv")])
    assert result.exit_code == 0, result.output
    assert "gradebook: no-submission: nobody" in result.stderr
    assert "gradebook: unmatched-submission: bob" in result.stderr and "gradebook: unmatched-submission: cmd" in result.stderr
    assert "3 problem(s)" in result.stdout
