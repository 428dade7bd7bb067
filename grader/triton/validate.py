"""`grade validate` for a Triton exercise: the conventions, the reference scores full marks, the
skeleton loads and fails correctness, every wrong/*.py fails the check category its `# expect:`
header names (and only those its `# also:` header adds). Each file is graded through `grade`
(grader.api.grade, handed down), as a student's file is.

Performance is informative for a wrong file: a failed performance check is shown beside its verdict
and never fails it (unless the file's `# expect:` is performance). A wrong file's speed against the
reference is a measurement on one GPU, with noise near a step's edge; a correctness or traffic lesson
must not turn red on a busy GPU. Where it cannot run (the CPU path: it needs a GPU) it is not asked
for at all, of the reference or of a wrong file."""
from __future__ import annotations

from typing import Callable

from ..exercise import Exercise
from ..grading.validation import Validation, failing, wrong_file_verdict
from ..results import Report
from ..spec import CATEGORIES
from ..staff.expectation import read_expectation
from .sandbox import available

Grade = Callable[..., Report]


def validate(exercise: Exercise, *, grade: Grade, conventions: Callable[[Exercise, Validation], None], backend: str,
             seed: int, progress: Callable[[str], None]) -> Validation:
    """Every promise of a Triton exercise, one item each, graded on `backend` ("emu": the CPU path alone;
    "gpu": the CPU path and the compiled one on the GPU; "auto": the GPU where there is one)."""
    spec = exercise.spec
    out = Validation(exercise.id, backend)
    out.add(True, f"spec.toml is valid ({len(spec.params)} launcher parameters, {spec.max_score:g} points)")  # type: ignore[union-attr]
    progress("conventions")
    conventions(exercise, out)
    missing = [c for c in spec.public_cases if c not in spec.hidden_cases]
    if spec.hidden_cases:
        out.add(not missing, "public sizes are among the hidden sizes" if not missing else f"public sizes missing from hidden: {missing}")
    why = available()
    if why:
        out.add(False, f"cannot validate here: {why}")
        return out
    if not exercise.solution_path.is_file():
        out.add(False, f"no reference solution at {exercise.solution_path}")
        return out

    def graded(path) -> Report:
        return grade(exercise.root, path, backend=backend, seed=seed)

    progress(exercise.solution_path.name)
    ref = graded(exercise.solution_path)
    bad = [f"{t.name}: {t.output.splitlines()[0] if t.output else ''}" for t in ref.tests if not t.passed]
    bad += [f"not graded: {n.reason}" for n in _not_run(ref)]
    out.add(not bad and ref.score == ref.max_score, f"reference scores {ref.score:g} / {ref.max_score:g}"
            + (": " + "; ".join(bad) if bad else ""))
    if backend == "gpu":
        why = "; ".join(ref.notes) or "no GPU was used"
        out.add(ref.backend == "gpu", "the reference ran compiled on the GPU" if ref.backend == "gpu"
                else f"the reference did not run on the GPU: {why}")
    if exercise.skeleton_path.is_file():
        progress(exercise.skeleton_path.name)
        skel = graded(exercise.skeleton_path)
        loads = any(t.category == "compile" and t.passed for t in skel.tests)
        wrong = "correctness" in failing(skel)
        out.add(loads and wrong, "skeleton loads and fails correctness" if loads and wrong else
                f"skeleton must load and fail correctness (loads: {loads}, fails correctness: {wrong})")
    else:
        out.add(False, f"no {exercise.skeleton_path.name}")
    wrong_files = sorted((exercise.reference_dir / "wrong").glob("*.py"))
    if not wrong_files:
        out.add(False, "no wrong submissions in reference/<id>/wrong/")
    for path in wrong_files:
        exp = read_expectation(path)
        if exp is None or exp.expect not in CATEGORIES:
            out.add(False, f"wrong/{path.name}: first lines must say `# expect: <category>` (one of {', '.join(CATEGORIES)})")
            continue
        progress(f"wrong/{path.name}")
        report = graded(path)
        skipped = _not_run(report)
        if skipped:
            out.add(False, f"wrong/{path.name}: not graded ({skipped[0].reason})")
            continue
        also = exp.also if exp.expect == "performance" else exp.also | {"performance"}
        ok, text = wrong_file_verdict(path.name, report, exp.expect, also, "#")
        out.add(ok, text + _performance_note(report, exp.expect))
    return out


def _not_run(report: Report) -> list:
    """The report's not-run checks that validation asks about: all but a performance check that could
    not run here for want of a GPU (not the grader's fault)."""
    return [n for n in report.not_run if n.category != "performance" or n.grader_fault]


def _performance_note(report: Report, expect: str) -> str:
    """A wrong file's failed performance check, for information (its verdict does not count it)."""
    if expect == "performance":
        return ""
    for t in report.tests:
        if t.category == "performance" and not t.passed and not t.extra.get("gated"):
            return f" (performance, informative: {t.score:g} / {t.max_score:g})"
    return ""
