"""`grade validate` for a Triton exercise: the reference scores full marks, the skeleton loads and
fails correctness, every wrong/*.py fails the check category its `# expect:` header names (and only
those its `# also:` header adds). Graded as a student's file is, on the CPU path."""
from __future__ import annotations

import time
from typing import Callable

from ..exercise import Exercise
from ..kinds.base import Options
from ..results import Report
from ..spec import CATEGORIES
from ..staff.expectation import read_expectation
from . import grade as tritongrade

Items = list[tuple[bool, str]]


def failing(report: Report) -> set[str]:
    """Categories the report failed, leaving out checks that were only gated (not graded)."""
    return {t.category for t in report.tests if not t.passed and not t.extra.get("gated")}


def gated_reason(report: Report, category: str) -> str:
    """Why the check of `category` was not graded (gated behind an earlier failure), or ""."""
    for t in report.tests:
        if t.category == category and t.extra.get("gated"):
            return (t.output.splitlines()[0] if t.output else "an earlier check failed").removeprefix("Not graded: ").rstrip(".")
    return ""


class _Items(list):
    def add(self, ok: bool, text: str) -> None:
        self.append((ok, text))


def _grade(exercise: Exercise, path, seed: int) -> Report:
    sub = tritongrade.read(path, exercise.spec)  # type: ignore[arg-type]
    return tritongrade.grade(exercise, sub, seed=seed, started=Options(started=time.perf_counter()).started)


def validate(exercise: Exercise, seed: int, progress: Callable[[str], None]) -> Items:
    """Every promise of a Triton exercise, one (ok, text) item each (grade validate shows them)."""
    spec = exercise.spec
    out = _Items()
    out.add(True, f"spec.toml is valid ({len(spec.params)} launcher parameters, {spec.max_score:g} points)")
    missing = tritongrade.available()
    if missing:
        out.add(False, f"cannot validate here: {missing}")
        return out
    if not exercise.solution_path.is_file():
        out.add(False, f"no reference solution at {exercise.solution_path}")
        return out
    progress(exercise.solution_path.name)
    ref = _grade(exercise, exercise.solution_path, seed)
    bad = [f"{t.name}: {t.output.splitlines()[0] if t.output else ''}" for t in ref.tests if not t.passed]
    bad += [f"not graded: {n.reason}" for n in ref.not_run]
    out.add(not bad and ref.score == ref.max_score, f"reference scores {ref.score:g} / {ref.max_score:g}"
            + (": " + "; ".join(bad) if bad else ""))
    if exercise.skeleton_path.is_file():
        progress(exercise.skeleton_path.name)
        skel = _grade(exercise, exercise.skeleton_path, seed)
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
        report = _grade(exercise, path, seed)
        if report.not_run:
            out.add(False, f"wrong/{path.name}: not graded ({report.not_run[0].reason})")
            continue
        failed = failing(report)
        undeclared = failed - {exp.expect} - exp.also
        gated = gated_reason(report, exp.expect)
        if exp.expect in failed:
            text = f"wrong/{path.name}: fails {exp.expect}"
        elif gated:
            text = f"wrong/{path.name}: should fail {exp.expect}, but {exp.expect} was not graded (gated: {gated})"
        else:
            text = f"wrong/{path.name}: should fail {exp.expect} but passed it"
        if undeclared:
            text += f"; also fails {', '.join(sorted(undeclared))} (not declared in `# also:`)"
        out.add(exp.expect in failed and not undeclared, text)
    return out
