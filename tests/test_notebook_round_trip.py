"""Round trip: `grade student` writes the level2 notebook, a student fills in the kernel cell (the
reference, pasted), Colab saves it (nbformat 4.0, ids under metadata.id, outputs kept), and the
grader gives it full marks through `grade`, `grade batch` and the Gradescope bundle; a notebook
with a cell deleted or renamed still does; one with two %%writefile cells gets a clear verdict."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from grader import api
from grader.staff import batch, gradescope, student_bundle as student
from grader.results import validate

ROOT = Path(__file__).resolve().parent.parent
LEVEL2 = ROOT / "exercises" / "level2"
SOLUTION = (ROOT / "reference" / "level2" / "solution.cu").read_text()
KERNEL_MAGIC = "%%writefile submission.cu"


def colab_save(notebook: nbformat.NotebookNode, path: Path) -> Path:
    """Write the notebook the way Colab downloads it: nbformat 4.0, ids in metadata, outputs kept."""
    doc = json.loads(nbformat.writes(notebook))
    doc["nbformat_minor"] = 0
    for i, cell in enumerate(doc["cells"]):
        cell["metadata"] = {"id": cell.pop("id", f"c{i}"), **cell.get("metadata", {})}
        if cell["cell_type"] == "code":
            cell["execution_count"] = i
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": [f"output of cell {i}\n" * 200]}]
    doc["metadata"]["colab"] = {"provenance": [], "gpuType": "T4"}
    path.write_text(json.dumps(doc, indent=1))
    return path


@pytest.fixture(scope="module")
def handed_out(tmp_path_factory) -> nbformat.NotebookNode:
    out = tmp_path_factory.mktemp("handout")
    bundle = student.build_bundle(LEVEL2, out, pip_source="https://course.example.edu/kg.whl")
    return nbformat.read(str(bundle.notebook), as_version=4)


def filled(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """What the student edits: the kernel cell (the TODO cell), and nothing else."""
    done = nbformat.reads(nbformat.writes(notebook), as_version=4)
    kernel = [c for c in done.cells if c.cell_type == "code" and c.source.startswith(KERNEL_MAGIC)]
    assert len(kernel) == 1 and "TODO" in kernel[0].source
    kernel[0].source = KERNEL_MAGIC + "\n" + SOLUTION.rstrip("\n")
    return done


def test_round_trip_scores_full_marks(handed_out, tmp_path):
    path = colab_save(filled(handed_out), tmp_path / "level2.ipynb")
    report = api.grade(LEVEL2, path, backend="emu", seed=1)
    assert all(t.passed for t in report.tests) and report.score == report.max_score, [t.output for t in report.tests]
    # The seeds and hash are those of the kernel as `%%writefile` would have written it.
    assert report.sha256 == hashlib.sha256((SOLUTION.rstrip("\n") + "\n").encode()).hexdigest()


def test_two_writefile_cells_get_a_clear_verdict(handed_out, tmp_path):
    notebook = filled(handed_out)
    notebook.cells.append(nbformat.v4.new_code_cell(KERNEL_MAGIC + "\n// an old attempt"))
    report = api.grade(LEVEL2, colab_save(notebook, tmp_path / "level2.ipynb"), backend="emu", seed=1)
    assert report.score == 0 and "each start with `%%writefile submission.cu`" in report.tests[0].output


@pytest.mark.slow
def test_round_trip_through_cli_batch_and_gradescope_with_a_cell_deleted_and_renamed(handed_out, tmp_path):
    good = filled(handed_out)
    deleted = filled(handed_out)
    del deleted.cells[[c.source.startswith("!mkdir") for c in deleted.cells].index(True)]
    two = filled(handed_out)
    two.cells.insert(3, nbformat.v4.new_code_cell(KERNEL_MAGIC + "\n// first try"))
    subs = tmp_path / "subs"
    subs.mkdir()
    colab_save(good, subs / "alice.ipynb")
    colab_save(deleted, subs / "bob.ipynb")
    (subs / "carol").mkdir()
    colab_save(good, subs / "carol" / "Copy of level2 (3).ipynb")  # renamed, in a student folder
    colab_save(two, subs / "dan.ipynb")

    cli = subprocess.run([sys.executable, "-m", "grader", "exercises/level2", str(subs / "alice.ipynb"), "--backend", "emu",
                          "--json", str(tmp_path / "alice.json")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert cli.returncode == 0, cli.stderr
    doc = json.loads((tmp_path / "alice.json").read_text())
    validate(doc)
    assert doc["score"] == doc["extra_data"]["max_score"]

    out = tmp_path / "out"
    batch.run_batch(LEVEL2, subs, out, batch.Options(backend="emu", workers=2))
    docs = {p.stem: json.loads(p.read_text()) for p in (out / batch.RESULTS).glob("*.json")}
    for who in ("alice", "bob", "carol"):
        validate(docs[who])
        assert docs[who]["score"] == docs[who]["extra_data"]["max_score"], (who, docs[who]["output"])
    assert docs["dan"]["score"] == 0 and "Keep exactly one" in docs["dan"]["tests"][0]["output"]

    bundle = gradescope.build_bundle(LEVEL2, tmp_path / "autograder.zip").path
    ag = tmp_path / "ag"
    with zipfile.ZipFile(bundle) as zf:
        zf.extractall(ag / "source")
    shutil.copy(ag / "source" / "run_autograder", ag / "run_autograder")
    (ag / "submission").mkdir()
    colab_save(deleted, ag / "submission" / "level2 (1).ipynb")
    env = {**os.environ, gradescope.ROOT_VARIABLE: str(ag), gradescope.PYTHON_VARIABLE: sys.executable}
    proc = subprocess.run(["bash", str(ag / "run_autograder")], env=env, capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((ag / "results" / "results.json").read_text())
    validate(doc)
    assert doc["score"] == doc["extra_data"]["max_score"] and "output of cell" not in json.dumps(doc)
