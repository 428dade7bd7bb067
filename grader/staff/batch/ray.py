"""The Ray executor of `grade batch --ray [ADDRESS]`: each submission is graded as one Ray task.

The driver (the machine that runs `grade batch`) keeps everything it keeps for a local batch: it
reads the submissions, skips those already graded, and writes every results file and the gradebook
itself (grader.staff.batch.record.record), as each task's result comes back. A task gets the exercise (packed
once into Ray's object store) and the submission's bytes, so the nodes need no shared file system;
it grades the way a local batch does, in a child process under the batch's time limit
(grader.run.parent.isolated.grade_in_child), never in the Ray worker's own interpreter.

Failures are verdicts, as on one machine:
  - a submission that hangs is stopped by the task's child limit and gets the timeout verdict;
  - a task that does not come back by that limit plus GRACE_S (a stuck worker, an overloaded node)
    is cancelled (ray.cancel(force=True)) and gets the same timeout verdict;
  - a task whose worker or node dies is retried once on any node, then reported as a grader error
    (not a verdict on the submission; the next run of the same command grades it again).

Ray is an optional extra (`pip install 'kernel-grader[ray]'`), imported only here (the batch imports
this module only when --ray asks for it: grader.staff.batch.run.ray_executor).
"""
from __future__ import annotations

import io
import os
import socket
import tempfile
import time
import uuid
import zipfile
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import ray
from ray.exceptions import NodeDiedError, ObjectLostError, OutOfMemoryError, RayError, WorkerCrashedError

from ... import __version__
from ...errors import UsageError
from ...exercise import Exercise
from ...exercise import load as load_exercise
from ...run.parent import math_threads
from ...run.parent.isolated import Graded, grade_in_child
from ...run.parent.tags import kill_tagged
from ...ungraded import ungraded_document
from .executor import BatchContext, OnDone
from .intake import Entry
from .record import record, unsubmitted

GRACE_S = 60.0    # a task's limit beyond the grading's own: a worker's start-up, fetching and unpacking the exercise
RETRIES = 1       # further attempts for a task whose worker or node died
POLL_S = 0.5
# The infrastructure failed, not the grading (Ray's memory monitor kills a worker when its node runs short).
_LOST = (WorkerCrashedError, NodeDiedError, ObjectLostError, OutOfMemoryError)
_DEVICES = {"gpu": "GPU", "emu": "CPU emulator"}
_INFLIGHT = "kernel-grader-ray"  # per node, under the temp folder: unpacked exercises, and the gradings in progress


@dataclass(frozen=True)
class TaskInput:
    """What one task needs to grade one submission, none of it a path on the driver's disk."""

    exercise: Any         # an ObjectRef to pack_exercise()'s bytes, resolved by Ray before the task runs
    exercise_id: str
    key: str              # grader.staff.batch.record.exercise_key: names the unpacked copy on each node
    name: str             # the submission's file name, as its results show it
    source: bytes
    backend: str
    timeout: float
    seed: int | None
    tag: str              # marks the grading's processes on the node (grader.run.parent.isolated.TAG_VARIABLE)


@dataclass
class _Flight:
    entry: Entry
    attempt: int
    deadline: float


class RayExecutor:
    """Gradings as Ray tasks, at most `workers` at once (the cluster's capacity unless fewer are asked for)."""

    def __init__(self, backend: str, workers: int, *, num_gpus: float, num_cpus: float, grace: float = GRACE_S,
                 task: Callable[[TaskInput], Mapping[str, Any]] | None = None) -> None:
        self.backend = backend
        self.workers = max(1, workers)
        self.slots = (f"ray:{num_gpus:g} GPU" if num_gpus else f"ray:{num_cpus:g} CPU",) * self.workers
        self.grace = grace
        self._resources = {"num_gpus": num_gpus, "num_cpus": num_cpus}
        self._task = task or grade_task

    @classmethod
    def connect(cls, address: str | None, *, backend: str = "auto", per_gpu: int = 4, workers: int | None = None,
                gpus_per_task: float | None = None, grace: float = GRACE_S,
                task: Callable[[TaskInput], Mapping[str, Any]] | None = None) -> RayExecutor:
        """Join the Ray cluster at `address` (None: RAY_ADDRESS, a cluster started on this machine, or a new
        local one; see ray.init) and size the tasks: on GPUs, 1/per_gpu of a GPU each (Ray sets each task's
        CUDA_VISIBLE_DEVICES); on the emulator, one CPU each. backend "auto" means the GPU if the cluster has one.
        gpus_per_task overrides the GPU share (a test gives emulator tasks logical GPUs)."""
        if backend not in ("auto", "gpu", "emu"):
            raise UsageError(f"unknown backend {backend!r}; choose one of auto, gpu, emu")
        if per_gpu < 1:
            raise UsageError("--per-gpu must be at least 1")
        if not ray.is_initialized():
            try:
                ray.init(address=address, log_to_driver=False, logging_level="WARNING")
            except (ConnectionError, ValueError, RuntimeError) as exc:
                raise UsageError(f"--ray: cannot reach a Ray cluster at {address or 'the default address'}: {exc}") from None
        total = ray.cluster_resources()
        gpus, cpus = float(total.get("GPU", 0)), float(total.get("CPU", 0))
        if backend == "auto":
            backend = "gpu" if gpus else "emu"
        if backend == "gpu" and not gpus:
            raise UsageError("--backend gpu: the Ray cluster has no GPUs (start its nodes with --num-gpus, or grade with --backend emu)")
        share = gpus_per_task if gpus_per_task is not None else (1.0 / per_gpu if backend == "gpu" else 0.0)
        if share < 0 or share > 1 and share != int(share):
            raise UsageError(f"a task's GPU share must be a fraction of one GPU or a whole number, not {share:g}")
        num_cpus = 1.0
        capacity = int(cpus // num_cpus) if cpus else 1
        if share:
            capacity = min(capacity, int(gpus / share + 1e-9))
        if workers is not None and workers < 1:
            raise UsageError("--workers must be at least 1")
        return cls(backend, min(workers or capacity, max(capacity, 1)), num_gpus=share, num_cpus=num_cpus, grace=grace, task=task)

    def grade_all(self, ctx: BatchContext, todo: Sequence[Entry], on_done: OnDone | None) -> None:
        """Submit up to `workers` tasks at a time; record each result as it comes back, in the order they finish."""
        remote = ray.remote(self._task).options(max_retries=0, **self._resources)  # retries are ours: see _finish
        packed = ray.put(pack_exercise(ctx.exercise))
        waiting = list(reversed(todo))
        flights: dict[Any, _Flight] = {}

        def done(outcome) -> None:
            if on_done:
                on_done(outcome)

        def submit(entry: Entry, attempt: int) -> None:
            assert entry.source is not None
            item = TaskInput(packed, ctx.exercise.id, ctx.key, entry.source.name, entry.source.read_bytes(), ctx.backend,
                             ctx.timeout, ctx.seed, f"{ctx.tag_root}:{entry.student}:{uuid.uuid4().hex[:8]}")
            # Counted from now: the window never holds more tasks than the cluster can run at once.
            flights[remote.remote(item)] = _Flight(entry, attempt, time.monotonic() + ctx.timeout + self.grace)

        try:
            while waiting or flights:
                while waiting and len(flights) < self.workers:
                    entry = waiting.pop()
                    if entry.source is None:
                        done(record(ctx, entry, unsubmitted(ctx, entry)))
                    else:
                        submit(entry, 0)
                if not flights:
                    continue
                ready, _ = ray.wait(list(flights), num_returns=1, timeout=POLL_S)
                for ref in ready:
                    flight = flights.pop(ref)
                    outcome = self._finish(ctx, ref, flight, submit)
                    if outcome is not None:
                        done(outcome)
                now = time.monotonic()
                for ref, flight in list(flights.items()):
                    if now > flight.deadline:
                        ray.cancel(ref, force=True)
                        del flights[ref]
                        done(record(ctx, flight.entry, self._timed_out(ctx, flight.entry), {"device": "", "node": ""}))
        except BaseException:
            for ref in flights:  # stays ungraded: the next run of the same command grades it
                ray.cancel(ref, force=True)
            raise

    def _finish(self, ctx: BatchContext, ref: Any, flight: _Flight, submit: Callable[[Entry, int], None]):
        entry = flight.entry
        try:
            answer = ray.get(ref, timeout=60)
        except _LOST as exc:
            if flight.attempt < RETRIES:
                submit(entry, flight.attempt + 1)
                return None
            why = f"the Ray worker or node grading it was lost {flight.attempt + 1} times ({type(exc).__name__})"
            return record(ctx, entry, _grader_error(ctx, entry, why), {"device": "", "node": ""})
        except RayError as exc:  # the task itself raised (a grader bug, an unreadable exercise), or Ray did
            why = f"the Ray task failed: {str(exc).strip().splitlines()[-1][:300] if str(exc).strip() else type(exc).__name__}"
            return record(ctx, entry, _grader_error(ctx, entry, why), {"device": "", "node": ""})
        if answer.get("grader_version") != __version__:
            why = (f"the Ray node runs kernel-grader {answer.get('grader_version')!r} and this machine {__version__!r}; "
                   "install the same version on every node")
            return record(ctx, entry, _grader_error(ctx, entry, why), {"device": "", "node": str(answer.get("node", ""))})
        graded = Graded(answer["status"], answer["document"], float(answer["seconds"]))
        return record(ctx, entry, graded, {"device": str(answer.get("device", "")), "node": str(answer.get("node", ""))})

    def _timed_out(self, ctx: BatchContext, entry: Entry) -> Graded:
        limit = ctx.timeout + self.grace
        reason = (f"Grading {entry.source.name if entry.source else entry.origin} did not finish within the "
                  f"{limit:.0f} s limit for one submission on the cluster, so it was stopped and scored 0. A kernel that "
                  "never ends (an endless loop, a barrier some threads never reach) does this; fix it and resubmit.")
        return Graded("timeout", ungraded_document(ctx.exercise, reason, backend=ctx.backend,
                                                   device=_DEVICES.get(ctx.backend, ctx.backend),
                                                   submission=entry.source.name if entry.source else entry.origin,
                                                   seconds=limit), limit)


def _grader_error(ctx: BatchContext, entry: Entry, why: str) -> Graded:
    name = entry.source.name if entry.source else entry.origin
    reason = (f"The grader failed on {name} ({why}); this is not a verdict on the submission. Course staff: "
              "re-run the same command, and report it if it repeats.")
    return Graded("grader-error", ungraded_document(ctx.exercise, reason, backend=ctx.backend,
                                                    device=_DEVICES.get(ctx.backend, ctx.backend), submission=name), 0.0)


def pack_exercise(exercise: Exercise) -> bytes:
    """The exercise folder and its reference solution as a zip, laid out as on disk
    (exercises/<id>/..., reference/<id>/solution.cu) so grader.exercise.load finds both."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(exercise.root.rglob("*")):
            parts = path.relative_to(exercise.root).parts
            if path.is_file() and not any(p == "__pycache__" or p.startswith(".") for p in parts):
                zf.write(path, "/".join(("exercises", exercise.id, *parts)))
        if exercise.solution_path.is_file():
            zf.write(exercise.solution_path, f"reference/{exercise.id}/solution.cu")
    return buf.getvalue()


def grade_task(item: TaskInput) -> dict[str, Any]:
    """In a Ray worker: grade one submission in a child process (grader.run.parent.isolated.grade_in_child) and
    return its verdict as plain data. Ray has set CUDA_VISIBLE_DEVICES to this task's GPU; the child
    inherits it."""
    base = Path(tempfile.gettempdir()) / _INFLIGHT
    _reap_orphans(base / "inflight")
    root = _unpacked(base, item)
    exercise = load_exercise(root / "exercises" / item.exercise_id)
    work = Path(tempfile.mkdtemp(prefix="kg-ray-"))
    marker = base / "inflight" / f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        source = work / Path(item.name).name
        source.write_bytes(item.source)
        cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 1.0)
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(item.tag)
        graded = grade_in_child(exercise, source, backend=item.backend, timeout=item.timeout, seed=item.seed,
                                env=math_threads.limits(int(cpus)), scratch=work, tag=item.tag)
    finally:
        marker.unlink(missing_ok=True)
        _remove(work)
    return {"status": graded.status, "document": graded.document, "seconds": graded.seconds,
            "device": os.environ.get("CUDA_VISIBLE_DEVICES", ""), "gpu_ids": [str(g) for g in ray.get_gpu_ids()],
            "node": socket.gethostname(), "grader_version": __version__}


def _unpacked(base: Path, item: TaskInput) -> Path:
    """This node's copy of the exercise, unpacked once per exercise key (tasks side by side share it)."""
    root = base / item.key[:24]
    if not (root / "exercises" / item.exercise_id).is_dir():
        base.mkdir(parents=True, exist_ok=True)
        part = Path(tempfile.mkdtemp(prefix=".unpack-", dir=base))
        data = item.exercise if isinstance(item.exercise, bytes) else ray.get(item.exercise)
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            zf.extractall(part)  # our own archive, made by pack_exercise
        try:
            os.rename(part, root)
        except OSError:  # another task on this node unpacked it first
            _remove(part)
    return root


def _reap_orphans(inflight: Path) -> None:
    """Kill what a cancelled (force-killed) task on this node left running: the grading child lives in its
    own session, so the worker's death does not take it along. A marker whose worker is gone names it."""
    if not inflight.is_dir():
        return
    for marker in inflight.iterdir():
        pid = marker.name.split("-")[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            try:
                tag = marker.read_text()
            except OSError:
                continue
            if tag:
                kill_tagged(tag)
            marker.unlink(missing_ok=True)


def _remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)

