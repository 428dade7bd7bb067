"""`grade student` for a Python exercise: public files only, and a notebook that round-trips to full marks."""
from __future__ import annotations

import json
from pathlib import Path

import nbformat
from click.testing import CliRunner

from grader import api
from grader.pyexercise import student_bundle as pystudent
from grader.kinds.registry import kind_of
from grader.staff import student_bundle as student
from grader.cli import main
from grader.exercise import load

ROOT = Path(__file__).resolve().parent.parent
LESSON = ROOT / "exercises" / "lesson_numpy"
SOLUTION = ROOT / "reference" / "lesson_numpy" / "solution.py"


def _bundle(out: Path) -> student.StudentBundle:
    """The lesson's student bundle, as `grade student` writes it (its kind's)."""
    lesson = load(LESSON)
    return kind_of(lesson).student_bundle(lesson, out, student.PLACEHOLDER_PIP_SOURCE)


def test_bundle_holds_public_files_and_a_cell_per_function(tmp_path):
    bundle = _bundle(tmp_path)
    names = sorted(p.name for p in bundle.folder.iterdir())
    assert names == sorted(["README.md", "spec.toml", "skeleton.py", "checks.py", "lesson.py", "lesson_numpy.ipynb"])
    nb = nbformat.read(str(bundle.notebook), as_version=4)
    nbformat.validate(nb)
    sources = [c.source for c in nb.cells]
    spec = load(LESSON).spec
    for fn in spec.names:
        todo = next(i for i, s in enumerate(sources) if s.startswith(f"def {fn}("))
        assert "TODO" in sources[todo] and sources[todo + 1] == f"run_checks({fn!r}, {fn})"
        assert nb.cells[todo - 1].cell_type == "markdown"
    assert any(s.startswith("%%writefile lesson.py") for s in sources)
    assert "[hidden_tests]" not in (bundle.folder / "spec.toml").read_text()
    everything = "\n".join(p.read_text() for p in bundle.folder.iterdir())
    assert pystudent.hidden_material_in(everything, load(LESSON)) == []


def test_a_leak_would_be_found(tmp_path):
    hidden_line = next(line.strip() for line in (LESSON / "tests" / "test_matmul_tiled.py").read_text().splitlines()
                       if "want = k * (m * ceil_div" in line)
    assert pystudent.hidden_material_in("some text\n" + hidden_line, load(LESSON))
    solution_line = "wanted = {int(a) + b for a in addresses for b in range(4)}"
    assert pystudent.hidden_material_in(solution_line, load(LESSON))


def test_notebook_round_trip_as_colab_saves_it(tmp_path):
    bundle = _bundle(tmp_path)
    nb = nbformat.read(str(bundle.notebook), as_version=4)
    filled = pystudent.filled_in(nb, (LESSON / "skeleton.py").read_text(), SOLUTION.read_text(), load(LESSON).spec.names)
    doc = json.loads(nbformat.writes(filled))
    doc["nbformat_minor"] = 0
    for cell in doc["cells"]:  # Colab keeps ids in metadata, and outputs
        cell["metadata"]["id"] = cell.pop("id")
        if cell["cell_type"] == "code":
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["ok\n" * 1000]}]
    path = tmp_path / "Copy of lesson_numpy.ipynb"
    path.write_text(json.dumps(doc))
    report = api.grade(LESSON, path, seed=1)
    assert report.score == report.max_score == 100, [t.output for t in report.tests if not t.passed]
    assert any("%%writefile" in n for n in report.notes)  # the public-file cells were left out, and said so


def test_cli_lists_and_bundles_a_python_exercise(tmp_path):
    listed = CliRunner().invoke(main, ["list", str(ROOT / "exercises")])
    assert listed.exit_code == 0 and "Python functions: sectors_touched 15" in listed.output
    made = CliRunner().invoke(main, ["student", str(LESSON), "--out", str(tmp_path)])
    assert made.exit_code == 0 and "placeholder" not in made.output
