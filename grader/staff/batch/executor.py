"""Where a batch's gradings run: the Executor interface, and the values that cross it.

An executor grades the students it is given, each in a child process under the batch's time limit,
and hands every finished grading to grader.staff.batch.record.record() as it ends, so that results
files appear one by one and an interrupted batch keeps them. LocalExecutor (grader.staff.batch.local:
this machine's cores or GPUs) and RayExecutor (grader.staff.batch.ray: a Ray cluster) implement it;
another (a Slurm queue) would be one more module beside them.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol, Sequence

from ...exercise import Exercise
from .intake import Entry


@dataclass(frozen=True)
class BatchContext:
    """What every grading of one batch shares: the exercise, where results go, the limits."""

    exercise: Exercise
    out: Path
    backend: str
    timeout: float
    seed: int | None
    key: str
    scratch: Path
    tag_root: str
    # What ended when (perf_counter seconds), in order: the batch's own timeline after its gradings
    # (closing its slots, stopping its profilers, the gradebook, the pages), for run.TIMELINE_VARIABLE.
    marks: list[tuple[str, float]] = field(default_factory=list, compare=False)

    def mark(self, what: str) -> None:
        """Note that `what` has just ended."""
        self.marks.append((what, time.perf_counter()))


@dataclass
class Outcome:
    """What happened to one student in this run (for progress reporting)."""

    student: str
    status: str
    score: float | None
    skipped: bool = False
    seconds: float = 0.0


OnDone = Callable[[Outcome], None]


class Executor(Protocol):
    """Where a batch's gradings run. Each implementation grades the students given to grade_all, each
    in a child process with the batch's time limit, and hands every finished grading to record() as it
    ends (so results files appear one by one and an interrupted batch keeps them)."""

    backend: str               # "gpu" or "emu": what the gradings run on
    workers: int               # gradings at once
    slots: tuple[str, ...]     # what each worker runs on, for the summary line

    def grade_all(self, ctx: BatchContext, todo: Sequence[Entry], on_done: OnDone | None) -> None: ...
