"""grader.kinds: one pipeline per exercise kind behind one interface, a submission read once."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from grader import api, exercise as exercise_module, submission
from grader.errors import SpecError
from grader.kinds import cuda
from grader.kinds.cuda import CudaKind
from grader.kinds.python import PythonKind
from grader.kinds.triton import TritonKind
from grader.kinds.registry import KINDS, kind_of


def test_each_kind_of_the_shipped_exercises_has_its_pipeline(root):
    assert isinstance(kind_of(exercise_module.load(root / "exercises" / "level2")), CudaKind)
    assert isinstance(kind_of(exercise_module.load(root / "exercises" / "lesson_numpy")), PythonKind)
    assert isinstance(kind_of(exercise_module.load(root / "exercises" / "triton_vector_add")), TritonKind)
    assert sorted(KINDS) == ["cuda", "python", "triton"]


def test_a_kind_without_a_pipeline_is_a_spec_error_that_names_the_known_ones():
    with pytest.raises(SpecError, match=r"'pallas'.*known: cuda, python, triton"):
        kind_of(SimpleNamespace(kind="pallas", root=Path("exercises/x")))


def test_the_emulator_checks_are_available_to_the_cuda_kind():
    # Without it the race and memory-safety checks plan nothing on the emulator and pass everything.
    assert cuda._emu_importable()


def _counting(monkeypatch, module, name, calls):
    real = getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(name)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)


@pytest.mark.parametrize("exercise,text,refused", [
    ("level2", '#include "/etc/passwd"\n__global__ void k() {}\n', "is not allowed"),
    ("lesson_numpy", "", "is empty"),
])
def test_a_submission_is_read_once_and_its_name_found_once(root, tmp_path, monkeypatch, exercise, text, refused):
    path = tmp_path / ("weird\x1bname" + (".py" if exercise == "lesson_numpy" else ".cu"))
    path.write_text(text)
    calls: list[str] = []
    for name in ("read", "display_name"):
        _counting(monkeypatch, submission, name, calls)
    report = api.grade(root / "exercises" / exercise, path, backend="emu", seed=3)
    assert sorted(calls) == ["display_name", "read"]
    assert report.submission == "weird?name" + path.suffix  # the one name, printable, on every line of the report
    assert refused in report.tests[0].output and report.seeds == {"base": 3}


def test_the_cuda_kind_reads_a_refused_file_keeping_its_hash_and_an_unreadable_one_without(root, tmp_path):
    exercise = exercise_module.load(root / "exercises" / "level2")
    refused = tmp_path / "inc.cu"
    refused.write_text('#include "/etc/passwd"\n')
    got = CudaKind().read(exercise, refused)
    assert not got.ok and got.sha256 and got.source is not None and got.verdict.line == 1
    missing = CudaKind().read(exercise, tmp_path / "nothing.cu")
    assert not missing.ok and missing.sha256 is None and missing.source is None and "cannot read" in missing.verdict.message


def test_not_graded_takes_each_kinds_shape(root):
    cuda_ex = exercise_module.load(root / "exercises" / "level2")
    tests, not_run = kind_of(cuda_ex).not_graded(cuda_ex, "emu", "no file")
    assert tests[0].name == "Compiles" and tests[0].output == "no file" and [n.category for n in not_run] == ["performance"]
    py_ex = exercise_module.load(root / "exercises" / "lesson_numpy")
    tests, not_run = kind_of(py_ex).not_graded(py_ex, "none", "no file")
    assert tests[0].name == "Loads" and tests[0].output == "no file" and not_run == []
