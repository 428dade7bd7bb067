"""The Triton kind's student bundle: public files and a Colab notebook, nothing hidden; the notebook,
its skeleton cell filled with the reference, grades full marks (graded as the Python kind's are)."""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from grader import api
from grader import exercise as exercise_module
from grader.kinds.registry import kind_of
from grader.triton import student_bundle

ROOT = Path(__file__).resolve().parent.parent
EXERCISES = ("triton_vector_add", "triton_softmax", "triton_rmsnorm", "triton_matmul")


@pytest.mark.parametrize("name", EXERCISES)
def test_the_bundle_holds_the_public_files_and_nothing_hidden(tmp_path, name):
    ex = exercise_module.load(ROOT / "exercises" / name)
    bundle = kind_of(ex).student_bundle(ex, tmp_path, "unused")
    assert sorted(p.name for p in bundle.files) == sorted(["README.md", "spec.toml", "skeleton.py", "harness.py", "checks.py",
                                                           f"{name}.ipynb"])
    assert "hidden_cases" not in (bundle.folder / "spec.toml").read_text()
    assert kind_of(ex).hidden_in_bundle(ex) == []


def test_the_leak_check_finds_a_hidden_size_and_a_solution_line():
    ex = exercise_module.load(ROOT / "exercises" / "triton_vector_add")
    hidden = next(c for c in ex.spec.hidden_cases if c not in ex.spec.public_cases and c != ex.spec.traffic_size)
    (name, value), = hidden.items()
    found = student_bundle.leaks(ex, f"try {name} = {value}\n    grid = (triton.cdiv(n, BLOCK),)\n")
    assert any("hidden size" in p for p in found) and any("solution.py" in p for p in found)
    assert student_bundle.leaks(ex, "import torch\n") == []


@pytest.mark.slow
def test_the_notebook_filled_with_the_reference_grades_full_marks(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    ex = exercise_module.load(ROOT / "exercises" / "triton_vector_add")
    bundle = kind_of(ex).student_bundle(ex, tmp_path / "out", "unused")
    notebook = nbformat.read(str(bundle.notebook), as_version=4)
    cells = [c for c in notebook.cells if c.cell_type == "code" and "def add(" in c.source]
    assert len(cells) == 1
    cells[0].source = ex.solution_path.read_text()
    filled = tmp_path / "filled.ipynb"
    nbformat.write(notebook, str(filled))
    report = api.grade(ex.root, filled, seed=1)
    assert report.score == report.max_score
    as_given = api.grade(ex.root, bundle.notebook, seed=1)
    assert not any(t.passed for t in as_given.tests if t.category == "correctness")
