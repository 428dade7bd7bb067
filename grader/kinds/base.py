"""The interface every exercise kind implements, and the options a grading is given."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..exercise import Exercise
from ..grading.submitted import Submitted
from ..results import NotRun, TestResult, Report


@dataclass(frozen=True)
class Options:
    """How to grade, as api.grade was asked: the backend asked for ("auto", "gpu", "emu"; a kind
    with no backend to choose ignores it), a fixed base seed or None (derived from the submission),
    a scratch folder to use and keep, and when the grading started (time.perf_counter())."""

    started: float
    backend: str = "auto"
    seed: int | None = None
    workdir: Path | None = None
    keep_workdir: bool = False


class Kind(Protocol):
    """One kind of exercise: how its submissions are read, graded, and listed when not graded."""

    name: str

    def read(self, exercise: Exercise, path: Path) -> Submitted:
        """Read the submission at `path` once, applying the kind's source policy; never raises for
        anything the file holds (a refusal is a Submitted whose verdict says why)."""
        ...

    def grade(self, exercise: Exercise, submitted: Submitted, options: Options) -> Report:
        """Grade a submission already read; never raises for anything the submission does."""
        ...

    def not_graded(self, exercise: Exercise, backend: str, reason: str) -> tuple[list[TestResult], list[NotRun]]:
        """Every test of the exercise failed, the first with `reason`, for a submission that could not
        be graded at all (no file, a timeout, a grader that died): the shape a refusal takes."""
        ...
