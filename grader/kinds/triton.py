"""The Triton kind: a @triton.jit kernel and its launcher (a .py module), run by Triton's interpreter
on the CPU in the Python kind's walled-off child, every load and store watched. The pipeline itself
is grader.triton.grade; this is its face as a kind."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..exercise import Exercise
from ..grading.submitted import Submitted
from ..results import NotRun, Report, TestResult
from ..triton import grade as tritongrade
from ..triton import validate as tritonvalidate
from .base import Options


class TritonKind:
    """Triton exercises (spec kind "triton"): the CPU path (the interpreter); `--backend gpu` is refused
    until the GPU path (grader.triton.gpu) is wired in."""

    name = "triton"

    def read(self, exercise: Exercise, path: Path) -> Submitted:
        """The .py module, read once and held to the size limit."""
        return tritongrade.read(path, exercise.spec)  # type: ignore[arg-type]

    def grade(self, exercise: Exercise, submitted: Submitted, options: Options) -> Report:
        """Grade the kernel and launcher under the interpreter (the CPU; every backend asked for)."""
        return tritongrade.grade(exercise, submitted, seed=options.seed, started=options.started)

    backend = tritongrade.BACKEND

    def validate(self, exercise: Exercise, seed: int, progress: Callable[[str], None]) -> list[tuple[bool, str]]:
        """`grade validate`'s items: the reference, the skeleton and the wrong corpus graded on the CPU path."""
        return tritonvalidate.validate(exercise, seed, progress)

    def not_graded(self, exercise: Exercise, backend: str, reason: str) -> tuple[list[TestResult], list[NotRun]]:
        """The load test failed with `reason`, every check gated."""
        return tritongrade.not_loaded(exercise.spec, reason)  # type: ignore[arg-type]
