"""A batch slot's warm GPU worker: one process that keeps its CUDA context for many gradings.

Every process that uses a GPU makes a CUDA context, and the driver makes contexts one at a time for
the whole machine, whatever GPU each is for: on an H200 one context took 0.38 s alone and 2.2 s
with 16 made at once (bench/context_startup.py), mostly in the kernel's driver. A batch of 100
gradings made over 200 of them (each grading's launch child, its hidden tests, the profiler's
children), so adding gradings, or GPUs, only lengthened that queue. A warm worker per slot runs the
plain GPU launch jobs (correctness, race, timing) of one grading after another in one context, and a
second one the hidden tests (pytest, run inside it).

Isolation stays what the issue of warm workers asks for: a worker runs one grading's job at a time;
every buffer it releases is zeroed first (grader.run.child.warm_worker, the timing's own pool), and
each job's modules are unloaded before the next; a job that hangs or floods is killed with the
worker, and a job that breaks the context ends the worker; either way only that grading's verdict
says so, and the slot starts a fresh worker for the next grading. Jobs under ncu or a sanitizer,
and anything a grading must restart, run in ordinary children as before.

    batch (grader.staff.batch.local.WarmSlot)   GpuWorker: starts the worker, restarts it between gradings
    grading (grader.run.parent.supervisor)      run_job(): hands a job over, waits, returns a ChildRun
    worker (grader.run.child.warm_worker FOLDER gpu)

The folder named by $KERNEL_GRADER_GPU_WORKER (or $KERNEL_GRADER_GPU_TEST_WORKER) holds `pid` and `ready` (the worker's pid once its
device is open), `N.ticket` (job N: the job file, and files for its stdout and stderr) and `N.done`
(its exit status), N counting up from 0; `N.claim` reserves a number, `N.taken` says the worker
has started the job (a worker that dies before that leaves the job to an ordinary child: the
grader's failure is never charged to the submission).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Mapping, Sequence

from .file_handoff import write_atomically
from .rlimits import ResourceLimits, limit_setter
from .sandbox import ChildRun, python_argv, reap

VARIABLE = "KERNEL_GRADER_GPU_WORKER"  # the folder of the slot's launch worker, in a grading's environment
# The folder of the slot's second worker, for the hidden tests: they run beside the launches, whose
# timing waits for them to finish, so one worker for both would wait for itself.
TESTS_VARIABLE = "KERNEL_GRADER_GPU_TEST_WORKER"
START_SECONDS = 60.0


class GpuWorker:
    """The batch's handle on one slot's worker (the process is its child)."""

    def __init__(self, folder: Path, env: Mapping[str, str], limits: ResourceLimits | None = None,
                 backend: str = "gpu") -> None:
        self.root = folder
        self.backend = backend  # "emu" only in tests: the protocol is the same
        self.env = dict(env)
        self.limits = limits or ResourceLimits(cpu_seconds=None, address_space_bytes=None)
        self.proc: subprocess.Popen | None = None
        self._generation = 0

    @property
    def folder(self) -> Path:
        """This worker's folder (a fresh one per process: tickets of a dead worker stay with it)."""
        return self.root / f"w{self._generation}"

    @property
    def running(self) -> bool:
        """Whether the worker runs and takes jobs (one that closed after a broken context does not)."""
        return self.proc is not None and self.proc.poll() is None and (self.folder / "ready").exists()

    def start(self) -> bool:
        """Start a worker and wait until its device is open; whether it is ready."""
        self.stop()
        self._generation += 1
        folder = self.folder
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "backend").write_text(self.backend)
        log = open(folder / "worker.log", "ab")
        try:
            self.proc = subprocess.Popen(python_argv("grader.run.child.warm_worker", str(folder), self.backend),
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=str(folder),
                                         env=self.env, start_new_session=True, preexec_fn=limit_setter(self.limits))
        except OSError:
            self.proc = None
            return False
        finally:
            log.close()
        (folder / "pid").write_text(str(self.proc.pid))
        deadline = time.monotonic() + START_SECONDS
        while not (folder / "ready").exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                return False
            time.sleep(0.01)
        return True

    def ensure(self) -> str | None:
        """The folder a grading hands its jobs to, starting a worker if none runs; None if it cannot start."""
        if not self.running and not self.start():
            return None
        return str(self.folder)

    def stop(self, wait: bool = True) -> None:
        """Kill the worker (and anything it started), and wait for it to exit; or, with wait=False (the
        batch is over), leave the wait to a background thread: its exit waits for the driver to tear its
        CUDA context down, and a batch that waited for every worker's ended seconds after its last grading."""
        if self.proc is None:
            return
        _kill_group(self.proc.pid)
        if wait:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        else:
            reap(self.proc)
        self.proc = None


def run_job(folder: str, job: Path, *, backend: str, timeout: float, output_cap: int,
            stop: threading.Event | None = None, pytest_args: Sequence[str] | None = None,
            env: Mapping[str, str] | None = None) -> ChildRun | None:
    """Run job file `job` on the worker in `folder`, as run_child would run it in a fresh child: the
    ChildRun of what happened. None when no worker for `backend` is alive to take it (the caller
    starts an ordinary child instead). A job past `timeout`, or stopped, is killed with the worker.
    With `pytest_args`, the job is a grading's hidden tests: pytest runs them in the worker, with
    `env` over its environment."""
    where = Path(folder)
    pid = _alive(where)
    try:
        same = (where / "backend").read_text() == backend
    except OSError:
        same = False
    if pid is None or not same:
        return None
    n = 0
    while True:  # claim the next number (one grading at a time uses a worker, but never two on one number)
        try:
            os.close(os.open(where / f"{n}.claim", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            break
        except FileExistsError:
            n += 1
    out, err = job.with_suffix(".stdout"), job.with_suffix(".stderr")
    order = {"job": str(job.resolve()), "stdout": str(out.resolve()), "stderr": str(err.resolve())}
    if pytest_args is not None:
        order.update({"kind": "pytest", "args": list(pytest_args), "env": dict(env or {})})
    write_atomically(where / f"{n}.ticket", json.dumps(order))
    started = time.monotonic()
    deadline = started + timeout
    done = where / f"{n}.done"
    code: int | None = None
    timed_out = False
    checked = started
    while True:
        if done.exists():
            try:
                code = int(json.loads(done.read_text())["code"])
                break
            except (OSError, ValueError, KeyError, TypeError):
                pass  # being renamed into place: read it again
        now = time.monotonic()
        if now > deadline or (stop is not None and stop.is_set()):
            timed_out = now > deadline
            _kill_group(pid)
            code = -signal.SIGKILL
            break
        if now - checked > 0.2:
            checked = now
            if not _running(pid) and not done.exists():
                if not (where / f"{n}.taken").exists():
                    return None  # it went away before taking the job: the grader's loss, run it elsewhere
                code = -signal.SIGKILL  # it died during this job (a crash of the process): as a killed child
                break
        time.sleep(0.002)
    stdout, stdout_bytes = _head(out, output_cap)
    stderr, stderr_bytes = _head(err, output_cap)
    return ChildRun(code, timed_out, time.monotonic() - started, stdout, stderr, stdout_bytes, stderr_bytes)


def _alive(folder: Path) -> int | None:
    """The worker's pid if it takes jobs: ready (not closed) and still running."""
    try:
        pid = int((folder / "ready").read_text())
    except (OSError, ValueError):
        return None
    return pid if _running(pid) else None


def _running(pid: int) -> bool:
    """Whether process `pid` still runs (a zombie does not)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            state = stat.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"Z", b"X")


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _head(path: Path, cap: int) -> tuple[str, int]:
    """The first `cap` bytes of a job's output file as text, and its whole size."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            return f.read(cap).decode("utf-8", errors="replace"), size
    except OSError:
        return "", 0
