"""`grade batch` on a GPU: one profiler per kind of GPU that runs ncu for many gradings at once (parent side).

ncu costs seconds per process (its own start-up, Python and CuPy under its injection, about a second
of set-up at the first profiled launch) and a tenth of a second per further launch, and ncu profiles
one kernel at a time on a GPU. So rather than each grading starting its own ncu, a broker thread per
kind of GPU in the batch parent watches a spool folder (grader.run.parent.profile_spool is the grading
child's side): it lets the oldest request wait up to DEFAULT_LINGER_S for others, takes every request
waiting there (up to --profile-group of them), runs ONE ncu child for them (the runner's job format
of several jobs, each with its own results file, one after another) on a GPU of that kind with no
ncu child of the broker's in flight (a lane: one per GPU, so two GPUs each run a group at once),
and attributes ncu's rows to the jobs in launch order. Each answer is what the grading's own ncu run
would have computed (grader.checks.counters.counts_from on the same launches and rows).

The reference's launches are the same for every grading of an exercise (the same module, sizes and
seed: grader.grading.seed.class_seed), so the broker measures each once per batch: the rows and result
of a reference launch of a job that kept its counts are remembered under reference_key() (the
module's bytes, the launch, the exercise, the metrics and kernels; one broker is one kind of GPU),
and a later job whose reference launches are all remembered sends only its submission's launches to
ncu; the remembered rows are spliced back in launch order (splice) before attribution, so
counts_from() reads exactly what a run of every launch would have given. Groups that start before a
reference is remembered profile it again themselves (no waiting: the first to keep its counts
fills the cache). Where the rows of the launches sent cannot be told apart, nothing is spliced and
the group is settled as before (its jobs alone or queued again).

Anything irregular in a group costs only the job that caused it: when the rows can still be told
apart (as many rows as launches that succeeded), every job whose launches all succeeded keeps its
counts; the first job that did not is told to profile alone, and its grading runs its own ncu child
exactly as a lone grading would (restarts and all), so its verdict is the lone one; the rest go back
to the front of the queue. When the rows cannot be told apart and no launch failed, every job of the
group is told to profile alone. A broker that fails outright tells its gradings the same; one that
stops answering is noticed by its heartbeat (grader.run.parent.profile_spool).

Over 400 lines as one module because the broker's queue, its lanes, the attribution of ncu's rows and
the remembered reference launches are one procedure: which jobs keep their counts, which go back to
the queue, which profile alone and which launches are remembered is decided from the attribution
inside the broker's run of a group.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import itertools
import json
import math
import os
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ... import exercise as exercise_module
from . import profile_spool
from .device_probe import PRESET_VARIABLE, GpuInfo
from ...checks.counters import NcuCounts, NcuRequest, counts_from, profile_alone
from .sandbox import ChildRun, start_child
from ...spec import Limits
from .supervisor import Prestarted, TaskSupervisor, child_limits, read_results, runner_argv, write_atomically
from ..tasks import Task, TaskResult
from ...tools import NcuRows, file_name_part, ncu_env

DEFAULT_GROUP = 8
# How long the oldest request may wait for others to join its group while a GPU is free for it: every
# ncu run costs seconds whatever it profiles, so fewer, fuller runs are what a batch needs, and a
# grading's verdict waits this long at most.
DEFAULT_LINGER_S = 2.0
# ncu children in flight on each GPU. Two on one GPU share its ncu temp folder (tools.ncu_env), so
# their kernels take turns at being profiled while one's start-up, set-up and report (seconds of
# ncu's own CPU) overlap the other's profiling.
LANES_PER_GPU = 1
PRESTART_WAIT_S = 600.0  # a prestarted ncu child gives up after this long without a group


@dataclass
class Pending:
    """A claimed request: where its answer goes, and what to profile."""

    name: str
    answer: Path
    request: NcuRequest
    arrived: float = field(default_factory=time.monotonic)

    @property
    def key(self) -> tuple:
        """Requests profiled together share an exercise and an ncu command line."""
        return run_key(self.request)


def run_key(request: NcuRequest) -> tuple:
    """What requests profiled in one ncu run share: the exercise, the metrics asked (and known to be 0)
    and the kernels."""
    return (request.exercise_root, request.metrics, request.zero, request.kernels)


@dataclass(frozen=True)
class Attribution:
    """What a group's ncu run settled, by index in the group: answers kept, jobs to profile alone, jobs to queue again."""

    kept: Mapping[int, NcuCounts]
    alone: tuple[int, ...]
    again: tuple[int, ...]


@dataclass(frozen=True)
class CachedLaunch:
    """A reference launch measured earlier in the batch: its result and its ncu rows (one per kernel
    of the exercise's chain, in order)."""

    result: TaskResult
    rows: tuple[Mapping[str, float], ...]


def reference_key(request: NcuRequest, task: Task) -> tuple | None:
    """What a reference launch's rows depend on: the exercise, the module's bytes (its hash), the
    launch (sizes, seeds, every field of the task) and the ncu command's metrics and kernels; the
    kind of GPU is the broker's own. None for a launch not to remember: not the reference's, or its
    module unreadable."""
    if task.module != "reference":
        return None
    try:
        digest = hashlib.sha256(Path(request.modules[task.module]).read_bytes()).hexdigest()
    except (OSError, KeyError):
        return None
    return (request.exercise_root, digest, json.dumps(task.to_json(), sort_keys=True), request.metrics, request.zero,
            request.kernels)


def launch_rows(requests: Sequence[NcuRequest], results: Sequence[Mapping[str, TaskResult]],
                parsed: NcuRows) -> list[dict[str, tuple[Mapping[str, float], ...]]] | None:
    """Each job's rows by task id (launch order: job by job, each job's tasks in order; a launch that
    did not succeed has none), or None where the rows do not add up to one per kernel per launch that
    succeeded (as attribute() decides)."""
    per = len(requests[0].kernels) if requests else 1
    ok = [[results[j].get(t.id) is not None and results[j][t.id].status == "ok" for t in req.tasks]
          for j, req in enumerate(requests)]
    if len(parsed.rows) != per * sum(sum(flags) for flags in ok):
        return None
    rows = iter(parsed.rows)
    return [{t.id: tuple(itertools.islice(rows, per)) if good else () for t, good in zip(req.tasks, ok[j])}
            for j, req in enumerate(requests)]


def splice(requests: Sequence[NcuRequest], sent: Sequence[NcuRequest], results: Sequence[Mapping[str, TaskResult]],
           parsed: NcuRows, cached: Sequence[Mapping[str, CachedLaunch]]
           ) -> tuple[list[dict[str, TaskResult]], NcuRows] | None:
    """The results and rows a run of every launch of `requests` would have given, from a run of `sent`
    (the same requests less their `cached` launches, by task id) and the remembered launches put back
    in launch order; None where the run's rows cannot be told apart (launch_rows)."""
    by_job = launch_rows(sent, results, parsed)
    if by_job is None:
        return None
    full: list[dict[str, TaskResult]] = []
    rows: list[Mapping[str, float]] = []
    for j, req in enumerate(requests):
        mine = dict(results[j])
        for t in req.tasks:
            hit = cached[j].get(t.id)
            if hit is not None:
                mine[t.id] = hit.result
                rows.extend(hit.rows)
            else:
                rows.extend(by_job[j].get(t.id, ()))
        full.append(mine)
    return full, NcuRows(tuple(rows), parsed.missing)


def attribute(requests: Sequence[NcuRequest], results: Sequence[Mapping[str, TaskResult]], parsed: NcuRows) -> Attribution:
    """Split a group's ncu rows among its jobs (launch order: job by job, each job's tasks in order).

    A launch that did not succeed is taken to have no row. Where that accounts for every row, each
    job whose launches all succeeded gets counts_from() of its own rows (the answer its lone run would
    give); the first job with a launch that did not succeed must be profiled alone, and the others
    are queued again. Where it does not, no row can be trusted to belong to anyone: the first job
    with a failed launch is profiled alone and the rest queued again, or, when every launch
    succeeded, every job is profiled alone."""
    per = len(requests[0].kernels) if requests else 1
    ok = [[results[j].get(t.id) is not None and results[j][t.id].status == "ok" for t in req.tasks]
          for j, req in enumerate(requests)]
    broken = next((j for j, flags in enumerate(ok) if not all(flags)), None)
    everyone = tuple(range(len(requests)))
    if len(parsed.rows) != per * sum(sum(flags) for flags in ok):
        if broken is None:
            return Attribution({}, everyone, ())
        return Attribution({}, (broken,), tuple(j for j in everyone if j != broken))
    kept: dict[int, NcuCounts] = {}
    rows = iter(parsed.rows)
    for j, req in enumerate(requests):
        mine = tuple(itertools.islice(rows, per * sum(ok[j])))
        if all(ok[j]):
            kept[j] = counts_from(req, results[j], NcuRows(mine, parsed.missing))
    again = tuple(j for j in everyone if j not in kept and j != broken)
    return Attribution(kept, () if broken is None else (broken,), again)


@dataclass
class Lane:
    """A GPU a broker profiles on: its gradings' environment, and at most one ncu child in flight."""

    gpu: str
    env: dict[str, str]
    busy: bool = False
    thread: threading.Thread | None = None
    waiting: tuple[tuple, Prestarted] | None = None  # a prestarted ncu child and the key it serves

    @property
    def ncu_gpu(self) -> str | None:
        """The GPU whose ncu temp folder the lane's ncu children share (None: the lane of a broker
        made without lanes, whose environment says; tools.ncu_env)."""
        return self.gpu or None

    def ncu_env(self) -> dict[str, str]:
        """What an ncu child of the lane needs over the lane's environment (tools.ncu_env)."""
        return ncu_env(self.ncu_gpu)


class ProfileBroker:
    """The profiler of one kind of GPU (start_brokers): a thread serving one spool folder, with one ncu
    child at a time on each of its lanes ((GPU, environment) pairs; a GPU may have more than one).
    `env` is the single lane's environment when `lanes` is not given."""

    def __init__(self, spool: Path, work: Path, ncu: str, env: Mapping[str, str], group: int = DEFAULT_GROUP,
                 prestart: bool = True, linger: float = DEFAULT_LINGER_S,
                 lanes: Sequence[tuple[str, Mapping[str, str]]] | None = None) -> None:
        self.spool = Path(spool)
        self.work = Path(work)
        self.ncu = ncu
        self.lanes = [Lane(gpu, dict(lane_env)) for gpu, lane_env in (lanes or [("", env)])]
        self.group = max(1, int(group))
        self.linger = max(0.0, float(linger))
        self.prestart = prestart
        self.queue: deque[Pending] = deque()
        self.stats: dict[str, int] = {"groups": 0, "single": 0, "told_alone": 0, "requests": 0, "again": 0,
                                      "cached": 0, "remembered": 0}
        # One record per ncu run (Brokers.runs): when its requests arrived, when it started and ended,
        # on which GPU, and how many jobs it profiled; seconds since the broker started.
        self.runs: list[dict[str, Any]] = []
        self._origin = time.monotonic()
        self._ids = itertools.count()
        self._lock = threading.Lock()  # the queue, the stats and the lanes' flags: the lanes' threads share them
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name=f"profiler-{self.spool.name}", daemon=True)
        self._beat = threading.Thread(target=self._heartbeat, name=f"profiler-beat-{self.spool.name}", daemon=True)
        self._exercises: dict[str, Any] = {}
        # Reference launches measured in this batch (reference_key -> CachedLaunch): the broker's life.
        self._references: dict[tuple, CachedLaunch] = {}

    def start(self) -> "ProfileBroker":
        self.spool.mkdir(parents=True, exist_ok=True)
        (self.work / "claimed").mkdir(parents=True, exist_ok=True)
        (self.spool / profile_spool.HEARTBEAT).touch()
        self._thread.start()
        self._beat.start()
        return self

    def stop(self, kill: Callable[[], Any] | None = None) -> None:
        """Stop serving; a waiting prestarted child is killed, and gradings still asking profile alone.
        `kill` ends the ncu children in flight (called until the broker's thread has ended): without
        it, the group in flight finishes first."""
        self._stop.set()
        while self._thread.is_alive():
            if kill is not None:
                kill()
            self._thread.join(0.3)
        self._beat.join()
        with contextlib.suppress(OSError):
            (self.spool / profile_spool.HEARTBEAT).unlink()

    def _heartbeat(self) -> None:
        while not self._stop.is_set() and self._thread.is_alive():
            with contextlib.suppress(OSError):
                (self.spool / profile_spool.HEARTBEAT).touch()
            self._stop.wait(profile_spool.HEARTBEAT_S)

    def _serve(self) -> None:
        try:
            while not self._stop.is_set():
                self._claim()
                with self._lock:
                    lane = next((lane for lane in self.lanes if not lane.busy), None)
                    group = self._take_group() if lane is not None and self.queue and not self._lingering() else None
                    if group:
                        lane.busy = True
                if not group:
                    self._stop.wait(profile_spool.POLL_S)
                    continue
                lane.thread = threading.Thread(target=self._serve_lane, args=(lane, group), daemon=True,
                                               name=f"profiler-{self.spool.name}-{self.lanes.index(lane)}")
                lane.thread.start()
        finally:
            for lane in self.lanes:
                if lane.thread is not None:
                    lane.thread.join()  # stop()'s kill ends its ncu child
                if lane.waiting:
                    lane.waiting[1].cancel()
                    lane.waiting = None
            for p in self.queue:
                _answer(p, {"alone": True})

    def _take_group(self) -> list[Pending]:
        """The oldest request and those waiting that can share its ncu run, up to the group size."""
        first = self.queue.popleft()
        group = [first]
        for p in list(self.queue):
            if len(group) >= self.group:
                break
            if p.key == first.key:
                group.append(p)
                self.queue.remove(p)
        return group

    def _serve_lane(self, lane: Lane, group: list[Pending]) -> None:
        started, wall = time.monotonic(), time.time()
        results: list[Mapping[str, TaskResult]] = []
        cached = 0
        try:
            results, cached = self._serve_group(lane, group)
        except Exception:  # a fault of the broker's own: its gradings profile alone, as a lone grade does
            for p in group:
                _answer(p, {"alone": True})
        finally:
            with self._lock:
                lane.busy = False
                self.runs.append({"gpu": lane.gpu, "jobs": len(group), "start": round(started - self._origin, 3),
                                  "end": round(time.monotonic() - self._origin, 3),
                                  "arrived": [round(p.arrived - self._origin, 3) for p in group], "cached": cached,
                                  "metrics": len(group[0].request.asked),
                                  "ready": _ready_time(results, wall), "launches": _launch_times(results, wall)})

    def _lingering(self) -> bool:
        """Whether to wait a little longer for the first request's group to fill (and for nothing else:
        a full group, or one that has waited `linger` seconds, goes now)."""
        first = self.queue[0]
        fellows = sum(1 for p in self.queue if p.key == first.key)
        return fellows < self.group and time.monotonic() - first.arrived < self.linger

    def _claim(self) -> None:
        """Move every complete request in the spool into the queue (oldest first); a claimed request
        is the broker's to answer."""
        claimed = self.work / "claimed"
        for path in sorted(self.spool.glob("*" + profile_spool.REQUEST_SUFFIX)):
            target = claimed / path.name
            try:
                os.replace(path, target)  # the grading may withdraw it at the same moment: whoever moves first
            except OSError:
                continue
            try:
                data = json.loads(target.read_text(encoding="utf-8"))
                pending = Pending(path.name, Path(data["answer"]), NcuRequest.from_json(data))
            except (OSError, ValueError, KeyError, TypeError):
                continue  # not a request this grader wrote: nobody to answer
            with self._lock:
                self.queue.append(pending)
                self.stats["requests"] += 1

    def _count(self, stat: str, n: int = 1) -> None:
        with self._lock:
            self.stats[stat] += n

    def _serve_group(self, lane: Lane, group: list[Pending]) -> tuple[list[Mapping[str, TaskResult]], int]:
        """Answer the group: the launch results of its ncu run (none for a request alone, profiled as
        its grading would) and how many reference launches it took from the cache instead."""
        requests = [p.request for p in group]
        cached = self._cached(requests)
        if len(group) == 1 and not cached[0]:
            self._alone(lane, group[0])
            return [], 0
        sent = [dataclasses.replace(r, tasks=tuple(t for t in r.tasks if t.id not in hits)) for r, hits in zip(requests, cached)]
        results, parsed = self._run_group(lane, sent)
        spliced = splice(requests, sent, results, parsed, cached)
        if spliced is None:  # the rows cannot be told apart: settled on the launches sent (kept: none)
            settled = attribute(sent, results, parsed)
        else:
            settled = attribute(requests, *spliced)
            self._remember(requests, cached, *spliced, settled)
        for j, counts in settled.kept.items():
            _answer(group[j], _counts_json(counts))
        for j in settled.alone:
            # Its grading runs its own ncu child, exactly as a lone grading: beside the next group,
            # not holding up the queue for as long as that one may take.
            self._count("told_alone")
            _answer(group[j], {"alone": True})
        # Queued again at the front, in their order: they were waiting longest.
        with self._lock:
            self.stats["again"] += len(settled.again)
            for j in reversed(settled.again):
                self.queue.appendleft(group[j])
        count = sum(len(hits) for hits in cached)
        self._count("cached", count)
        return results, count

    def _cached(self, requests: Sequence[NcuRequest]) -> list[dict[str, CachedLaunch]]:
        """For each request, its reference launches measured before in the batch, by task id; all of a
        request's or none (a request sends every reference launch, or only its submission's)."""
        found: list[dict[str, CachedLaunch]] = []
        for request in requests:
            keys = {t.id: reference_key(request, t) for t in request.tasks if t.module == "reference"}
            with self._lock:
                hits = {i: self._references[k] for i, k in keys.items() if k is not None and k in self._references}
            found.append(hits if keys and len(hits) == len(keys) else {})
        return found

    def _remember(self, requests: Sequence[NcuRequest], cached: Sequence[Mapping[str, CachedLaunch]],
                  results: Sequence[Mapping[str, TaskResult]], parsed: NcuRows, settled: Attribution) -> None:
        """Remember the reference launches this run measured for jobs that kept their counts (counted
        without a problem, every value a number): later jobs of the batch reuse them."""
        by_job = launch_rows(requests, results, parsed)
        if by_job is None:
            return
        for j, (_, problem) in settled.kept.items():
            if problem is not None:
                continue
            for t in requests[j].tasks:
                key = reference_key(requests[j], t)
                rows = by_job[j].get(t.id, ())
                if key is None or t.id in cached[j] or not rows or any(
                        math.isnan(v) for row in rows for v in row.values()):
                    continue
                with self._lock:
                    if key not in self._references:
                        self._references[key] = CachedLaunch(results[j][t.id], rows)
                        self.stats["remembered"] += 1

    def _limits(self, root: str) -> Limits:
        with self._lock:
            if root not in self._exercises:
                self._exercises[root] = exercise_module.load(Path(root))
            return self._exercises[root].spec.limits

    def _folder(self) -> Path:
        folder = self.work / f"run{next(self._ids)}"
        folder.mkdir()
        return folder

    def _runner(self, lane: Lane, request: NcuRequest, folder: Path) -> TaskSupervisor:
        return TaskSupervisor(exercise_root=Path(request.exercise_root), workdir=folder, modules={"gpu": dict(request.modules)},
                      limits=self._limits(request.exercise_root), env=lane.env)

    @staticmethod
    def _take_prestarted(lane: Lane, key: tuple) -> Prestarted | None:
        waiting, lane.waiting = lane.waiting, None
        if waiting is None:
            return None
        if waiting[0] != key or waiting[1].child.proc.poll() is not None:
            waiting[1].cancel()
            return None
        return waiting[1]

    def _prestart_next(self, lane: Lane, request: NcuRequest) -> None:
        """Start the lane's next ncu child now: its start-up (seconds) overlaps this group's run (ncu
        runs sharing one temp folder, tools.ncu_env, take turns at profiling)."""
        if not self.prestart or lane.waiting is not None:
            return
        runner = self._runner(lane, request, self._folder())
        child = runner.prestart("gpu", wrapper=request.wrapper(self.ncu), extra_env=lane.ncu_env(),
                                wait=PRESTART_WAIT_S)
        lane.waiting = (run_key(request), child)

    def _alone(self, lane: Lane, pending: Pending) -> None:
        """A request alone in the queue: its own ncu run, exactly as its grading would have run it."""
        self._count("single")
        prestarted = self._take_prestarted(lane, pending.key)
        runner = self._runner(lane, pending.request, self._folder())
        self._prestart_next(lane, pending.request)
        _answer(pending, _counts_json(profile_alone(runner, pending.request, self.ncu, prestarted=prestarted,
                                                    gpu=lane.ncu_gpu)))

    def _run_group(self, lane: Lane, requests: Sequence[NcuRequest]) -> tuple[list[dict[str, TaskResult]], NcuRows]:
        """One ncu child for the group's jobs, one after another: each job's results, and ncu's rows."""
        self._count("groups")
        first = requests[0]
        limits = self._limits(first.exercise_root)
        folder = self._folder()
        paths = [folder / f"job{j}.jsonl" for j in range(len(requests))]
        job = {"exercise": first.exercise_root, "backend": "gpu", "pool": True, "step_limit": limits.step_limit,
               "budget": False,  # as a lone ncu run: the reference's launches are profiled, not timed
               "jobs": [{"modules": dict(r.modules), "results": str(p), "tasks": [t.to_json() for t in r.tasks]}
                        for r, p in zip(requests, paths)]}
        prestarted = self._take_prestarted(lane, run_key(first))
        stem = prestarted.stem if prestarted else folder / "group"
        write_atomically(stem.with_suffix(".json"), json.dumps(job))
        # One run limit for the group, as for one grading's ncu run: a group that runs past it costs
        # its hung job a lone run, and the others a place in the queue.
        seconds = limits.run_seconds
        if prestarted:
            self._prestart_next(lane, first)
            child: ChildRun = prestarted.child.finish(seconds)
        else:
            started = start_child(runner_argv(first.wrapper(self.ncu), stem), limits=child_limits(limits, seconds, "gpu"),
                                  env={**lane.env, **lane.ncu_env()}, output_cap=limits.output_bytes, cwd=str(folder))
            self._prestart_next(lane, first)
            child = started.finish(seconds)
        log = stem.with_suffix(".log")
        text = (log.read_text(errors="replace") if log.exists() else "") + "\n" + child.stdout
        return [read_results(p) for p in paths], first.parse(text)


def _clocks(results: Sequence[Mapping[str, TaskResult]]) -> list[Mapping[str, float]]:
    """The child's clock of each launch of an ncu run (runner.main: epoch seconds), in launch order."""
    return sorted((r.clock for job in results for r in job.values() if r.clock), key=lambda c: c["start"])


def _launch_times(results: Sequence[Mapping[str, TaskResult]], origin: float) -> list[list[float]]:
    """Each launch of an ncu run as [start, end, seconds waited for the GPU], seconds after `origin`
    (the run's start, epoch seconds), in launch order; the first is preceded by the child's start-up."""
    return [[round(c["start"] - origin, 3), round(c["end"] - origin, 3), round(c.get("waited", 0.0), 3)]
            for c in _clocks(results)]


def _ready_time(results: Sequence[Mapping[str, TaskResult]], origin: float) -> float | None:
    """When the run's child was ready for its job, seconds after `origin` (negative: prestarted and ready before)."""
    ready = [c["ready"] for c in _clocks(results) if c.get("ready")]
    return round(min(ready) - origin, 3) if ready else None


def _counts_json(counts: NcuCounts) -> dict[str, Any]:
    by_size, problem = counts
    return {"by_size": by_size, "problem": problem}


def _answer(pending: Pending, reply: Mapping[str, Any]) -> None:
    """Write a grading's answer; one that has ended (its folder gone) reads nothing, which is fine."""
    with contextlib.suppress(OSError):
        write_atomically(pending.answer, json.dumps(reply))


@dataclass
class Brokers:
    """The profilers of a batch, one per kind of GPU: the variable each grading child gets, and shutting
    them down."""

    by_gpu: dict[str, ProfileBroker] = field(default_factory=dict)

    def env_for(self, gpu: str) -> dict[str, str]:
        broker = self.by_gpu.get(gpu)
        return {profile_spool.VARIABLE: str(broker.spool)} if broker else {}

    def profilers(self) -> list[ProfileBroker]:
        """Each profiler once (GPUs of one kind share one)."""
        return list({id(b): b for b in self.by_gpu.values()}.values())

    def stop(self, kill: Callable[[], Any] | None = None) -> None:
        """Stop every profiler (ProfileBroker.stop), each once."""
        for broker in self.profilers():
            broker.stop(kill)

    def runs(self) -> list[dict[str, Any]]:
        """Every ncu run of every profiler (ProfileBroker.runs), in the order they ended."""
        return sorted((r for b in self.profilers() for r in b.runs), key=lambda r: r["end"])


def start_brokers(root: Path, ncu: str, slot_envs: Mapping[str, Mapping[str, str]], group: int,
                  base_env: Mapping[str, str], linger: float = DEFAULT_LINGER_S, lanes: int | None = None) -> Brokers:
    """One broker for the GPUs of one kind (slot_envs: GPU -> the environment of that GPU's gradings),
    under `root`, with LANES_PER_GPU lanes on each of them (or `lanes` in all, dealt round the GPUs
    in turn): one queue for the GPUs of a kind gives fuller groups, so fewer ncu runs, each costing
    seconds, and each lane runs a group of its own at the same time. GPUs of different kinds count
    differently and keep their own broker; so does a GPU whose kind the batch's probe did not say
    (KERNEL_GRADER_GPU)."""
    brokers = Brokers()
    by_kind: dict[str, list[str]] = {}
    for gpu, slot_env in slot_envs.items():
        by_kind.setdefault(_kind(gpu, slot_env), []).append(gpu)
    for gpus in by_kind.values():
        folder = root / f"gpu-{file_name_part(gpus[0], empty='gpu')}"
        envs = []
        for n in range(lanes or LANES_PER_GPU * len(gpus)):
            gpu = gpus[n % len(gpus)]
            env = {**base_env, **slot_envs[gpu]}
            env.pop(profile_spool.VARIABLE, None)  # its own ncu children profile, they do not ask
            envs.append((gpu, env))
        broker = ProfileBroker(folder / "spool", folder / "work", ncu, {}, group, linger=linger, lanes=envs).start()
        for gpu in gpus:
            brokers.by_gpu[gpu] = broker
    return brokers


def _kind(gpu: str, slot_env: Mapping[str, str]) -> str:
    """Which GPUs count alike: the same model and architecture, as the batch's probe gave them."""
    info = GpuInfo.from_env(slot_env.get(PRESET_VARIABLE))
    if info is not None and info.available and info.name and info.arch:
        return f"{info.name}\0{info.arch}"
    return f"gpu {gpu}"
