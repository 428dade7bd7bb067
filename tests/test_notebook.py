"""grader.notebook: the kernel of a Colab notebook submission, found without running anything."""
from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest

from grader import api
from grader.staff import batch, gradescope
from grader.staff.batch import intake, record
from grader import notebook as nb
from grader import profile as profile_module
from grader import submission as submission_module
from grader.results import to_json, validate
from grader.spec import Limits

ROOT = Path(__file__).resolve().parent.parent
LEVEL2 = ROOT / "exercises" / "level2"
SOLUTION = (ROOT / "reference" / "level2" / "solution.cu").read_text()
SECRET_OUTPUT = "OUTPUT-THAT-MUST-NEVER-BE-ECHOED"


def cell(source: str, kind: str = "code", outputs: list | None = None, cell_id: str = "abc") -> dict:
    """A cell as Colab saves it: source as a list of lines, the id under metadata.id, outputs kept."""
    lines = source.splitlines(keepends=True)
    out = {"cell_type": kind, "source": lines, "metadata": {"id": cell_id}}
    if kind == "code":
        out.update(execution_count=None, outputs=outputs or [])
    return out


def colab(*cells: dict) -> bytes:
    """An nbformat 4.0 document as Colab downloads it."""
    return json.dumps({"nbformat": 4, "nbformat_minor": 0, "metadata": {"colab": {"provenance": []},
                       "kernelspec": {"name": "python3", "display_name": "Python 3"}}, "cells": list(cells)}).encode()


def stream(text: str) -> dict:
    return {"output_type": "stream", "name": "stdout", "text": [text]}


def write(tmp_path: Path, data: bytes, name: str = "hw.ipynb") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


# --------------------------------------------------------------------------------------------- finding the kernel

def test_writefile_cell_is_the_kernel_and_lines_map_to_the_cell(tmp_path):
    data = colab(cell("# Task\n", "markdown"), cell("!pip install x\n", outputs=[stream(SECRET_OUTPUT * 1000)]),
                 cell("%%writefile submission.cu\nline two\nline three"), cell("!grade level2 submission.cu"))
    sub, verdict, where = nb.read_checked(write(tmp_path, data), Limits())
    assert verdict.ok and sub.source == "line two\nline three\n"  # the cell's body only, not the magic
    found, problem = nb.extract(data, "hw.ipynb")
    assert problem == "" and found.source == "line two\nline three\n" and found.kind == "writefile"
    assert [(c.cell, c.line) for c in found.cells] == [(3, 2), (3, 3)]
    where = nb.SourceMap("hw.ipynb", found.cells, "%%writefile submission.cu")
    assert where.describe(2) == "notebook cell 3, line 3"
    assert where.describe(99) == "hw.ipynb:99"  # a line past the kernel (never expected) stays readable
    assert "cell 3" in where.note()


def test_notebook_and_the_same_kernel_as_a_cu_have_the_same_source_and_hash(tmp_path):
    data = colab(cell("x = 1\n"), cell("%%writefile submission.cu\n" + SOLUTION.rstrip("\n")))
    from_nb, v1, where = nb.read_checked(write(tmp_path, data), Limits())
    as_cu = write(tmp_path, SOLUTION.encode(), "submission.cu")
    from_cu, v2, plain = nb.read_checked(as_cu, Limits())
    assert v1.ok and v2.ok and where.is_notebook and not plain.is_notebook
    assert from_nb.source == from_cu.source
    assert from_nb.sha256 == from_cu.sha256 == hashlib.sha256(SOLUTION.encode()).hexdigest()
    assert from_nb.name == "hw.ipynb"


@pytest.mark.parametrize("magic", ["%%writefile /content/submission.cu", "%%writefile 'level2/submission.cu'",
                                   "%%writefile -a submission.cu", "\n\n%%writefile submission.cu"])
def test_writefile_with_a_path_quotes_or_blank_lines_first(magic):
    data = colab(cell(magic + "\nkernel();"))
    found, problem = nb.extract(data, "hw.ipynb")
    if "-a" in magic:  # only appends: no cell starts the file
        assert found is None and "%%writefile submission.cu" in problem
        return
    assert found.source == "kernel();\n"
    assert found.cells[0].line == magic.count("\n") + 2


def test_append_cells_after_the_writefile_cell_are_joined():
    data = colab(cell("%%writefile submission.cu\na\nb"), cell("print(1)"), cell("%%writefile -a submission.cu\nc"))
    found, _ = nb.extract(data, "hw.ipynb")
    assert found.source == "a\nb\nc\n"
    assert [(c.cell, c.line) for c in found.cells] == [(1, 2), (1, 3), (3, 2)]


def test_cuda_magic_is_the_fallback():
    data = colab(cell("!nvcc --version"), cell("%%cuda\n__global__ void k() {}"))
    found, _ = nb.extract(data, "hw.ipynb")
    assert found.kind == "cuda" and found.source == "__global__ void k() {}\n" and found.cells[0].cell == 2


@pytest.mark.parametrize("cells, words", [
    ((cell("%%writefile submission.cu\na"), cell("%%writefile submission.cu\nb")), ["cells 1 and 2", "Keep exactly one"]),
    ((cell("%%cuda\na"), cell("%%cuda\nb")), ["cells 1, 2", "%%writefile submission.cu"]),
    ((cell("%%writefile -a submission.cu\na"), cell("%%writefile submission.cu\nb")), ["cell 1 appends", "before cell 2"]),
    ((cell("print('hi')"), cell("no kernel here", "markdown")), ["no cell writes submission.cu", "first line"]),
    ((cell("%%writefile kernel.cu\na"),), ["%%writefile kernel.cu` in cell 1", "looks for submission.cu"]),
    ((cell("# %%writefile submission.cu\na"),), ["no cell writes submission.cu"]),  # a comment is no magic
])
def test_no_or_several_kernel_cells_say_what_to_do(cells, words):
    found, problem = nb.extract(colab(*cells), "hw.ipynb")
    assert found is None
    for word in words:
        assert word in problem, (word, problem)


# --------------------------------------------------------------------------------------------- files that are not usable notebooks

@pytest.mark.parametrize("data, words", [
    (b'{"cells": [', ["not valid JSON", "Download it again"]),
    (b"[1, 2, 3]", ["no list of cells"]),
    (b'{"nbformat": 4}', ["no list of cells"]),
    (json.dumps({"nbformat": 5, "cells": []}).encode(), ["nbformat 5"]),
    (b'{"cells": "' + "\xff".encode("latin-1") + b'"}', ["not UTF-8"]),
    (b'{"cells": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}", ["nested too deeply"]),
    (json.dumps({"nbformat": 4, "nbformat_minor": 0, "cells": [{"cell_type": "code", "source": 7}]}).encode(), ["no cell writes"]),
])
def test_unreadable_notebooks_get_a_refusal_not_an_exception(tmp_path, data, words):
    sub, verdict, _ = nb.read_checked(write(tmp_path, data), Limits())
    assert sub is None and not verdict.ok
    for word in words:
        assert word in verdict.message, (word, verdict.message)


def test_oversized_notebook_is_refused_with_how_to_clear_outputs(tmp_path):
    data = colab(cell("%%writefile submission.cu\n" + SOLUTION, outputs=[stream(SECRET_OUTPUT * 4000)]))
    limits = dataclasses.replace(Limits(), max_notebook_bytes=64 * 1024)
    sub, verdict, _ = nb.read_checked(write(tmp_path, data), limits)
    assert sub is None and "Clear all outputs" in verdict.message and SECRET_OUTPUT not in verdict.message


def test_megabytes_of_output_are_never_echoed(tmp_path):
    big = [stream(SECRET_OUTPUT * 100_000)]  # about 3 MB, under the default limit
    data = colab(cell("print(1)", outputs=big), cell("%%writefile kernel.cu\n" + SECRET_OUTPUT))
    sub, verdict, _ = nb.read_checked(write(tmp_path, data), Limits())
    assert not verdict.ok and SECRET_OUTPUT not in verdict.message and len(verdict.message) < 600


def test_a_notebook_of_700_000_empty_objects_costs_little(tmp_path):
    # Outputs and metadata are never turned into objects of their own: a 16 MiB notebook of empty
    # objects once took 43 s and 2.8 GB of the grader's process. Measured as memory, which does not
    # depend on how busy the machine is.
    import tracemalloc

    objects = b",".join([b"{}"] * 700_000)
    data = colab(cell("%%writefile submission.cu\n" + SOLUTION)).replace(b'"provenance": []', b'"provenance": [' + objects + b"]")
    tracemalloc.start()
    try:
        sub, verdict, _ = nb.read_checked(write(tmp_path, data), Limits())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert verdict.ok and sub.source.startswith(SOLUTION[:40])
    assert peak < 150 * 1024**2, f"{peak / 1024**2:.0f} MiB"


def test_a_version_3_notebook_is_read_from_its_worksheets():
    data = json.dumps({"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [
        {"cells": [{"cell_type": "heading", "level": 1, "source": "level2"}]},
        {"cells": [{"cell_type": "code", "input": "%%writefile submission.cu\n__global__ void k() {}\n", "outputs": []}]}]}).encode()
    found, problem = nb.extract(data, "old.ipynb")
    assert found is not None and found.source == "__global__ void k() {}\n" and found.cell_numbers == (2,), problem
    broken = json.dumps({"nbformat": 3, "worksheets": [{"cells": 7}]}).encode()
    assert nb.extract(broken, "old.ipynb")[1].startswith("old.ipynb is not a Jupyter notebook that can be read")


def test_thousands_of_kernel_cells_give_a_short_message():
    many = colab(*[cell(f"%%writefile submission.cu\n// {i}\n") for i in range(5000)])
    found, problem = nb.extract(many, "hw.ipynb")
    assert found is None and "(5000 cells)" in problem and len(problem) < 600


def test_the_source_shown_on_a_page_is_bounded_too(tmp_path):
    path = tmp_path / "huge.cu"
    with open(path, "wb") as f:
        f.truncate(64 * 1024 * 1024)  # sparse: no disk used
    source, problem = nb.graded_source(path, limit=1024 * 1024)
    assert source is None and "67,108,864 bytes" in problem


def test_a_renamed_notebook_is_still_read_as_one(tmp_path):
    data = colab(cell("%%writefile submission.cu\n" + SOLUTION))
    sub, verdict, where = nb.read_checked(write(tmp_path, data, "Copy of level2 (1).json"), Limits())
    assert verdict.ok and where.is_notebook and sub.name == "Copy of level2 (1).json"


def test_a_plain_cu_starting_with_a_brace_is_not_a_notebook(tmp_path):
    sub, verdict, where = nb.read_checked(write(tmp_path, b"{ int x; }\n", "k.cu"), Limits())
    assert not where.is_notebook and sub.source == "{ int x; }\n"


def test_policy_refusal_names_the_notebook_cell(tmp_path):
    data = colab(cell("intro", "markdown"), cell("%%writefile submission.cu\n// my kernel\n#include \"/etc/passwd\"\n"))
    sub, verdict, _ = nb.read_checked(write(tmp_path, data), Limits())
    assert not verdict.ok and verdict.message.startswith("notebook cell 2, line 3: ")


def test_log_and_prose_rewriting():
    where = nb.SourceMap("hw.ipynb", tuple(nb.CellLine(9, k + 2) for k in range(40)), "%%writefile submission.cu")
    log = "hw.ipynb(12): error: expected a \";\"\n   x = 1\n   ^\nother.cu(3): error: elsewhere"
    assert where.rewrite_log(log).splitlines()[0] == "notebook cell 9, line 13: error: expected a \";\""
    assert where.rewrite_log(log).splitlines()[-1] == "other.cu(3): error: elsewhere"
    text = "wrote it at line 4; deadlock at the barrier on line 5; hazard between lines 6 and 7; 12 lines"
    assert where.rewrite_text(text) == ("wrote it at notebook cell 9, line 5; deadlock at the barrier on notebook cell 9, "
                                        "line 6; hazard between notebook cell 9, line 7 and notebook cell 9, line 8; 12 lines")
    plain = nb.SourceMap("k.cu")
    assert plain.rewrite_log(log) == log and plain.rewrite_text(text) == text and plain.describe(3) == "k.cu:3"


# --------------------------------------------------------------------------------------------- through the grader

def test_refused_notebook_gives_a_schema_valid_result(tmp_path):
    report = api.grade(LEVEL2, write(tmp_path, b"not json at all {"), backend="emu", seed=1)
    document = to_json(report)
    validate(document)
    assert report.score == 0 and "Refused before compiling" in report.tests[0].output
    assert report.tests[0].category == "compile" and len(report.tests) > 1


def test_compile_error_names_the_notebook_cell_and_line(tmp_path):
    import re

    broken = SOLUTION.replace("__syncthreads();", "__syncthreads()", 1)
    data = colab(cell("md", "markdown"), cell("%%writefile submission.cu\n" + broken))
    report = api.grade(LEVEL2, write(tmp_path, data), backend="emu", seed=1)
    plain = api.grade(LEVEL2, write(tmp_path, broken.encode(), "k.cu"), backend="emu", seed=1)
    text = report.tests[0].output
    assert not report.tests[0].passed and "hw.ipynb does not compile" in text
    in_cell = re.search(r"^notebook cell 2, line (\d+): error", text, re.MULTILINE)
    in_file = re.search(r"^k\.cu\((\d+)\): error", plain.tests[0].output, re.MULTILINE)
    assert in_cell and in_file and int(in_cell.group(1)) == int(in_file.group(1)) + 1  # the cell's line 1 is the magic
    assert any("notebook cell 2" in n for n in report.notes)


def test_notebook_grades_exactly_like_the_same_kernel_as_a_cu(tmp_path):
    data = colab(cell("# level2", "markdown"), cell("%%writefile submission.cu\n" + SOLUTION.rstrip("\n"),
                                                    outputs=[stream("Writing submission.cu\n")]))
    as_nb = api.grade(LEVEL2, write(tmp_path, data), backend="emu", seed=7)
    as_cu = api.grade(LEVEL2, write(tmp_path, SOLUTION.rstrip("\n").encode() + b"\n", "submission.cu"), backend="emu", seed=7)
    assert as_nb.sha256 == as_cu.sha256
    assert [(t.name, t.score, t.passed) for t in as_nb.tests] == [(t.name, t.score, t.passed) for t in as_cu.tests]
    assert as_nb.score == as_cu.score and all(t.passed for t in as_nb.tests)


def test_profile_table_names_cell_lines(tmp_path):
    data = colab(cell("md", "markdown"), cell("%%writefile submission.cu\n" + SOLUTION))
    result = profile_module.profile(LEVEL2, write(tmp_path, data), {"N": 33}, backend="emu")
    assert not result.error and result.per_line
    assert all(v.startswith("notebook cell 2, line ") for v in result.place.values())
    first = min(result.per_line)
    table = "\n".join(profile_module.table(result))
    assert "notebook cell 2" in table and f"  {first + 1:>4} " in table


# --------------------------------------------------------------------------------------------- batch and Gradescope inputs

def test_batch_collects_notebooks_beside_cu_files(tmp_path):
    subs = tmp_path / "subs"
    (subs / "carol").mkdir(parents=True)
    (subs / "alice.ipynb").write_bytes(colab(cell("%%writefile submission.cu\nx")))
    (subs / "bob.cu").write_text("// b\n")
    (subs / "carol" / "Copy of level2.ipynb").write_bytes(b"{}")
    (subs / "carol" / ".ipynb_checkpoints").mkdir()
    (subs / "carol" / ".ipynb_checkpoints" / "old.ipynb").write_bytes(b"{}")
    (subs / "dan").mkdir()
    (subs / "dan" / "a.ipynb").write_bytes(b"{}")
    (subs / "dan" / "b.ipynb").write_bytes(b"{}")
    (subs / "erin").mkdir()
    (subs / "erin" / "k.cu").write_text("// k\n")
    (subs / "erin" / "k.ipynb").write_bytes(b"{}")
    entries = {e.student: e for e in intake.collect(subs, tmp_path / "scratch")}
    assert entries["alice"].source == subs / "alice.ipynb"
    assert entries["carol"].source == subs / "carol" / "Copy of level2.ipynb"
    assert entries["dan"].source is None and "2 notebooks" in entries["dan"].problem
    assert entries["erin"].source == subs / "erin" / "k.cu"


def test_gradescope_chooses_a_notebook_when_no_cu_was_submitted(tmp_path):
    (tmp_path / "Copy of level2.ipynb").write_bytes(b"{}")
    assert gradescope.choose_submission(tmp_path, "submission.cu").source == tmp_path / "Copy of level2.ipynb"
    (tmp_path / "other.ipynb").write_bytes(b"{}")
    choice = gradescope.choose_submission(tmp_path, "submission.cu")
    assert choice.source is None and "2 notebooks" in choice.problem
    (tmp_path / "submission.cu").write_text("// k\n")
    assert gradescope.choose_submission(tmp_path, "submission.cu").source == tmp_path / "submission.cu"


@pytest.mark.slow
def test_batch_grades_a_zip_of_notebooks(tmp_path):
    import zipfile

    archive = tmp_path / "subs.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("export/alice.ipynb", colab(cell("%%writefile submission.cu\n" + SOLUTION)))
        zf.writestr("export/bob.ipynb", colab(cell("%%writefile submission.cu\na"), cell("%%writefile submission.cu\nb")))
        zf.writestr("export/carol.ipynb", b'{"cells": [')
    out = tmp_path / "out"
    result = batch.run_batch(LEVEL2, archive, out, batch.Options(backend="emu", workers=2))
    docs = {p.stem: json.loads(p.read_text()) for p in (out / batch.RESULTS).glob("*.json")}
    for doc in docs.values():
        validate(doc)
    alice = docs["alice"]
    assert all(t["status"] == "passed" for t in alice["tests"]) and alice["score"] == alice["extra_data"]["max_score"]
    assert docs["alice"]["extra_data"]["batch"]["status"] == "graded"
    assert "cells 1 and 2" in docs["bob"]["tests"][0]["output"] and docs["bob"]["score"] == 0
    assert "not valid JSON" in docs["carol"]["tests"][0]["output"]
    assert result.csv_path.is_file()


@pytest.mark.slow
def test_gradescope_grades_a_downloaded_notebook(tmp_path):
    import os
    import shutil
    import subprocess
    import sys
    import zipfile

    bundle = gradescope.build_bundle(LEVEL2, tmp_path / "autograder.zip").path
    ag = tmp_path / "autograder"
    with zipfile.ZipFile(bundle) as zf:
        zf.extractall(ag / "source")
    shutil.copy(ag / "source" / "run_autograder", ag / "run_autograder")
    (ag / "submission").mkdir()
    (ag / "submission" / "Copy of level2 (2).ipynb").write_bytes(
        colab(cell("!pip install x", outputs=[stream(SECRET_OUTPUT)]), cell("%%writefile submission.cu\n" + SOLUTION)))
    env = {**os.environ, gradescope.ROOT_VARIABLE: str(ag), gradescope.PYTHON_VARIABLE: sys.executable}
    proc = subprocess.run(["bash", str(ag / "run_autograder")], env=env, capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((ag / "results" / "results.json").read_text())
    validate(doc)
    assert all(t["status"] == "passed" for t in doc["tests"]) and doc["score"] > 0
    assert doc["extra_data"]["gradescope"]["graded_file"] == "Copy of level2 (2).ipynb"
    assert SECRET_OUTPUT not in json.dumps(doc)


def test_graded_source_is_what_was_graded_never_the_json(tmp_path):
    data = colab(cell("md", "markdown"), cell("%%writefile submission.cu\nkernel body", outputs=[stream(SECRET_OUTPUT)]),
                 cell("def f():\n    return 1"))
    path = write(tmp_path, data)
    assert nb.graded_source(path) == ("kernel body\n", "")
    text, _ = nb.graded_source(path, python=True)
    assert text == "def f():\n    return 1\n" and SECRET_OUTPUT not in text
    assert nb.graded_source(write(tmp_path, b"[]", "x.ipynb"))[0] is None
    assert nb.graded_source(write(tmp_path, b"int k;\n", "k.cu")) == ("int k;\n", "")


def test_a_stopped_grading_reports_the_same_hash_as_a_finished_one(tmp_path):
    from grader.run.parent.isolated import _sha256

    path = write(tmp_path, colab(cell("%%writefile submission.cu\n" + SOLUTION)))
    sub, _, _ = nb.read_checked(path, Limits())
    assert _sha256(path) == sub.sha256


def test_the_batch_summary_groups_notebooks_by_their_kernel_not_their_json(tmp_path):
    from grader.exercise import load

    kernel = (ROOT / "reference" / "level2" / "solution.cu").read_text()
    one = write(tmp_path, colab(cell("%%writefile submission.cu\n" + kernel, cell_id="a1"),
                                cell("!grade level2 submission.cu", outputs=[stream("score: 1\n")])), "ann.ipynb")
    two = write(tmp_path, colab(cell("# my notes", kind="markdown", cell_id="zz"), cell("%%writefile submission.cu\n" + kernel,
                                cell_id="b2")), "bob.ipynb")
    entries = [intake.Entry("ann", "ann.ipynb", one), intake.Entry("bob", "bob.ipynb", two)]
    summary = record.summarize([], entries, load(ROOT / "exercises" / "level2"))
    assert ("identical to the reference solution", ("ann", "bob")) in summary.identical
