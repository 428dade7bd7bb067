"""The parent side of running student code: tasks go to child runners, results come back as values.

A child that hangs is killed at the deadline; one that crashes (or leaves the device unusable)
is restarted for the tasks it did not reach, so one bad launch never hides the rest.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence

from . import gpu_worker
from .file_handoff import wait_for_file, write_atomically  # noqa: F401 (wait_for_file: the children's name for it)
from .sandbox import ChildRun, ResourceLimits, StartedChild, python_argv, run_child, start_child
from ...spec import Limits
from .stage_clock import StageClock
from ..tasks import EXIT_FATAL, HANG_GUESS, Task, TaskResult, skipped_for, unmet_requirements

MAX_RESTARTS = 6
STDERR_TAIL = 1500


@dataclass(frozen=True)
class StageRun:
    """Results of one batch of tasks, by task id, plus the child runs that produced them."""

    results: Mapping[str, TaskResult]
    children: tuple[ChildRun, ...] = ()
    log_files: tuple[Path, ...] = ()

    def log_text(self) -> str:
        """What the wrapping tool (ncu, a sanitizer) wrote to its log files, all children's together."""
        return "\n".join(p.read_text(errors="replace") for p in self.log_files if p.exists())


@dataclass(frozen=True)
class Prestarted:
    """A runner child started before its tasks exist (while the submission compiles): it imports,
    opens its device, then waits for its job file. TaskSupervisor.run(prestarted=...) hands it the job."""

    child: StartedChild
    stem: Path  # the child waits for stem.json; its tool log (if any) is stem.log
    spawned: float  # epoch seconds

    def cancel(self) -> None:
        """Kill it unused (the submission did not compile, or its stage was not needed)."""
        self.child.cancel()


@dataclass
class TaskSupervisor:
    """Runs task batches for one grading: where the compiled modules are and what limits apply."""

    exercise_root: Path
    workdir: Path
    modules: Mapping[str, Mapping[str, str]]  # backend -> module name -> artifact path
    limits: Limits
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    clock: StageClock = field(default_factory=StageClock)
    _ids: Iterator[int] = field(default_factory=itertools.count)  # next() is atomic: batches may run in threads

    def run(self, tasks: Sequence[Task], *, backend: str, wrapper: Sequence[str] = (), pool: bool = True,
            timeout: float | None = None, log_name: str | None = None, label: str | None = None,
            extra_env: Mapping[str, str] | None = None, prestarted: Prestarted | None = None,
            stop: StageStop | None = None,
            on_results: Callable[[Mapping[str, TaskResult]], None] | None = None) -> StageRun:
        """Execute tasks on a backend (optionally under a profiler/sanitizer wrapper, with `extra_env` over
        the runner's environment); the clock records it as `label` (default: the log name or "<backend> launches").
        A `prestarted` child (started by prestart() with the same backend, wrapper and environment) takes
        the first job instead of a fresh one. Setting `stop` kills the child and skips what is left: the
        stage's results are no longer needed (a profiler run for a kernel that failed correctness).
        `on_results` is called with each child's results as soon as that child ends, before the stage
        does (a stage of several children, after a restart, ends later)."""
        name = label or log_name or f"{backend} launches"
        env = {**self.env, **(extra_env or {})}
        with self.clock.measure(name):
            return self._run(tasks, backend=backend, wrapper=wrapper, pool=pool, timeout=timeout, log_name=log_name,
                             name=name, env=env, prestarted=prestarted, stop=stop, on_results=on_results)

    def prestart(self, backend: str, *, wrapper: Sequence[str] = (), pool: bool = True,
                 extra_env: Mapping[str, str] | None = None, wait: float = 60.0) -> Prestarted:
        """Start a runner child now, before its tasks are known; it gives up after `wait` seconds
        without a job (the parent went away)."""
        stem = self.workdir / f"job{next(self._ids)}"
        argv = runner_argv(wrapper, stem, "--prestart", backend, "pool" if pool else "no-pool",
                           str(self.exercise_root), f"{wait:.0f}")
        spawned = time.time()
        child = start_child(argv, limits=child_limits(self.limits, wait + self.limits.run_seconds, backend),
                            env={**self.env, **(extra_env or {})}, output_cap=self.limits.output_bytes, cwd=str(self.workdir))
        return Prestarted(child, stem, spawned)

    def _record(self, name: str, spawned: float, done: Mapping[str, TaskResult]) -> None:
        """Put one child's inside on the timeline: its start-up, then its tasks grouped by kind of id."""
        clocks = [r.clock for r in done.values() if r.clock]
        if not clocks:
            return
        self.clock.add_wall(f"{name}: start-up", spawned, min(c["ready"] for c in clocks))
        groups: dict[str, list[Mapping[str, float]]] = {}
        for task_id, r in done.items():
            if r.clock:
                groups.setdefault(task_id.split(":")[0], []).append(r.clock)
        for group, found in groups.items():
            waited = sum(c.get("waited", 0.0) for c in found)
            start = min(c["start"] for c in found)
            if waited:
                self.clock.add_wall(f"{name}: waiting for the GPU", start, start + waited)
            self.clock.add_wall(f"{name}: {group}", start + waited, max(c["end"] for c in found))

    def _run(self, tasks: Sequence[Task], *, backend: str, wrapper: Sequence[str], pool: bool,
             timeout: float | None, log_name: str | None, name: str, env: Mapping[str, str],
             prestarted: Prestarted | None, stop: StageStop | None = None,
             on_results: Callable[[Mapping[str, TaskResult]], None] | None = None) -> StageRun:
        budget = timeout or self.limits.run_seconds
        deadline = time.monotonic() + budget
        results: dict[str, TaskResult] = {}
        children: list[ChildRun] = []
        logs: list[Path] = []
        remaining = list(tasks)
        restarts = 0
        # Plain GPU launches in a batch go to the slot's warm worker (grader.run.parent.gpu_worker).
        worker = env.get(gpu_worker.VARIABLE) if not wrapper and not prestarted else None
        hung: list[Task] = []  # tasks whose launch the child stopped at its time limit
        while remaining:
            for t in remaining:  # the child skips these too; after a restart only the parent knows why
                failed = unmet_requirements(t, results)
                if failed:
                    results[t.id] = skipped_for(t, failed)
                    continue
                below = next((h for h in hung if at_least(t, h)), None)
                if below is not None:
                    results[t.id] = TaskResult(t.id, "timeout", _larger_than_hung(t, below, results[below.id]))
            remaining = [t for t in remaining if t.id not in results]
            if not remaining:
                break
            stem = prestarted.stem if prestarted else self.workdir / f"job{next(self._ids)}"
            results_path = stem.with_suffix(".jsonl")
            job = {
                "exercise": str(self.exercise_root), "backend": backend, "modules": dict(self.modules.get(backend, {})),
                "results": str(results_path), "tasks": [t.to_json() for t in remaining], "pool": pool,
                "step_limit": self.limits.step_limit,
                # Per-launch limits from the reference's cost (grader.run.child.launch_budget), except under a wrapper:
                # ncu would profile the reference's launches, a sanitizer slows them unlike the plain run.
                "budget": not wrapper,
            }
            if log_name:
                logs.append(stem.with_suffix(".log"))
            left = deadline - time.monotonic()
            if left < 1.0:  # a restart after the deadline would stretch the time limit: skip what is left
                if prestarted:
                    prestarted.cancel()
                for t in remaining:
                    results[t.id] = TaskResult(t.id, "skipped", f"not run: the {budget:.0f} s time limit was used up by earlier launches")
                break
            write_atomically(stem.with_suffix(".json"), json.dumps(job))
            warm = None
            if worker and not children:
                # The slot's warm worker takes the first try (a restart, after a crash or a broken
                # context, runs in an ordinary child): its CUDA context is already made.
                spawned = time.time()
                warm = gpu_worker.run_job(worker, stem.with_suffix(".json"), backend=backend, timeout=left,
                                          output_cap=self.limits.output_bytes, stop=stop)
            if warm is not None:
                child = warm
            elif prestarted:  # already running, waiting for this job: the time limit starts now
                spawned, child, prestarted = prestarted.spawned, prestarted.child.finish(left, stop), None
            else:
                argv = runner_argv(wrapper, stem)
                spawned = time.time()
                child = run_child(argv, timeout=left, limits=child_limits(self.limits, left, backend), env=dict(env),
                                  output_cap=self.limits.output_bytes, cwd=str(self.workdir), stop=stop)
            children.append(child)
            done = read_results(results_path)
            if backend == "gpu":
                done = _printing_explained(done, child)
            self._record(name, spawned, done)
            results.update(done)
            if on_results is not None and done:
                on_results(done)
            remaining = [t for t in remaining if t.id not in done]
            if not remaining:
                break
            if stop is not None and stop.is_set():
                for t in remaining:
                    results[t.id] = TaskResult(t.id, "skipped", stop.reason or "not run: no longer needed")
                break
            stopped = next((t for t in tasks if t.id in done and done[t.id].status == "timeout"), None)
            if stopped is not None:
                # The child stopped a kernel at its launch's limit and exited. That size and every larger
                # one fail as not finishing; the smaller ones run in a fresh child. So the verdict is
                # the same whichever size came first (the tasks' order, what ran before the stop).
                hung.append(stopped)
                continue
            current, rest = remaining[0], remaining[1:]
            if child.timed_out:
                results[current.id] = TaskResult(current.id, "timeout", _timeout_text(budget, child))
                for t in rest:
                    results[t.id] = TaskResult(t.id, "skipped", f"not run: an earlier launch ({_sizes(current)}) hung")
                break
            if child.returncode == 0:  # the child thinks it finished but lost results: a grader bug
                for t in remaining:
                    results[t.id] = TaskResult(t.id, "crashed", "the runner finished without reporting this task")
                break
            if child.returncode == EXIT_FATAL and done:
                # The child reported the launch that broke its CUDA context and stopped on purpose:
                # start a fresh one for the rest. (What it printed while exiting is not the next task's.)
                continue
            if not done:
                restarts += 1
            results[current.id] = TaskResult(current.id, "crashed", f"the process running your kernel {child.describe()}: {_tail(child.stderr)}")
            remaining = rest
            if restarts >= MAX_RESTARTS:
                for t in remaining:
                    results[t.id] = TaskResult(t.id, "crashed", "not run: the runner kept crashing")
                break
        if prestarted:  # nothing was left for it to run
            prestarted.cancel()
        return StageRun(results, tuple(children), tuple(logs))


# The grading's deadline once its plain launches are done (grading_deadline): every child still
# running then (the profiler under ncu, the hidden tests) must be done within a grace period for
# start-up and an ordinary kernel, plus a multiple of what the submission's own launches took.
GRADING_GRACE_S = 30.0
GRADING_SLACK = 4


def grading_deadline(stage: StageRun, now: float) -> float:
    """The time.monotonic() by which the rest of a grading must end, from its plain launches' stage
    (GRADING_GRACE_S + GRADING_SLACK times the seconds its submission launches took)."""
    took = sum(float(l.get("seconds") or 0.0) for r in stage.results.values() for l in r.launches if isinstance(l, Mapping))
    return now + GRADING_GRACE_S + GRADING_SLACK * took


class StageStop(threading.Event):
    """Set when a stage's result is no longer needed (its child is killed); `reason`, where given, is
    what the stage's tasks that never ran are told."""

    def __init__(self) -> None:
        super().__init__()
        self.reason = ""


def deadline_stop(stop: StageStop, seconds: float) -> None:
    """Set `stop` for passing the grading's deadline, with the words the stage's skipped tasks get."""
    after = f" ({seconds:.0f} s after the submission's launches ended)" if seconds > 0 else ""
    stop.reason = (f"not run: the grading's deadline passed{after}; a kernel far slower under the "
                   "profiler, or one that prints from every thread?")
    stop.set()


def at_least(task: Task, hung: Task) -> bool:
    """Whether `task` launches the same module as `hung` at sizes each at least as large (so it would not
    finish either: it is failed without being run)."""
    if task.module != hung.module or task.sizes.keys() != hung.sizes.keys() or task.backend != hung.backend:
        return False
    return all(int(task.sizes[k]) >= int(v) for k, v in hung.sizes.items())


def _larger_than_hung(task: Task, hung: Task, result: TaskResult) -> str:
    """Why a task at sizes at least as large as a hung one's was not run."""
    why = result.message or "it did not finish within its time limit"
    if dict(task.sizes) == dict(hung.sizes):
        return why
    return f"not run at this size: at the smaller size {_sizes(hung)}, {why.removeprefix('the kernel ')}"


def child_limits(limits: Limits, seconds: float, backend: str = "emu") -> ResourceLimits:
    """The rlimits of a child that runs for at most `seconds` of wall-clock time.

    CUDA reserves a huge virtual address range, so the address-space cap applies only to children
    without a GPU context (the emulator, the compiler). The CPU-time cap stops a child the wall
    clock cannot (one that outlives a killed parent).
    """
    return ResourceLimits(
        cpu_seconds=int(seconds * limits.cpu_factor) + 10,
        address_space_bytes=limits.memory_bytes if backend != "gpu" else None,
        file_size_bytes=limits.file_size_bytes,
        open_files=limits.open_files,
    )


def read_results(path: Path) -> dict[str, TaskResult]:
    """The results a runner child wrote to `path`, by task id (a torn last line is left out)."""
    out: dict[str, TaskResult] = {}
    if not path.exists():
        return out
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            result = TaskResult.from_json(json.loads(line))
        except (ValueError, KeyError, TypeError):
            continue  # a torn last line from a killed child
        out[result.id] = result
    return out


PRINT_FLOOD_BYTES = 1 << 20


def _timeout_text(budget: float, child: ChildRun) -> str:
    """Why a launch did not finish. A kernel that printed megabytes was most likely slowed by its
    printf: on a GPU the driver writes out every line of every thread (measured on an H200: one
    launch of 1,000 x 1,000 threads printing a line each ran past 30 s, whatever the printf buffer
    size; bench/printf_fifo.py)."""
    if child.stdout_bytes > PRINT_FLOOD_BYTES:
        return f"did not finish within the {budget:.0f} s time limit{_printing(child)}"
    return f"did not finish within the {budget:.0f} s time limit (the kernel hangs?)"


def _printing(child: ChildRun) -> str:
    return (f" while printing {child.stdout_bytes / 1e6:,.1f} MB: printf from every thread is slow on a GPU, where "
            "each line is written out; remove the printf calls")


def _printing_explained(done: Mapping[str, TaskResult], child: ChildRun) -> dict[str, TaskResult]:
    """The child's results, where it stopped a launch at its time budget (grader.run.child.launch_budget)
    after printing megabytes, worded as _timeout_text words a flood: the printing is the likelier
    cause than the hang the child guessed."""
    if child.stdout_bytes <= PRINT_FLOOD_BYTES:
        return dict(done)

    def reworded(text: str) -> str:
        return text[: -len(HANG_GUESS)] + _printing(child) if text.endswith(HANG_GUESS) else text

    return {task_id: result if result.status != "timeout" else dataclasses.replace(
                result, message=reworded(result.message),
                launches=tuple({**l, "error": reworded(l["error"])} if isinstance(l.get("error"), str) else l
                               for l in result.launches))
            for task_id, result in done.items()}


def runner_argv(wrapper: Sequence[str], stem: Path, *extra: str) -> list[str]:
    """The runner child's command for job stem.json, under `wrapper` (its {log} becomes stem.log)."""
    return [a.replace("{log}", str(stem.with_suffix(".log"))) for a in wrapper] + \
        python_argv("grader.run.child.runner", str(stem.with_suffix(".json")), *extra)


def _sizes(task: Task) -> str:
    return ", ".join(f"{k} = {v}" for k, v in task.sizes.items())


def _tail(text: str) -> str:
    text = text.strip()
    return ("..." + text[-STDERR_TAIL:]) if len(text) > STDERR_TAIL else (text or "no error output")
