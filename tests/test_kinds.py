"""grader.kinds: one pipeline per exercise kind behind one interface, a submission read once."""
from __future__ import annotations

import ast
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from grader import api, exercise as exercise_module, submission
from grader.errors import SpecError
from grader.grading.validation import Validation
from grader.kinds import cuda
from grader.kinds.base import KindTraits
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


# ---------------------------------------------------------------------------------------------
# A new kind is one module in grader/kinds/ and one registry line: nothing outside the kinds names one.

KIND_NAMES = frozenset(KINDS)


def _compared_with_a_kind_name(tree: ast.AST) -> list[int]:
    """Lines where a kind's name is compared with anything (`x.kind == "python"`, `kind in ("cuda", ...)`)."""
    def names(node: ast.expr) -> set[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return {node.value}
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
        return set()

    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Compare)
            and any(names(side) & KIND_NAMES for side in (node.left, *node.comparators))]


def test_the_scan_finds_a_branch_on_a_kind_name():
    assert _compared_with_a_kind_name(ast.parse('if ex.kind == "python":\n    pass\n')) == [1]
    assert _compared_with_a_kind_name(ast.parse('x = ex.kind in ("cuda", "triton")\n')) == [1]
    assert _compared_with_a_kind_name(ast.parse('if task.kind == "time" or dt.kind == "f":\n    pass\n')) == []


def test_no_module_outside_the_kinds_branches_on_a_kinds_name(root):
    found = []
    for path in sorted((root / "grader").rglob("*.py")):
        if path.parent.name == "kinds":
            continue
        lines = _compared_with_a_kind_name(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        found += [f"{path.relative_to(root)}:{line}" for line in lines]
    assert not found, "ask the exercise's kind (grader.kinds.registry.kind_of(...).traits or a method) instead: " + ", ".join(found)


def test_each_kinds_suffix_is_the_exercises_suffix():
    assert {name: kind.traits.suffix for name, kind in KINDS.items()} == exercise_module.SUFFIXES


class _Triton:
    """A stand-in third kind: the Python kind's pipeline under another name, with its own facts and texts."""

    name = "triton"
    traits = KindTraits(suffix=".py", python_source=True, on_gpu=True, sized=False, profiled=False)
    gradescope_readme = "TRITON README {id} {filename}\n"

    def __init__(self) -> None:
        self.calls: list[str] = []
        self._python = PythonKind()

    def read(self, exercise, path):
        return self._python.read(exercise, path)

    def grade(self, exercise, submitted, options):
        return self._python.grade(exercise, submitted, options)

    def not_graded(self, exercise, backend, reason):
        return self._python.not_graded(exercise, backend, reason)

    def summary(self, exercise):
        return "Triton kernels: " + ", ".join(f.name for f in exercise.spec.functions)

    def student_bundle(self, exercise, out, pip_source):
        self.calls.append("student_bundle")
        return self._python.student_bundle(exercise, out, pip_source)

    def hidden_in_bundle(self, exercise):
        self.calls.append("hidden_in_bundle")
        return ["a triton leak"]

    def validate(self, exercise, *, grade, conventions, backend, seed, progress):
        out = Validation(exercise.id, f"triton-{backend}")
        conventions(exercise, out)
        out.add(True, f"triton reference graded: {grade(exercise.root, exercise.solution_path, seed=seed).score:g}")
        return out


@pytest.fixture
def triton(monkeypatch):
    """The shipped Python exercise, read as a kind "triton" that only KINDS and SUFFIXES know."""
    kind = _Triton()
    monkeypatch.setitem(KINDS, "triton", kind)
    monkeypatch.setitem(exercise_module.SUFFIXES, "triton", ".py")
    monkeypatch.setattr(exercise_module.Exercise, "kind", property(lambda self: "triton"))
    return kind


def test_a_third_kind_flows_through_list_profile_validate_conventions_and_both_bundles(root, tmp_path, triton):
    from click.testing import CliRunner

    from grader.cli.commands import main
    from grader.staff import conventions, gradescope
    from grader.staff.validate import validate

    lesson = root / "exercises" / "lesson_numpy"
    listed = CliRunner().invoke(main, ["list", str(lesson)])
    assert listed.exit_code == 0 and "Triton kernels: " in listed.output
    profiled = CliRunner().invoke(main, ["profile", str(lesson), str(root / "reference/lesson_numpy/solution.py"),
                                         "--size", "N=8"])
    assert profiled.exit_code == 2 and "triton exercise" in profiled.output

    result = validate(lesson, backend="emu", seed=1)
    assert result.backend == "triton-emu" and (True, "triton reference graded: 100") in result.items
    assert any(not ok and "a triton leak" in text for ok, text in result.items)  # the kind's own bundle check
    ex = exercise_module.load(lesson)
    assert conventions.layout(ex) == []  # not sized: no public sizes asked for

    zipped = gradescope.build_bundle(lesson, tmp_path / "ag.zip")
    with zipfile.ZipFile(zipped.path) as zf:
        assert zf.read("README.md").decode() == "TRITON README lesson_numpy submission.py\n"
    written = CliRunner().invoke(main, ["student", str(lesson), "--out", str(tmp_path / "handout")])
    assert written.exit_code == 0, written.output
    assert triton.calls.count("student_bundle") == 1 and (tmp_path / "handout" / "lesson_numpy").is_dir()


def test_the_triton_kind_states_its_facts_and_texts(root, tmp_path):
    from grader.staff import gradescope

    ex = exercise_module.load(root / "exercises" / "triton_vector_add")
    kind = kind_of(ex)
    assert kind.traits == KindTraits(suffix=".py", python_source=True, on_gpu=False, sized=True, profiled=False,
                                     requires=("torch --index-url https://download.pytorch.org/whl/cpu", "triton"))
    assert kind.summary(ex).startswith("Triton kernel, launcher add(x, y, out, n): correctness 40")
    zipped = gradescope.build_bundle(ex.root, tmp_path / "ag.zip")
    with zipfile.ZipFile(zipped.path) as zf:
        readme = zf.read("README.md").decode()
        assert "submission.py" in readme and "download.pytorch.org/whl/cpu" in readme
        assert "reference/triton_vector_add/solution.py" in zf.namelist()
