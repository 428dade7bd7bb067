"""The Python kind: a module of functions (a .py file, or a notebook's definitions) run in a walled-off
Python child and judged by the exercise's checks and hidden tests. The pipeline itself is
grader.pyexercise.grade; this is its face as a kind."""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Callable

import nbformat

from ..exercise import Exercise
from ..grading.submitted import Submitted
from ..grading.validation import Validation
from ..pyexercise import grade as pygrade
from ..pyexercise import student_bundle as pystudent
from ..pyexercise.grade import LOAD_NAME
from ..results import NotRun, Report, TestResult
from ..staff.expectation import read_expectation
from ..staff.student_bundle import StudentBundle
from .base import Grade, KindTraits, Options


# The README.md of the Gradescope zip (grader.staff.gradescope), a str.format template.
GRADESCOPE_README = """# Gradescope autograder: {id} ({title})

Built by kernel-grader {version} (`grade gradescope`). Upload this zip under the assignment's
"Configure Autograder" with the Ubuntu 22.04 base image. Students submit `{filename}` (their
functions) or the Colab notebook they worked in.

## What runs where

- `setup.sh` (once, when Gradescope builds the image): installs Python and this grader, with its
  dependencies (pytest runs the hidden tests), into `/autograder/venv`, and grades the reference
  solution as a smoke test: unless it gets full marks, setup.sh fails and so does the image build.
- `run_autograder` (once per submission): grades `/autograder/submission/` and writes
  `/autograder/results/results.json`, always, whatever the submission does. `{filename}` is
  graded; else a single `.py` file (with a note about the name); else a single notebook
  (`.ipynb`, any name), whose code cells' definitions are graded and whose calls, `!` lines and
  `%%` cells are never run. One grading may take {timeout:g} s (`bundle.json`).

In a child process, in a jail the kernel enforces, whose one writable folder holds only the
submission and the exercise's public files, under the exercise's CPU, memory, file and output
limits: bubblewrap's namespaces where the container allows them, else Landlock (Docker's default
seccomp profile, which Gradescope's containers may run under, refuses namespaces); a seccomp filter
(no processes, threads, sockets or signals); a uid of its own (run_autograder runs as root). It sees
nothing of the exercise, reference or grader folders. Results' `extra_data.device` names the walls
each grading got; where the kernel gives neither namespaces nor Landlock it says so plainly, and
run_autograder has made the course's files readable by root alone. The child only returns values;
every check and score is computed outside it. See docs/sandbox.md in the grader's repository.

## This zip contains secrets

`exercises/{id}/tests/` holds the hidden tests and `reference/{id}/` the solution. Keep the zip
where students cannot download it.

## Testing it locally

    mkdir -p /tmp/ag/submission && unzip autograder.zip -d /tmp/ag/source
    cp my_functions.py /tmp/ag/submission/{filename}
    KERNEL_GRADER_AUTOGRADER_ROOT=/tmp/ag KERNEL_GRADER_PYTHON=python3 bash /tmp/ag/source/run_autograder
    cat /tmp/ag/results/results.json
"""


class PythonKind:
    """Exercises of Python functions (spec kind "python"): no kernel, and no backend to choose."""

    name = "python"
    traits = KindTraits(suffix=".py", python_source=True, on_gpu=False, sized=False, profiled=False)
    gradescope_readme = GRADESCOPE_README

    def read(self, exercise: Exercise, path: Path) -> Submitted:
        """The .py module, or a notebook's definitions, read once and held to the size limits."""
        return pygrade.read(path, exercise.spec)  # type: ignore[arg-type]

    def grade(self, exercise: Exercise, submitted: Submitted, options: Options) -> Report:
        """Grade the functions in a Python child (options.backend does not apply: always the CPU)."""
        return pygrade.grade(exercise, submitted, seed=options.seed, started=options.started)

    def not_graded(self, exercise: Exercise, backend: str, reason: str) -> tuple[list[TestResult], list[NotRun]]:
        """The load test failed with `reason`, every function's test gated."""
        return pygrade.not_loaded(exercise.spec, reason), []  # type: ignore[arg-type]

    def summary(self, exercise: Exercise) -> str:
        """The functions with their points."""
        return "Python functions: " + ", ".join(f"{f.name} {f.points:g}" for f in exercise.spec.functions)  # type: ignore[union-attr]

    def student_bundle(self, exercise: Exercise, out: Path, pip_source: str) -> StudentBundle:
        """README, skeleton.py, the public spec and a notebook (grader.pyexercise.student_bundle); the
        notebook installs nothing, so `pip_source` does not apply."""
        return StudentBundle(*pystudent.build_bundle(exercise, Path(out)))

    def hidden_in_bundle(self, exercise: Exercise) -> list[str]:
        """None here: validate's own notebook step builds the bundle and checks it (_check_notebook)."""
        return []

    def validate(self, exercise: Exercise, *, grade: Grade, conventions: Callable[[Exercise, Validation], None],
                 backend: str, seed: int, progress: Callable[[str], None]) -> Validation:
        """The reference, the skeleton, the student notebook and the wrong corpus (`backend` does not apply)."""
        return _validate(exercise, grade, conventions, seed, progress)


def _validate(exercise: Exercise, grade: Grade, conventions: Callable[[Exercise, Validation], None], seed: int,
              progress: Callable[[str], None]) -> Validation:
    """A Python exercise's promises: the reference passes every function, the skeleton loads and
    fails, each wrong/*.py fails the function its `# expect: <function>` line names (and only those
    its `# also:` line adds), and the student notebook builds and holds nothing hidden."""
    spec = exercise.spec
    out = Validation(exercise.id, "python")
    out.add(True, f"spec.toml is valid ({len(spec.functions)} functions, {spec.max_score:g} points)")
    progress("conventions")
    conventions(exercise, out)

    def by_function(report: Report) -> set[str]:
        names = {(f.title or f"{f.name}()"): f.name for f in spec.functions}
        return {names[t.name] for t in report.tests if not t.passed and not t.extra.get("gated") and t.name in names}

    if not exercise.solution_path.is_file():
        out.add(False, f"no reference solution at {exercise.solution_path}")
        return out
    progress(exercise.solution_path.name)
    ref = grade(exercise.root, exercise.solution_path, seed=seed)
    bad = [f"{t.name}: {t.output.splitlines()[0] if t.output else ''}" for t in ref.tests if not t.passed]
    out.add(not bad and ref.score == spec.max_score, f"reference scores {ref.score:g} / {spec.max_score:g}"
            + (": " + "; ".join(bad) if bad else ""))
    if exercise.skeleton_path.is_file():
        progress(exercise.skeleton_path.name)
        skel = grade(exercise.root, exercise.skeleton_path, seed=seed)
        loads = any(t.name == LOAD_NAME and t.passed for t in skel.tests)
        out.add(loads and skel.score == 0, "skeleton loads and scores 0" if loads and skel.score == 0 else
                f"skeleton must load and score 0 (loads: {loads}, score: {skel.score:g})")
    else:
        out.add(False, f"no {exercise.skeleton_path.name}")
    _check_notebook(exercise, out, grade, seed, progress)
    wrong_files = sorted((exercise.reference_dir / "wrong").glob("*.py"))
    if not wrong_files:
        out.add(False, "no wrong submissions in reference/<id>/wrong/")
    for path in wrong_files:
        exp = read_expectation(path)
        if exp is None or exp.expect not in spec.names:
            out.add(False, f"wrong/{path.name}: first lines must say `# expect: <function>` (one of {', '.join(spec.names)})")
            continue
        progress(f"wrong/{path.name}")
        failed = by_function(grade(exercise.root, path, seed=seed))
        undeclared = failed - {exp.expect} - exp.also
        text = (f"wrong/{path.name}: fails {exp.expect}" if exp.expect in failed else
                f"wrong/{path.name}: should fail {exp.expect} but passed it")
        if undeclared:
            text += f"; also fails {', '.join(sorted(undeclared))} (not declared in `# also:`)"
        out.add(exp.expect in failed and not undeclared, text)
    return out


def _check_notebook(exercise: Exercise, out: Validation, grade: Grade, seed: int, progress: Callable[[str], None]) -> None:
    """The student notebook builds, is valid nbformat, holds nothing hidden, and grades full marks
    once the reference's functions are pasted into its TODO cells (and 0 as handed out)."""
    progress("student notebook")
    with tempfile.TemporaryDirectory(prefix="kg-validate-") as tmp:
        _, _, path = pystudent.build_bundle(exercise, Path(tmp) / "handout")
        text = path.read_text(encoding="utf-8")
        notebook = nbformat.reads(text, as_version=4)
        nbformat.validate(notebook)
        leaks = pystudent.hidden_material_in("\n".join(p.read_text(encoding="utf-8") for p in path.parent.iterdir()), exercise)
        out.add(not leaks, "student bundle holds no hidden material" if not leaks else
                f"student bundle holds hidden material: {'; '.join(leaks[:3])}")
        skeleton = exercise.skeleton_path.read_text(encoding="utf-8")
        filled = pystudent.filled_in(notebook, skeleton, exercise.solution_path.read_text(encoding="utf-8"),
                                     exercise.spec.names)
        filled_path = Path(tmp) / "filled.ipynb"
        nbformat.write(filled, str(filled_path))
        as_given = grade(exercise.root, path, seed=seed)
        done = grade(exercise.root, filled_path, seed=seed)
        ok = done.score == exercise.spec.max_score and as_given.score == 0
        out.add(ok, f"student notebook: {as_given.score:g} as handed out, {done.score:g} / {exercise.spec.max_score:g} "
                    "with the reference pasted into its TODO cells")
