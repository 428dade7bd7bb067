"""The Python kind: a module of functions (a .py file, or a notebook's definitions) run in a walled-off
Python child and judged by the exercise's checks and hidden tests. The pipeline itself is
grader.pyexercise.grade; this is its face as a kind."""
from __future__ import annotations

from pathlib import Path

from ..exercise import Exercise
from ..grading.submitted import Submitted
from ..pyexercise import grade as pygrade
from ..results import NotRun, Report, TestResult
from .base import Options


class PythonKind:
    """Exercises of Python functions (spec kind "python"): no kernel, and no backend to choose."""

    name = "python"

    def read(self, exercise: Exercise, path: Path) -> Submitted:
        """The .py module, or a notebook's definitions, read once and held to the size limits."""
        return pygrade.read(path, exercise.spec)  # type: ignore[arg-type]

    def grade(self, exercise: Exercise, submitted: Submitted, options: Options) -> Report:
        """Grade the functions in a Python child (options.backend does not apply: always the CPU)."""
        return pygrade.grade(exercise, submitted, seed=options.seed, started=options.started)

    def not_graded(self, exercise: Exercise, backend: str, reason: str) -> tuple[list[TestResult], list[NotRun]]:
        """The load test failed with `reason`, every function's test gated."""
        return pygrade.not_loaded(exercise.spec, reason), []  # type: ignore[arg-type]
