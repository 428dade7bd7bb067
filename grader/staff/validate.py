"""`grade validate`: proof that an exercise is ready to hand out.

The spec validates; the exercise keeps every convention of grader.staff.conventions; the reference
solution scores full marks; the skeleton compiles and fails correctness; every wrong submission fails
the category its header names (`// expect: race`) and nothing it does not declare (`// also:
correctness`); the public sizes are among the hidden ones. A check gated behind an earlier failure
was not graded, and a grading the grader (or the exercise's own code) failed is no verdict: validate
says so rather than "passed".

What an exercise promises depends on its kind (a Python exercise's wrong files name functions, not
check categories): each kind's Kind.validate proves its own, handed the grading and the conventions.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from .. import api
from ..exercise import Exercise
from ..exercise import load as load_exercise
from ..grading.validation import Validation
from ..kinds.registry import kind_of
from .conventions import CONVENTIONS


def validate(exercise_dir: Path, *, backend: str = "auto", seed: int = 1,
             progress: Callable[[str], None] = lambda _: None) -> Validation:
    """Run every promise an exercise makes and collect the verdicts (its kind says which: Kind.validate)."""
    exercise: Exercise = load_exercise(exercise_dir)
    return kind_of(exercise).validate(exercise, grade=api.grade, conventions=check_conventions, backend=backend,
                                      seed=seed, progress=progress)


def check_conventions(exercise: Exercise, out: Validation) -> None:
    """Every convention of grader.staff.conventions, one item each."""
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


