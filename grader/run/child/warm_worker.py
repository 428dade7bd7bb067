"""The child side of a batch slot's warm GPU worker: one process, one device, many gradings' jobs.

Run as `python -m grader.run.child.warm_worker FOLDER BACKEND` by grader.run.parent.gpu_worker,
which documents the folder's protocol. The worker opens the device once, then takes the jobs handed
to it through FOLDER one after another: a grading's launch job (grader.run.child.runner's tasks) or
its hidden tests (pytest, in this process). Each job writes to its own stdout and stderr files.
Between two jobs nothing of the first is left for the second: every buffer it released was zeroed
(the runner's release is the device's scrub; the timing zeroes its own pool), its modules are
unloaded, the host copy of its reference results is dropped, and the context is checked. A job that
leaves the device unusable ends the worker, which first closes (so no grading hands it another
job) and answers.
"""
from __future__ import annotations

import itertools
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping

if __name__ == "__main__" and sys.argv[2:3] == ["gpu"]:
    # Before the imports below: the CUDA context is made while they run (grader.run.child.cuda_context).
    from .cuda_context import open_early

    open_early()

from ...backends import Device, open_device  # noqa: E402 - after the context's start, on purpose
from ...exercise import Exercise, Harness
from ...exercise import load as load_exercise
from ..parent.supervisor import write_atomically
from ..tasks import EXIT_FATAL, harness_fault
from . import runner


def serve(folder: Path, backend: str) -> int:
    """Take the jobs of FOLDER/N.ticket in order N = 0, 1, ... and answer each with FOLDER/N.done
    (the exit status the job would have had as a child of its own) once its results are written."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # output over the file-size limit is dropped, not fatal
    device = open_device(backend)
    parent = os.getppid()
    exercises: dict[str, tuple[Exercise, Harness]] = {}
    (folder / "ready").write_text(str(os.getpid()))
    for n in itertools.count():
        ticket = folder / f"{n}.ticket"
        while not ticket.exists():
            if os.getppid() != parent:
                return 0  # the batch that started this worker is gone
            time.sleep(0.002)
        order = json.loads(ticket.read_text())
        (folder / f"{n}.taken").touch()  # from here on, what happens is the job's (gpu_worker.run_job)
        done = folder / f"{n}.done"
        code, status = _run_order(order, device, exercises, folder, done)
        _forget(device)
        if code is None and not getattr(device, "healthy", lambda: True)():
            code = EXIT_FATAL if status is None else (status or 1)  # the job's own answer stays what it was
        if code is not None:
            # The device is unusable (or the job failed in the grader): a fresh worker takes the next
            # grading. Closed before answering, so no grading hands this one another job.
            (folder / "ready").unlink(missing_ok=True)
        _answer(done, code if status is None else status)
        if code is not None:
            os._exit(code)  # a broken context can hang the interpreter's own shutdown: nothing is left to save
    return 0


def _run_order(order: Mapping[str, Any], device: Device, exercises: dict[str, tuple[Exercise, Harness]], folder: Path,
               done: Path) -> tuple[int | None, int | None]:
    """Run one ticket's job with its own stdout, stderr, folder and temporary files: (code, status).
    code is None when the worker can go on, else the status it exits with; status, where given, is
    the job's own exit status (pytest's), to answer in place of code."""
    job_path = Path(order["job"])
    job = json.loads(job_path.read_text())
    root = job["exercise"]
    if root not in exercises:
        loaded = load_exercise(Path(root))
        try:
            exercises[root] = (loaded, Harness(loaded))
        except Exception as exc:  # noqa: BLE001 - harness.py does not import: every task is the exercise's fault
            fault = harness_fault(exc, loaded.root)
            if fault is None:
                raise
            if order.get("kind") != "pytest":
                for one in job.get("jobs", [job]):
                    runner._all_faulted(one, fault)
                return None, None  # nothing was cached: the next job tries again, the worker goes on
    # A hidden-test session builds (and reports the fault of) its own harness: it needs none of these.
    exercise, harness = exercises.get(root, (None, None))
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    out = os.open(order["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    err = os.open(order["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(out, 1)
    os.dup2(err, 2)
    os.chdir(job_path.parent)
    tempfile.tempdir = str(job_path.parent)
    try:
        if order.get("kind") == "pytest":
            status, go_on = _hidden_tests(order, device, folder, done)
            return (None if go_on else status or 1), status
        return runner._run_job(job, job, exercise, harness, device, time.time(), release=getattr(device, "scrub", None)), None
    except BaseException:  # noqa: BLE001 - a grader bug in one job: reported as a crash of that job
        import traceback

        traceback.print_exc()
        return 1, None
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (out, err, *saved):
            os.close(fd)


def _forget(device: Device) -> None:
    """Nothing of a job stays loaded for the next: its modules (and their __device__ data). (Its inputs
    and reference results were the job's own: grader.run.child.cases, closed when the job ended.)"""
    forget = getattr(device, "forget_modules", None)
    if forget is not None:
        forget()


def _answer(done: Path, code: int | None) -> None:
    write_atomically(done, json.dumps({"code": 0 if code is None else code}))


def _hidden_tests(order: Mapping[str, Any], device: Device, folder: Path, done: Path) -> tuple[int, bool]:
    """A grading's hidden tests, run by pytest inside the worker on its device (their own child would
    make a CUDA context of its own): pytest's exit status, and whether the worker can go on (not after
    a launch that broke the CUDA context, nor after pytest could not do its job). The exercise's test
    modules are imported afresh for each grading."""
    import pytest

    from . import hidden_tests

    def closing(status: int) -> None:  # a kernel hung in a test: the process ends, answered first
        (folder / "ready").unlink(missing_ok=True)
        sys.stdout.flush()
        sys.stderr.flush()
        _answer(done, status)

    saved = {k: os.environ.get(k) for k in order["env"]}
    os.environ.update(order["env"])
    hidden_tests._SESSION.clear()
    hidden_tests._EARLY.clear()
    hidden_tests._EARLY["device"] = device
    hidden_tests.BEFORE_EXIT[:] = [closing]
    before = set(sys.modules)
    broken = False
    try:
        status = int(pytest.main(list(order["args"])))
    finally:
        broken = any(session.broken for session in hidden_tests._SESSION)
        hidden_tests._SESSION.clear()
        hidden_tests._EARLY.clear()
        hidden_tests.BEFORE_EXIT.clear()
        for name in set(sys.modules) - before:
            if name.startswith("test_") or name.startswith("conftest"):
                del sys.modules[name]
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return status, status in (0, 1) and not broken  # 1: a test failed, as it may


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(serve(Path(sys.argv[1]), sys.argv[2]))
