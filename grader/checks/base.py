"""What every check shares: the grading context, the Check interface, and message helpers.

A check plans tasks (launches to run in the child), then judges their results into
TestResults. The pipeline runs all planned tasks of a backend in one child batch, so a
submission pays for process start-up once, not once per check.
"""
from __future__ import annotations

import hashlib
import time
from concurrent.futures import Executor, Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence

from ..exercise import Exercise
from ..results import NotRun, TestResult
from ..spec import CheckSpec, Spec
from ..run.parent.supervisor import StageStop, TaskSupervisor, deadline_stop
from ..run.tasks import HarnessFault, Task, TaskResult
from ..tools import Tools


@dataclass
class CorrectnessSummary:
    """How the submission did on correctness: other checks are gated on it."""

    passed_cases: int
    total_cases: int
    racy: bool = False  # a race is proven: no size's result can be trusted to repeat

    @property
    def all_passed(self) -> bool:
        return self.total_cases > 0 and self.passed_cases == self.total_cases and not self.racy

    @property
    def any_passed(self) -> bool:
        return self.passed_cases > 0


@dataclass
class Context:
    """Everything a check may read while grading one submission."""

    exercise: Exercise
    backend: str
    runner: TaskSupervisor
    seed: int
    tools: Tools
    source_name: str
    source: str
    has_reference: bool
    emu_available: bool
    place: Callable[[int], str] | None = None  # line -> "file:line" or "notebook cell C, line L" (grader.notebook)
    # The base seed every grading of the exercise shares (grader.grading.seed.class_seed); None: a
    # context built without one (tests), whose class is its own seed.
    class_seed: int | None = None
    planned: dict[str, Task] = field(default_factory=dict)
    results: dict[str, TaskResult] = field(default_factory=dict)
    correctness: CorrectnessSummary | None = None
    not_run: list[NotRun] = field(default_factory=list)
    pool: Executor | None = None  # runs tool stages (sanitizers, ncu) beside the plain launches
    background: dict[str, Future] = field(default_factory=dict)
    prestarted: dict[str, Any] = field(default_factory=dict)  # stage -> child started while compiling
    deadline: float | None = None  # time.monotonic() by which the whole grading should be done
    launches_done: float | None = None  # time.monotonic() when the plain launches ended (grading_deadline)
    stops: dict[str, StageStop] = field(default_factory=dict)  # stage -> set when its result is not needed
    # grader.checks.evidence.gather's answer, with how many results it was computed from
    evidence: tuple[int, Any] | None = field(default=None, repr=False)

    def time_left(self, floor: float = 10.0) -> float:
        """Seconds a stage started now may run: the run limit, or less when the grading's deadline is
        nearer (a sanitizer started after the launches), but never under `floor`."""
        limit = self.spec.limits.run_seconds
        return limit if self.deadline is None else max(floor, min(limit, self.deadline - time.monotonic()))

    def take_prestart(self, key: str) -> Any:
        """The child started early for stage `key` (grader.prestart), or None; each is used once."""
        return self.prestarted.pop(key, None)

    def start(self, key: str, fn: Callable[..., Any], *args: Any) -> None:
        """Start a stage that needs no other result (a sanitizer, a profiler run) in the background."""
        self.background[key] = self.pool.submit(fn, *args) if self.pool else _done(fn(*args))

    def stop_event(self, key: str) -> StageStop:
        """The event a background stage's child watches: set, the child is killed (abandon())."""
        return self.stops.setdefault(key, StageStop())

    def abandon(self, key: str) -> None:
        """Stop a background stage whose result no check will read (ncu for a kernel that failed
        correctness: a kernel that hangs would otherwise hold it to the run limit)."""
        self.stop_event(key).set()

    def finish(self, key: str) -> Any:
        """The result of a stage started with start() (waiting for it; several checks may share one). A
        stage still running at the grading's deadline is stopped (its child killed), and what it did
        not run is reported as not run for that reason."""
        future = self.background[key]
        if self.deadline is not None and not future.done():
            try:
                return future.result(timeout=max(0.0, self.deadline - time.monotonic()))
            except FutureTimeout:
                deadline_stop(self.stop_event(key), self.deadline - (self.launches_done or self.deadline))
        return future.result()

    @property
    def spec(self) -> Spec:
        return self.exercise.spec

    def seed_for(self, label: str) -> int:
        """A seed derived from the run's base seed and a label: fresh per launch, reproducible with --seed."""
        return int.from_bytes(hashlib.sha256(f"{self.seed}:{label}".encode()).digest()[:4], "little")

    def class_seed_for(self, label: str) -> int:
        """A seed derived from the class's base seed and a label: the same for every student of the
        exercise (the counter checks' profile launches: the reference is measured on the same inputs
        whoever is graded, so a batch measures it once), and seed_for()'s value under a fixed --seed."""
        base = self.seed if self.class_seed is None else self.class_seed
        return int.from_bytes(hashlib.sha256(f"{base}:{label}".encode()).digest()[:4], "little")

    def quote(self, line: int | None) -> str:
        """`file:line` plus the source text of that line, for messages that point at student code."""
        if not line:
            return self.source_name
        lines = self.source.splitlines()
        text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
        head = self.place(line) if self.place else f"{self.source_name}:{line}"
        return head + (f" `{text[:100]}`" if text else "")


class Check(Protocol):
    """One graded category. plan() names the launches it needs; judge() turns results into verdicts."""

    category: str

    def plan(self, ctx: Context, conf: CheckSpec) -> Sequence[Task]: ...

    def judge(self, ctx: Context, conf: CheckSpec) -> Sequence[TestResult]: ...


def sizes_text(sizes: Mapping[str, int]) -> str:
    """N = 33, or rows = 70, cols = 45."""
    return ", ".join(f"{k} = {v}" for k, v in sizes.items())


def verdict(name: str, conf: CheckSpec, passed: bool, output: str, *, score: float | None = None,
            extra: Mapping[str, Any] | None = None) -> TestResult:
    """A TestResult with the check's points: full when passed unless a partial score is given."""
    if score is None:
        score = conf.points if passed else 0.0
    return TestResult(name=name, category=conf.category, score=max(0.0, min(score, conf.points)), max_score=conf.points,
                      passed=passed, output=output, visibility=conf.visibility, extra=dict(extra or {}))


def not_run(ctx: Context, name: str, conf: CheckSpec, reason: str, *, grader_fault: bool = False, detail: str = "") -> None:
    """List the check as not run here, with its points and the exercise's policy for them.

    `grader_fault`: a tool of the grader's own is missing or broken (pytest, ncu, ...), or the
    exercise's own code raised: the reason says so, the points never count against the student, and
    `grade` exits 1. `detail`: the traceback, for staff only (results.NotRun)."""
    ctx.not_run.append(NotRun(name, conf.category, reason, conf.points, conf.if_not_run, grader_fault, detail))


def harness_fault(ctx: Context) -> "HarnessFault | None":
    """The first exception of the exercise's own code among this grading's launches, or None.

    Every check judges those launches (correctness gates the rest), so one such fault leaves the
    whole grading ungraded (grader.api)."""
    for result in ctx.results.values():
        if result.fault is not None:
            return result.fault
    return None


def gate(ctx: Context, name: str, conf: CheckSpec, *, need_all: bool) -> TestResult | None:
    """A failed TestResult when correctness does not allow this check to be graded, else None.

    A kernel that never produces a right answer would otherwise collect race and memory-safety
    points for doing nothing; speed and traffic only mean something for a correct kernel.
    """
    summary = ctx.correctness
    if summary is None:
        return None
    if need_all and summary.racy:
        return verdict(name, conf, False, "Not graded: the kernel has a race (see Races and barriers); fix it first.",
                       extra={"gated": True})
    if need_all and not summary.all_passed:
        return verdict(name, conf, False, f"Not graded: the kernel must pass every correctness size first "
                                          f"({summary.passed_cases} of {summary.total_cases} passed).", extra={"gated": True})
    if not need_all and not summary.any_passed:
        return verdict(name, conf, False, "Not graded: the kernel did not produce a correct result at any size yet.",
                       extra={"gated": True})
    return None


def emu_launches(ctx: Context, ids: Iterable[str]) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """(task sizes, launch record) for every emulated launch among the given task ids."""
    found = []
    for task_id in ids:
        result, task = ctx.results.get(task_id), ctx.planned.get(task_id)
        if result is None or task is None:
            continue
        found.extend((task.sizes, launch) for launch in result.launches if "emu" in launch)
    return found


def failed_task_text(result: TaskResult | None, sizes: Mapping[str, int]) -> str | None:
    """A message when a task did not produce launches at all (timeout, crash, skip)."""
    if result is None:
        return f"{sizes_text(sizes)}: no result (the grader lost this task)"
    if result.status in ("timeout", "crashed", "skipped"):
        return f"{sizes_text(sizes)}: {result.message}"
    return None


def unfinished_task_text(result: TaskResult | None, sizes: Mapping[str, int]) -> str | None:
    """A message when a task's launches never completed: it timed out (the kernel did not finish), or
    was skipped (an earlier launch in its child hung, or it was no longer needed). A check cannot judge
    what did not run; it says so rather than report what it would have found. None otherwise
    (a crash or a lost task is failed_task_text's)."""
    if result is not None and result.status in ("timeout", "skipped"):
        return f"{sizes_text(sizes)}: {result.message}"
    return None


def not_graded(name: str, conf: CheckSpec, unfinished: str, judged: str, extra: Mapping[str, Any] | None = None) -> TestResult:
    """The gated failure of a check whose own launch never completed (unfinished_task_text)."""
    return verdict(name, conf, False, f"Not graded: the launch this check needs did not complete ({unfinished}); "
                                      f"{judged} can only be judged on launches that complete.",
                   extra={**(extra or {}), "gated": True})


def _done(value: Any) -> Future:
    future: Future = Future()
    future.set_result(value)
    return future
