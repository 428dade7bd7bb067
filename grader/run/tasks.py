"""The unit of work the grading parent hands to a child process, and what comes back.

A Task says what to launch (which compiled module, at which size, with which seeds); its
TaskResult is plain JSON-ready data. Checks plan tasks and judge their results; the runner in
the child executes them; the sandbox carries them across the process boundary.
"""
from __future__ import annotations

import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping

# A runner child exits with this after reporting a launch that left the device unusable (a trap, an
# illegal address): the parent starts a fresh child for the tasks it did not reach.
EXIT_FATAL = 3
# How the message of a launch stopped at its budget ends (grader.run.child.launch_budget); the parent,
# which sees how much the child printed, may put a likelier cause in its place (a printf flood).
HANG_GUESS = ": it loops without end (an endless loop), or does far more work than it needs to"
# A task's modules as messages name them.
MODULE_NAMES = {"submission": "submission", "reference": "reference solution", "baseline": "library baseline"}


def timed_call_name(call: Any, calls: Any) -> str:
    """A call of a timing as messages name it (grader.run.child.timing numbers them; 0 is the untimed
    call before the timed ones)."""
    return "the untimed call before the timed calls" if call == 0 else f"timed call {call} of {calls}"


@dataclass(frozen=True)
class Task:
    """One job for the child.

    kind: "run" (launch once per seed and compare with the reference), "profile" (one launch,
    counters only), or "time" (CUDA-event timing of `module` and of its `rivals` in turns: the
    reference solution, "baseline" for the vendor library).
    """

    id: str
    kind: str
    backend: str
    module: str = "submission"
    sizes: Mapping[str, int] = field(default_factory=dict)
    seeds: tuple[int, ...] = (0,)
    compare: bool = True
    repeats: int = 20
    # A "time" task waits until the parent creates the file `after` (the GPU has no other work then)
    # and is skipped when a task in `requires` failed: timing a kernel that is wrong is wasted.
    after: str = ""
    requires: tuple[str, ...] = ()
    rivals: tuple[str, ...] = ()  # "time": the modules timed in turns with `module`, in one window

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["sizes"] = dict(self.sizes)
        data["seeds"] = list(self.seeds)
        data["requires"] = list(self.requires)
        data["rivals"] = list(self.rivals)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Task":
        return cls(**{**data, "seeds": tuple(data.get("seeds", (0,))), "sizes": dict(data.get("sizes", {})),
                      "requires": tuple(data.get("requires", ())), "rivals": tuple(data.get("rivals", ()))})


# The status of a task stopped by an exception in the exercise's own code (grader.run.tasks.HarnessFault).
GRADER_FAULT = "grader-fault"


@dataclass(frozen=True)
class HarnessFault:
    """An exception raised by code the course staff wrote (the exercise's harness.py: make_inputs,
    reference, magnitude, baseline; or anything it imports from the exercise folder). It is the
    grader's fault, never the student's: no check is scored on it.

    `where` names the staff's file and function (safe to show a student); `error` is the exception's
    own line and `detail` the whole traceback, both for staff only: an exercise's exception may quote
    its hidden inputs or its reference."""

    where: str
    error: str
    detail: str

    @property
    def reason(self) -> str:
        """What a student is told: where it failed, not what it said."""
        return f"the exercise's own code failed ({self.where}): the course staff need to fix the exercise"

    def to_json(self) -> dict[str, str]:
        return {"where": self.where, "error": self.error, "detail": self.detail}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "HarnessFault":
        return cls(str(data.get("where", "")), str(data.get("error", "")), str(data.get("detail", "")))


def harness_fault(exc: BaseException, exercise_root: Path | str) -> HarnessFault | None:
    """The HarnessFault an exception is, or None when it is not the exercise's doing.

    It is the exercise's when a frame of its traceback lies in the exercise folder (harness.py or a
    module beside it), or when the grader refused what the harness gave (a SpecError: an input of the
    wrong shape, a missing __constant__ array)."""
    from ..errors import SpecError

    root = Path(exercise_root).resolve()
    frames = traceback.extract_tb(exc.__traceback__)
    own = [f for f in frames if _inside(Path(f.filename), root)]
    if not own and not isinstance(exc, SpecError):
        return None
    last = own[-1] if own else None
    where = f"{Path(last.filename).name}, in {last.name}, line {last.lineno}" if last else "the exercise's harness.py"
    error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return HarnessFault(where, error, "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))


def _inside(path: Path, root: Path) -> bool:
    try:
        return path.resolve().is_relative_to(root)
    except (OSError, ValueError):
        return False


@dataclass(frozen=True)
class TaskResult:
    """What happened to a task: status "ok", "error" (a launch failed), "timeout", "crashed", "skipped",
    or "grader-fault" (the exercise's own code raised: `fault`)."""

    id: str
    status: str
    message: str = ""
    launches: tuple[Mapping[str, Any], ...] = ()
    data: Mapping[str, Any] = field(default_factory=dict)
    clock: Mapping[str, float] = field(default_factory=dict)  # the child's wall-clock times (runner.main)

    @property
    def succeeded(self) -> bool:
        """Every launch ran without error and, where compared, matched the reference."""
        return self.status == "ok" and all(not l.get("error") and (l.get("compare") or {}).get("ok", True)
                                           for l in self.launches)

    @property
    def fault(self) -> HarnessFault | None:
        """The exercise's exception that stopped this task, if that is what stopped it."""
        if self.status != GRADER_FAULT:
            return None
        return HarnessFault.from_json(self.data.get("fault", {}))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "TaskResult":
        return cls(id=data["id"], status=data["status"], message=data.get("message", ""),
                   launches=tuple(data.get("launches", ())), data=data.get("data", {}), clock=data.get("clock", {}))


def unmet_requirements(task: Task, done: Mapping[str, TaskResult]) -> list[str]:
    """The tasks in `task.requires` that have run and did not succeed (the task is then skipped)."""
    return [r for r in task.requires if r in done and not done[r].succeeded]


def skipped_for(task: Task, failed: list[str]) -> TaskResult:
    """The result of a task skipped because tasks it requires failed."""
    return TaskResult(task.id, "skipped", f"not run: {', '.join(failed)} failed first")


def faulted(task: Task, fault: HarnessFault) -> dict[str, Any]:
    """The result line (JSON-ready) of a task stopped by the exercise's own code."""
    return {"id": task.id, "status": GRADER_FAULT, "message": fault.reason, "data": {"fault": fault.to_json()}}
