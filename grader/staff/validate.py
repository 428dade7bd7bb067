"""`grade validate`: proof that an exercise is ready to hand out.

The spec validates; the exercise keeps every convention of grader.staff.conventions; the reference
solution scores full marks; the skeleton compiles and fails correctness; every wrong submission fails
the category its header names (`// expect: race`) and nothing it does not declare (`// also:
correctness`); the public sizes are among the hidden ones. A check gated behind an earlier failure
was not graded, and a grading the grader (or the exercise's own code) failed is no verdict: validate
says so rather than "passed".
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .. import api
from ..exercise import Exercise
from ..exercise import load as load_exercise
from ..kinds.registry import kind_of
from ..results import Report
from ..spec import CATEGORIES
from .conventions import CONVENTIONS
from .expectation import read_expectation


@dataclass
class Validation:
    """The verdict on one exercise: each item is (ok, text)."""

    exercise: str
    backend: str
    items: list[tuple[bool, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(ok for ok, _ in self.items)

    def add(self, ok: bool, text: str) -> None:
        self.items.append((ok, text))


def failing(report: Report) -> set[str]:
    """Categories the report failed, leaving out checks that were only gated (not graded)."""
    return {t.category for t in report.tests if not t.passed and not t.extra.get("gated")}


def gated_reason(report: Report, category: str) -> str:
    """Why the check of `category` was not graded (gated behind an earlier failure), or "" when it was."""
    for t in report.tests:
        if t.category == category and t.extra.get("gated"):
            first = t.output.splitlines()[0] if t.output else "an earlier check failed"
            return first.removeprefix("Not graded: ").rstrip(".")
    return ""


def _fault_text(report: Report) -> str:
    """The grader faults of a report, each reason once, with the first line of an exception's traceback's end."""
    texts = []
    for n in report.grader_faults:
        last = n.detail.strip().splitlines()[-1] if n.detail.strip() else ""
        texts.append(n.reason + (f": {last}" if last else ""))
    return "; ".join(dict.fromkeys(texts))


def validate(exercise_dir: Path, *, backend: str = "auto", seed: int = 1,
             progress: Callable[[str], None] = lambda _: None) -> Validation:
    """Run every promise an exercise makes and collect the verdicts."""
    exercise: Exercise = load_exercise(exercise_dir)
    own = getattr(kind_of(exercise), "validate", None)
    if own is not None:  # a kind that validates its exercises itself (Triton): its items
        return Validation(exercise.id, getattr(kind_of(exercise), "backend", "emu"), list(own(exercise, seed, progress)))
    if exercise.kind == "python":
        return _validate_python(exercise, seed, progress)
    chosen, _, _ = api.resolve_backend(backend)
    out = Validation(exercise.id, chosen)
    out.add(True, f"spec.toml is valid ({len(exercise.spec.checks)} checks, {exercise.spec.max_score:g} points)")
    _check_conventions(exercise, out, progress)
    spec = exercise.spec
    if spec.hidden_cases:
        missing = [c for c in spec.public_cases if c not in spec.hidden_cases]
        out.add(not missing, "public sizes are among the hidden sizes" if not missing else f"public sizes missing from hidden: {missing}")

    if not exercise.solution_path.is_file():
        out.add(False, f"no reference solution at {exercise.solution_path}")
        return out
    progress("solution.cu")
    ref = api.grade(exercise.root, exercise.solution_path, backend=chosen, seed=seed)
    bad = [f"{t.name}: {t.output.splitlines()[0] if t.output else ''}" for t in ref.tests if not t.passed]
    bad += [f"not graded (grader fault: {_fault_text(ref)})"] if ref.grader_faults else []
    full = ref.score == ref.max_score
    out.add(not bad and full, f"reference scores {ref.score:g} / {ref.max_score:g}" + (": " + "; ".join(bad) if bad else ""))

    if exercise.skeleton_path.is_file():
        progress("skeleton.cu")
        skel = api.grade(exercise.root, exercise.skeleton_path, backend=chosen, seed=seed)
        compiled = any(t.category == "compile" and t.passed for t in skel.tests)
        wrong = "correctness" in failing(skel)
        if skel.grader_faults:
            out.add(False, f"skeleton.cu: not graded (grader fault: {_fault_text(skel)})")
        else:
            out.add(compiled and wrong, "skeleton compiles and fails correctness" if compiled and wrong else
                    f"skeleton must compile and fail correctness (compiles: {compiled}, fails correctness: {wrong})")
    else:
        out.add(False, "no skeleton.cu")

    wrong_files = sorted((exercise.reference_dir / "wrong").glob("*.cu"))
    if not wrong_files:
        out.add(False, "no wrong submissions in reference/<id>/wrong/")
    for path in wrong_files:
        exp = read_expectation(path)
        if exp is None or exp.expect not in CATEGORIES:
            out.add(False, f"wrong/{path.name}: first lines must say `// expect: <category>` (one of {', '.join(CATEGORIES)})")
            continue
        progress(f"wrong/{path.name}")
        report = api.grade(exercise.root, path, backend=chosen, seed=seed)
        if report.grader_faults:
            out.add(False, f"wrong/{path.name}: not graded (grader fault: {_fault_text(report)})")
            continue
        failed = failing(report)
        skipped = {n.category for n in report.not_run}
        if exp.expect in skipped:
            out.add(True, f"wrong/{path.name}: {exp.expect} cannot run on this backend (skipped)")
            continue
        undeclared = failed - {exp.expect} - exp.also
        ok = exp.expect in failed and not undeclared
        gated = gated_reason(report, exp.expect)
        if exp.expect in failed:
            text = f"wrong/{path.name}: fails {exp.expect}"
        elif gated:
            # Gated off by an earlier failure: the check never looked at this file, so it did not pass it.
            text = f"wrong/{path.name}: should fail {exp.expect}, but {exp.expect} was not graded (gated: {gated})"
        else:
            text = f"wrong/{path.name}: should fail {exp.expect} but passed it"
        if undeclared:
            text += f"; also fails {', '.join(sorted(undeclared))} (not declared in `// also:`)"
        out.add(ok, text)
    return out


def _check_conventions(exercise: Exercise, out: Validation, progress: Callable[[str], None]) -> None:
    """Every convention of grader.staff.conventions, one item each."""
    progress("conventions")
    for convention in CONVENTIONS:
        try:
            problems = list(convention.check(exercise))
        except Exception as exc:  # noqa: BLE001 - the exercise's own code (its harness) raised while being checked
            problems = [f"could not be checked: the exercise's code raised {type(exc).__name__}: {exc}"]
        if problems:
            out.add(False, f"convention '{convention.name}' ({convention.rule}): " + "; ".join(problems[:5])
                    + (f"; and {len(problems) - 5} more" if len(problems) > 5 else ""))
        else:
            out.add(True, f"convention '{convention.name}': {convention.rule}")


def _validate_python(exercise: Exercise, seed: int, progress: Callable[[str], None]) -> Validation:
    """A Python exercise's promises: the reference passes every function, the skeleton loads and
    fails, each wrong/*.py fails the function its `# expect: <function>` line names (and only those
    its `# also:` line adds), and the student notebook builds and holds nothing hidden."""
    from ..pyexercise.grade import LOAD_NAME

    spec = exercise.spec
    out = Validation(exercise.id, "python")
    out.add(True, f"spec.toml is valid ({len(spec.functions)} functions, {spec.max_score:g} points)")
    _check_conventions(exercise, out, progress)

    def by_function(report: Report) -> set[str]:
        names = {(f.title or f"{f.name}()"): f.name for f in spec.functions}
        return {names[t.name] for t in report.tests if not t.passed and not t.extra.get("gated") and t.name in names}

    if not exercise.solution_path.is_file():
        out.add(False, f"no reference solution at {exercise.solution_path}")
        return out
    progress(exercise.solution_path.name)
    ref = api.grade(exercise.root, exercise.solution_path, seed=seed)
    bad = [f"{t.name}: {t.output.splitlines()[0] if t.output else ''}" for t in ref.tests if not t.passed]
    out.add(not bad and ref.score == spec.max_score, f"reference scores {ref.score:g} / {spec.max_score:g}"
            + (": " + "; ".join(bad) if bad else ""))
    if exercise.skeleton_path.is_file():
        progress(exercise.skeleton_path.name)
        skel = api.grade(exercise.root, exercise.skeleton_path, seed=seed)
        loads = any(t.name == LOAD_NAME and t.passed for t in skel.tests)
        out.add(loads and skel.score == 0, "skeleton loads and scores 0" if loads and skel.score == 0 else
                f"skeleton must load and score 0 (loads: {loads}, score: {skel.score:g})")
    else:
        out.add(False, f"no {exercise.skeleton_path.name}")
    _check_python_notebook(exercise, out, seed, progress)
    wrong_files = sorted((exercise.reference_dir / "wrong").glob("*.py"))
    if not wrong_files:
        out.add(False, "no wrong submissions in reference/<id>/wrong/")
    for path in wrong_files:
        exp = read_expectation(path)
        if exp is None or exp.expect not in spec.names:
            out.add(False, f"wrong/{path.name}: first lines must say `# expect: <function>` (one of {', '.join(spec.names)})")
            continue
        progress(f"wrong/{path.name}")
        failed = by_function(api.grade(exercise.root, path, seed=seed))
        undeclared = failed - {exp.expect} - exp.also
        text = (f"wrong/{path.name}: fails {exp.expect}" if exp.expect in failed else
                f"wrong/{path.name}: should fail {exp.expect} but passed it")
        if undeclared:
            text += f"; also fails {', '.join(sorted(undeclared))} (not declared in `# also:`)"
        out.add(exp.expect in failed and not undeclared, text)
    return out


def _check_python_notebook(exercise: Exercise, out: Validation, seed: int, progress: Callable[[str], None]) -> None:
    """The student notebook builds, is valid nbformat, holds nothing hidden, and grades full marks
    once the reference's functions are pasted into its TODO cells (and 0 as handed out)."""
    import tempfile

    import nbformat

    from ..pyexercise import student_bundle as pystudent

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
        as_given = api.grade(exercise.root, path, seed=seed)
        done = api.grade(exercise.root, filled_path, seed=seed)
        ok = done.score == exercise.spec.max_score and as_given.score == 0
        out.add(ok, f"student notebook: {as_given.score:g} as handed out, {done.score:g} / {exercise.spec.max_score:g} "
                    "with the reference pasted into its TODO cells")
