"""grader.staff.student_bundle: the student bundle validates, grades, and carries nothing hidden (checked by content)."""
from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import nbformat
import pytest
from click.testing import CliRunner

from grader import api
from grader.staff import conventions
from grader.staff import student_bundle as student
from grader.cli import main
from grader.exercise import load

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
# Kernel exercises (Python exercises' bundles are tested in tests/test_pystudent.py).
# The CUDA exercises: their bundles are built here; the Python and Triton kinds' own bundles are tested
# beside their kinds (tests/test_pystudent.py, tests/test_triton_student.py).
EXERCISES = sorted(p.parent.name for p in (ROOT / "exercises").glob("*/spec.toml") if load(p.parent).suffix == ".cu")


def bundled_texts(bundle: student.StudentBundle) -> dict[str, str]:
    """Every bundled file's text; for the notebook both the raw JSON and the decoded cell sources."""
    texts = {}
    for path in bundle.folder.rglob("*"):
        if path.is_file():
            texts[path.name] = path.read_text(encoding="utf-8")
    nb = nbformat.read(str(bundle.notebook), as_version=4)
    texts["notebook cells"] = "\n".join(cell.source for cell in nb.cells)
    return texts


def test_bundle_files_spec_and_notebook(level2, tmp_path):
    bundle = student.build_bundle(level2, tmp_path, pip_source="https://course.example.edu/kg.whl")
    assert bundle.folder == tmp_path / "level2"
    assert sorted(p.name for p in bundle.folder.iterdir()) == ["README.md", "harness.py", "level2.ipynb", "reference_counters.json",
                                                                  "skeleton.cu", "spec.toml"]
    raw = tomllib.loads((bundle.folder / "spec.toml").read_text())
    original = tomllib.loads((level2 / "spec.toml").read_text())
    assert "hidden" not in raw["cases"] and "hidden_tests" not in raw
    assert raw["cases"]["public"] == original["cases"]["public"] and raw["checks"] == original["checks"]
    ex = load(bundle.folder)  # a valid exercise the student can grade against
    assert ex.spec.hidden_cases == () and ex.spec.hidden_tests is None
    assert (bundle.folder / "skeleton.cu").read_text() == (level2 / "skeleton.cu").read_text()

    nb = nbformat.read(str(bundle.notebook), as_version=4)
    nbformat.validate(nb)
    sources = [c.source for c in nb.cells]
    assert nb.cells[0].cell_type == "markdown" and "matmul_tiled" in nb.cells[0].source
    install = next(s for s in sources if "!pip install" in s)
    assert "https://course.example.edu/kg.whl" in install and install.startswith("#")  # documented in the cell
    writefile = next(s for s in sources if s.startswith("%%writefile submission.cu"))
    assert writefile.split("\n", 1)[1].strip() == (level2 / "skeleton.cu").read_text().strip()
    assert any(s.rstrip().endswith("!grade level2 submission.cu") for s in sources)
    assert nb.metadata["accelerator"] == "GPU" and nb.metadata["kernelspec"]["name"] == "python3"
    readme = (bundle.folder / "README.md").read_text()
    assert "not run" in readme and "reference solution" in readme


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_nothing_hidden_in_the_bundle(exercise_id, tmp_path):
    """No hidden-only size in any form, no line of the solution or the wrong corpus the skeleton lacks,
    no line of a hidden test (grader.staff.conventions.bundle_leaks; `grade validate` checks it too),
    read in every bundled file and in the notebook's decoded cells."""
    folder = ROOT / "exercises" / exercise_id
    bundle = student.build_bundle(folder, tmp_path)
    assert conventions.bundle_leaks(load(folder), "\n".join(bundled_texts(bundle).values())) == []


def test_bundle_leaks_finds_each_kind_of_secret(level2):
    ex = load(level2)
    hidden = next(c for c in ex.spec.hidden_cases if c not in ex.spec.public_cases + ex.spec.emu_cases
                  and all(c not in (s.size, s.emu_size) for s in ex.spec.checks.values()))
    (name, value), = hidden.items()
    solution_only = sorted({l.strip() for l in ex.solution_path.read_text().splitlines() if l.strip()}
                           - {l.strip() for l in ex.skeleton_path.read_text().splitlines()})[0]
    test_line = "assert np.array_equal(out[\"C\"].reshape(45, 45), inputs[\"B\"]), \"I @ B should equal B exactly (N = 45)\""
    for text, expect in ((f"We test {name} = {value} too.", f"{name} = {value}"), (f"sizes 1, 2, {value}", "list of sizes"),
                         (solution_only, "solution.cu"), (test_line, "tests/test_hidden.py"), ("[hidden_tests]", "[hidden_tests]")):
        problems = conventions.bundle_leaks(ex, text)
        assert any(expect in p for p in problems), (text, problems)
    assert conventions.bundle_leaks(ex, (level2 / "skeleton.cu").read_text()) == []


def test_distinctive_secrets_leak_nowhere(root, tmp_path):
    """An exercise whose hidden sizes, hidden test and solution carry unique markers: none may appear."""
    ex_dir = tmp_path / "course" / "exercises" / "secretex"
    shutil.copytree(root / "exercises" / "level2", ex_dir, ignore=shutil.ignore_patterns("__pycache__"))
    spec = (ex_dir / "spec.toml").read_text().replace('id = "level2"', 'id = "secretex"')
    spec = re.sub(r"hidden = \[.*?\}\]", "# hidden sizes chosen to catch 7919-wide tiles\nhidden = [{ N = 977 }, { N = 1013 }]",
                  spec, count=1, flags=re.DOTALL)
    (ex_dir / "spec.toml").write_text(spec)
    (ex_dir / "tests").mkdir(exist_ok=True)
    (ex_dir / "tests" / "test_secret.py").write_text("def test_secret_marker_q8z():\n    assert 'SECRET-TEST-MARKER'\n")
    ref = tmp_path / "course" / "reference" / "secretex"
    ref.mkdir(parents=True)
    (ref / "solution.cu").write_text("// SECRET-SOLUTION-MARKER\n" + (root / "reference/level2/solution.cu").read_text())
    assert load(ex_dir).spec.hidden_cases == ({"N": 977}, {"N": 1013})

    bundle = student.build_bundle(ex_dir, tmp_path / "out")
    for name, text in bundled_texts(bundle).items():
        for marker in ("977", "1013", "7919", "SECRET-TEST-MARKER", "test_secret_marker_q8z", "SECRET-SOLUTION-MARKER"):
            assert marker not in text, f"{marker} leaked into {name}"
    assert not (bundle.folder / "tests").exists()


def test_bundle_grades_traffic_against_shipped_counters_and_lists_performance_as_not_run(level2, root, tmp_path):
    bundle = student.build_bundle(level2, tmp_path)
    # A correct kernel (the staff's, from outside the bundle) graded the way a student would grade theirs.
    report = api.grade(bundle.folder, root / "reference/level2/solution.cu", backend="emu", seed=1)
    assert all(t.passed for t in report.tests) and report.score == report.max_score
    traffic = next(t for t in report.tests if t.category == "traffic")
    assert "come with the exercise" in traffic.output
    not_run = {n.category: n.reason for n in report.not_run}
    assert "traffic" not in not_run and "performance" in not_run


def test_cli_student_writes_bundle_and_warns_about_placeholder(level2, tmp_path):
    result = CliRunner().invoke(main, ["student", str(level2), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "level2" / "level2.ipynb").is_file()
    assert "placeholder" in result.output
    nb = nbformat.read(str(tmp_path / "level2" / "level2.ipynb"), as_version=4)
    assert student.PLACEHOLDER_PIP_SOURCE in "\n".join(c.source for c in nb.cells)


def test_cli_student_refuses_to_overwrite_the_exercise(level2):
    result = CliRunner().invoke(main, ["student", str(level2), "--out", str(level2.parent)])
    assert result.exit_code == 2 and "overwrite" in result.output


def test_pip_source_must_be_one_plain_token(level2, tmp_path):
    result = CliRunner().invoke(main, ["student", str(level2), "--out", str(tmp_path), "--pip-source", 'x" && rm -rf ~ "'])
    assert result.exit_code == 2 and "--pip-source" in result.output


def test_toml_writer_round_trips_every_exercise():
    for exercise_id in EXERCISES:  # grader.staff.conventions.spec_round_trips; `grade validate` checks it too
        assert conventions.spec_round_trips(load(ROOT / "exercises" / exercise_id)) == [], exercise_id


def test_the_bundle_says_what_it_grades_out_of_beside_the_courses_maximum(level2, tmp_path):
    """The hidden tests' points stay behind: the README and the grading cell say so with both numbers,
    and the number they give is the maximum the student's own grading reports."""
    bundle = student.build_bundle(level2, tmp_path)
    course, local = load(level2).spec.max_score, load(bundle.folder).spec.max_score
    assert local < course  # level2 has hidden tests with points
    readme = (bundle.folder / "README.md").read_text()
    assert f"Here you grade out of the {local:g} points" in readme and f"the course grades out of {course:g}" in readme
    assert f"Hidden tests ({course - local:g} points)" in readme
    cells = bundled_texts(bundle)["notebook cells"]
    assert f"# Out of {local:g} here: the final grading adds hidden tests worth {course - local:g} points" in cells


def test_a_bundle_with_nothing_left_out_names_no_second_maximum():
    points = student.LocalPoints(course=100.0, local=100.0)
    assert points.hidden == 0 and points.notebook_line() == ""
    assert "out of" not in points.readme_line()
