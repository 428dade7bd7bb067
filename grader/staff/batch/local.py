"""The local executor: gradings in child processes on this machine, one slot (an environment) per
grading at once, planned by grader.staff.batch.plan.

Each slot keeps its gradings' start-up warm: a fork server (grader.run.parent.fork_server) forks
their Python children, and on a GPU two workers (grader.run.parent.gpu_worker) keep a CUDA context
for its launches and hidden tests. On a GPU the slots of one kind of GPU share a profiler
(grader.run.parent.profile_broker) that runs ncu for groups of gradings.
"""
from __future__ import annotations

import os
import queue
import sys
import threading
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Mapping, Sequence

from ... import api
from ...checks.counters import ncu_metrics
from ...errors import UsageError
from ...kinds.registry import kind_of
from ...run.parent.device_probe import PRESET_VARIABLE, probe_device
from ...run.parent.fork_server import VARIABLE as FORK_SERVER_VARIABLE
from ...run.parent.fork_server import ForkServer
from ...run.parent.gpu_worker import TESTS_VARIABLE as GPU_TEST_WORKER_VARIABLE
from ...run.parent.gpu_worker import VARIABLE as GPU_WORKER_VARIABLE
from ...run.parent.gpu_worker import GpuWorker
from ...run.parent.isolated import Graded, grade_in_child
from ...run.parent.profile_broker import DEFAULT_LINGER_S, Brokers, start_brokers
from ...run.parent.tags import TAG_VARIABLE, kill_tagged
from ...tools import find_tools
from .executor import BatchContext, OnDone, Outcome
from .intake import Entry
from .plan import Options, plan_slots, visible_gpus
from .record import record, unsubmitted, write_diagnostic

PROFILER_LANES_VARIABLE = "KERNEL_GRADER_PROFILER_LANES"  # ncu children in flight per kind of GPU (a diagnostic)
PROFILER_LINGER_VARIABLE = "KERNEL_GRADER_PROFILER_LINGER"  # seconds a request waits for company (a diagnostic)
PROFILER_LOG_VARIABLE = "KERNEL_GRADER_PROFILER_LOG"  # a file for the profilers' ncu runs, as JSON (a diagnostic)
SERVER_DEATH_GRACE_S = 1.0  # how long a failed grading waits to see whether its slot's server died with it


def local_executor(options: Options) -> "LocalExecutor":
    """This machine's cores or GPUs: the default executor."""
    backend, _, _ = api.resolve_backend(options.backend)
    gpus = visible_gpus() if backend == "gpu" else []
    slots = plan_slots(backend, options.workers, options.per_gpu, gpus)
    if backend == "gpu":
        # Probe each GPU once here; every child then reads the answer instead of probing again.
        infos = {g: probe_device({"CUDA_VISIBLE_DEVICES": g}) for g in gpus}
        for slot in slots:
            info = infos.get(slot.get("CUDA_VISIBLE_DEVICES", ""))
            if info is not None and info.available:
                slot[PRESET_VARIABLE] = info.to_env()
    if options.profile_group < 0:
        raise UsageError("--profile-group must be 0 (off) or more")
    return LocalExecutor(backend, slots, profile_group=options.profile_group, warm=options.fork_server)


class LocalExecutor:
    """Child processes on this machine: one slot (an environment) per concurrent grading."""

    def __init__(self, backend: str, slots: Sequence[dict[str, str]], profile_group: int = 0, *, warm: bool = True) -> None:
        self.backend = backend
        self.profile_group = profile_group
        # Fork servers only where fork is safe with NumPy imported (Linux; macOS's Accelerate is not).
        self.warm = warm and sys.platform.startswith("linux")
        self._slots = list(slots)
        self.workers = len(self._slots)
        self.slots = tuple(s.get("CUDA_VISIBLE_DEVICES", "cpu") for s in self._slots)

    def grade_all(self, ctx: BatchContext, todo: Sequence[Entry], on_done: OnDone | None) -> None:
        """A thread per slot takes the next student, grades them in a child, writes their results file."""
        brokers = _profilers(ctx, self._slots, self.profile_group) if self.backend == "gpu" else None
        try:
            self._grade_all(ctx, todo, on_done, brokers)
        finally:
            if brokers is not None:
                # Every grading is over (or interrupted): a group still in flight has nobody to answer.
                brokers.stop(kill=lambda: kill_tagged(_profiler_tag(ctx), prefix=True))
                ctx.mark("profilers stopped")
                write_profiler_log(brokers)

    def _grade_all(self, ctx: BatchContext, todo: Sequence[Entry], on_done: OnDone | None, brokers: Brokers | None) -> None:
        # Each grading asks its GPU's profiler for ncu counts (none: it runs ncu itself).
        envs = [{**slot, **(brokers.env_for(slot.get("CUDA_VISIBLE_DEVICES", "")) if brokers else {})} for slot in self._slots]
        free: queue.Queue[int] = queue.Queue()
        for index in range(len(envs)):
            free.put(index)
        stop = threading.Event()
        # Each slot forks its gradings' Python children from a warm server (grader.run.parent.fork_server):
        # the imports are paid once per slot, not four times per submission.
        servers = [WarmSlot.make(ctx, slot, index) if self.warm and kind_of(ctx.exercise).traits.on_gpu else None
                   for index, slot in enumerate(self._slots)]

        def one(entry: Entry) -> Outcome | None:
            if stop.is_set():
                return None
            index = free.get()
            try:
                return _grade_entry(ctx, entry, envs[index], stop, servers[index])
            finally:
                free.put(index)

        pool = ThreadPoolExecutor(max_workers=max(len(self._slots), 1), thread_name_prefix="grade")
        futures: set[Future] = {pool.submit(one, e) for e in todo}
        try:
            while futures:
                finished, futures = wait(futures, timeout=0.5, return_when=FIRST_COMPLETED)
                for f in finished:
                    outcome = f.result()
                    if outcome and on_done:
                        on_done(outcome)
            ctx.mark("last grading")
        except BaseException:
            stop.set()
            for f in futures:
                f.cancel()
            pool.shutdown(wait=False, cancel_futures=True)
            # Kill the children in flight (and any a worker was just starting); they stay ungraded. A cancelled
            # future counts as done here: wait() would wait forever for one no worker will pick up.
            while running := [f for f in futures if not f.done()]:
                kill_tagged(ctx.tag_root + ":", prefix=True)
                wait(running, timeout=0.3)
            raise
        finally:
            _close_slots([server for server in servers if server is not None])
            ctx.mark("slots closed")
        pool.shutdown(wait=True)


def _close_slots(slots: Sequence["WarmSlot"]) -> None:
    """Close every slot at once: each kills its GPU workers, stops its fork server (waiting for it) and
    looks through /proc for anything left of its own; one slot after another, those waits add up."""
    if slots:
        with ThreadPoolExecutor(max_workers=len(slots), thread_name_prefix="close-slot") as pool:
            list(pool.map(lambda slot: slot.close(), slots))


def _profilers(ctx: BatchContext, slots: Sequence[Mapping[str, str]], group: int) -> Brokers | None:
    """The profilers of the slots' GPUs, one per kind of GPU (grader.run.parent.profile_broker), or None: turned off (group 0), no ncu
    here, or nothing in this exercise is measured by ncu."""
    ncu = find_tools().ncu
    if group < 1 or not ncu or not kind_of(ctx.exercise).traits.on_gpu or not ncu_metrics(ctx.exercise.spec) \
            or not ctx.exercise.solution_path.exists():
        return None
    by_gpu: dict[str, Mapping[str, str]] = {}
    for slot in slots:
        by_gpu.setdefault(slot.get("CUDA_VISIBLE_DEVICES", ""), slot)
    base = {**api.child_env(ctx.scratch), TAG_VARIABLE: _profiler_tag(ctx)}  # killed with the batch's children too
    # A diagnostic ($KERNEL_GRADER_PROFILER_LANES=N): N ncu children in flight for each kind of GPU, dealt
    # round its GPUs, in place of profile_broker.LANES_PER_GPU on each.
    lanes = os.environ.get(PROFILER_LANES_VARIABLE, "").strip()
    # Another ($KERNEL_GRADER_PROFILER_LINGER=S): how long the oldest request waits for others to join it.
    try:
        linger = max(0.0, float(os.environ.get(PROFILER_LINGER_VARIABLE, "")))
    except ValueError:
        linger = DEFAULT_LINGER_S
    return start_brokers(ctx.scratch / "profiler", ncu, by_gpu, group, base, linger=linger,
                         lanes=int(lanes) if lanes.isdigit() and int(lanes) > 0 else None)


def write_profiler_log(brokers: Brokers) -> None:
    """The profilers' record of their ncu runs, as JSON, to $KERNEL_GRADER_PROFILER_LOG if set (a
    diagnostic: bench/grading_speed.py reads it). A file that cannot be written costs only the record."""
    write_diagnostic(PROFILER_LOG_VARIABLE, brokers.runs())


def _profiler_tag(ctx: BatchContext) -> str:
    """The tag of the profilers' children: under the batch's, and no grading's prefix (no student id is empty)."""
    return f"{ctx.tag_root}::profiler"


class WarmSlot:
    """A slot's fork server (grader.run.parent.fork_server), started at its first grading. A grading that timed
    out or failed in the grader has its server killed with everything it forked and replaced before
    the next one; after any other, whatever the grading left running is killed. A server that died
    during a grading is replaced too, and that grading done again the ordinary way."""

    def __init__(self, ctx: BatchContext, slot: Mapping[str, str], index: int) -> None:
        # Its tag reaches every process it forks (a fork keeps the server's initial environment in
        # /proc), so an interrupted batch's kill_tagged(tag_root + ":") ends them all.
        self.tag = f"{ctx.tag_root}:fork-server-{index}"
        env = {**os.environ, **slot, TAG_VARIABLE: self.tag, "PYTHONHASHSEED": "0"}
        self.server = ForkServer(env, gpu=ctx.backend == "gpu")
        self._failed = False
        # On a GPU slot, two workers that keep their CUDA context for the slot's gradings (the driver
        # makes contexts one at a time for the whole machine; grader.run.parent.gpu_worker): one for
        # the launches, one for the hidden tests, which run beside them.
        self.gpu: dict[str, GpuWorker] = {}
        if ctx.backend == "gpu" and kind_of(ctx.exercise).traits.on_gpu:
            for variable, name in ((GPU_WORKER_VARIABLE, "launches"), (GPU_TEST_WORKER_VARIABLE, "tests")):
                folder = ctx.scratch / f"gpu-worker-{index}-{name}"
                self.gpu[variable] = GpuWorker(folder, {**api.child_env(folder), **slot, TAG_VARIABLE: self.tag})
        self._gpu_failed: set[str] = set()

    @classmethod
    def make(cls, ctx: BatchContext, slot: Mapping[str, str], index: int) -> "WarmSlot | None":
        """A warm slot, or None where its server's private folder cannot be made (its gradings then
        start their children the ordinary way)."""
        try:
            return cls(ctx, slot, index)
        except OSError:
            return None

    def address(self) -> str | None:
        """The socket children fork through, starting the server if needed; None when it cannot start
        (the gradings then start their children the ordinary way)."""
        if not self.server.running and not self._failed:
            self._failed = not self.server.start()
        return self.server.address if self.server.running else None

    def gpu_workers(self) -> dict[str, str]:
        """The environment that names the slot's warm GPU workers (their folders), starting those not
        running; empty without them (the gradings then use ordinary children)."""
        env = {}
        for variable, worker in self.gpu.items():
            if variable in self._gpu_failed:
                continue
            folder = worker.ensure()
            if folder is None:
                self._gpu_failed.add(variable)  # one that cannot start is not tried again for every grading
            else:
                env[variable] = folder
        return env

    def died_during(self, graded: Graded) -> bool:
        """Whether the server has ended, as it may have during this grading (killed from outside). After
        a grading the grader failed it waits a moment for that death to show: it lands just after the
        death of the children it forked, and read too early the student is left with a grader error."""
        return self.server.ended(SERVER_DEATH_GRACE_S if graded.status == "grader-error" else 0.0)

    def after(self, graded: Graded) -> None:
        """Leave nothing of this grading behind for the next."""
        if graded.status in ("timeout", "grader-error") or not self.server.running:
            self.server.stop()
            kill_tagged(self.tag)  # its forked children, whatever state it was in (the GPU workers too)
            for worker in self.gpu.values():
                worker.stop()
        elif self.server.running:
            self.server.kill_children()

    def close(self) -> None:
        """Stop the server, the GPU workers and everything they started (the batch is over: the workers'
        exits are awaited in the background, GpuWorker.stop)."""
        for worker in self.gpu.values():
            worker.stop(wait=False)
        self.server.close()
        kill_tagged(self.tag)


def _grade_entry(ctx: BatchContext, entry: Entry, slot: Mapping[str, str], stop: threading.Event,
                 warm: WarmSlot | None = None) -> Outcome | None:
    where = {"device": slot.get("CUDA_VISIBLE_DEVICES", "")}
    if entry.source is None:
        return record(ctx, entry, unsubmitted(ctx, entry), where)
    tag = f"{ctx.tag_root}:{entry.student}"
    address = warm.address() if warm is not None else None
    env = {**slot, FORK_SERVER_VARIABLE: address} if address else dict(slot)
    if warm is not None:
        env.update(warm.gpu_workers())
    graded = grade_in_child(ctx.exercise, entry.source, backend=ctx.backend, timeout=ctx.timeout, seed=ctx.seed,
                            env=env, scratch=ctx.scratch, tag=tag)
    if warm is not None:
        died = address is not None and not stop.is_set() and warm.died_during(graded)
        warm.after(graded)
        if died:
            # The server went away during the grading (killed from outside): what it did to the grading's
            # children is the grader's failure, never the student's. Grade it again the ordinary way.
            graded = grade_in_child(ctx.exercise, entry.source, backend=ctx.backend, timeout=ctx.timeout, seed=ctx.seed,
                                    env=slot, scratch=ctx.scratch, tag=tag)
    if stop.is_set():
        return None  # killed by the interrupt, not by its own doing: leave it for the next run
    return record(ctx, entry, graded, where)
