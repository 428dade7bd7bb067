"""The child-process side: execute tasks on a backend and stream one JSON line per finished task.

Run as `python -m grader.run.child.runner JOB.json`. The parent (grader.run.parent.supervisor) starts it inside the
sandbox, possibly wrapped by ncu or compute-sanitizer. Results go to the job's results file,
never to stdout, which belongs to the student's printf.

`python -m grader.run.child.runner --serve FOLDER BACKEND` is a warm worker instead (a batch's GPU
slot keeps one, grader.run.parent.gpu_worker): it opens the device once, then runs the jobs handed
to it through FOLDER one after another, each with its own stdout and stderr files, zeroing every
buffer it releases and unloading each job's modules, until a job leaves the device unusable.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ... import expressions
from ...backends import Device, open_device
from ...backends.base import untouched
from ...exercise import Exercise, Harness
from ...exercise import load as load_exercise
from .launch import launch_kernel, load_chain
from .launch_budget import Budget, Budgets
from ...spec import Spec
from ..parent.supervisor import wait_for_file
from ..tasks import EXIT_FATAL, Task, TaskResult, skipped_for, unmet_requirements

MAX_FIRST_BAD = 1


def main(argv: list[str]) -> int:
    if argv[:1] == ["--serve"]:
        return serve(Path(argv[1]), argv[2])
    job_path = Path(argv[0])
    exercise = device = None
    if argv[1:2] == ["--prestart"]:
        # Started while the submission compiles: pay for imports, the exercise and the device now,
        # then wait for the job (giving up if it never comes: the parent went away).
        backend, pool, root, wait = argv[2:6]
        exercise = load_exercise(Path(root))
        device = open_device(backend, pool=pool == "pool")  # holds no share of the GPU until a task runs
        if not wait_for_file(job_path, float(wait)):
            return 0
    job = json.loads(job_path.read_text())
    exercise = exercise or load_exercise(Path(job["exercise"]))
    harness = Harness(exercise)
    device = device or open_device(job["backend"], pool=job.get("pool", True))
    ready = time.time()  # imports done, device open: the rest is the tasks' own time
    if "jobs" in job:
        return _run_jobs(job, exercise, harness, device, ready)
    code = _run_job(job, job, exercise, harness, device, ready)
    return 0 if code is None else code


def serve(folder: Path, backend: str) -> int:
    """The warm worker's loop (see the module's docstring). Tickets are FOLDER/N.ticket (JSON: the job
    file, and the files for its stdout and stderr), taken in order N = 0, 1, ...; each is answered by
    FOLDER/N.done (JSON: the exit status the job would have had as a child of its own) once its
    results are written. A job that leaves the device unusable ends the worker after its answer."""
    import signal
    import tempfile

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
        (folder / f"{n}.taken").touch()  # from here on, what happens is the job's: see gpu_worker.run_job
        job_path = Path(order["job"])
        job = json.loads(job_path.read_text())
        root = job["exercise"]
        if root not in exercises:
            loaded = load_exercise(Path(root))
            exercises[root] = (loaded, Harness(loaded))
        exercise, harness = exercises[root]
        done = folder / f"{n}.done"
        sys.stdout.flush()
        sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        out = os.open(order["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        err = os.open(order["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(out, 1)
        os.dup2(err, 2)
        os.chdir(job_path.parent)
        tempfile.tempdir = str(job_path.parent)
        status = None  # the exit status the job's own child would have had, where it is not `code`
        try:
            if order.get("kind") == "pytest":
                status, go_on = _hidden_tests(order, device, folder, done)
                code = None if go_on else status or 1
            else:
                code = _run_job(job, job, exercise, harness, device, time.time(), release=getattr(device, "scrub", None))
        except BaseException:  # noqa: BLE001 - a grader bug in one job: reported as a crash of that job
            import traceback

            traceback.print_exc()
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in (out, err, *saved):
                os.close(fd)
        # Nothing of this job stays loaded for the next: its modules (and their __device__ data), the
        # host copy of its reference results.
        forget = getattr(device, "forget_modules", None)
        if forget is not None:
            forget()
        _LAST_EXPECTED.clear()
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


def _answer(done: Path, code: int | None) -> None:
    part = done.with_name(done.name + ".part")
    part.write_text(json.dumps({"code": 0 if code is None else code}))
    os.replace(part, done)


def _hidden_tests(order: Mapping[str, Any], device: Device, folder: Path, done: Path) -> tuple[int, bool]:
    """A grading's hidden tests, run by pytest inside the warm worker on its device (their own child
    would make a CUDA context of its own): pytest's exit status, and whether the worker can go on (not
    after a launch that broke the CUDA context, nor after pytest could not do its job). The
    exercise's test modules are imported afresh for each grading."""
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


def _run_jobs(group: Mapping[str, Any], exercise: Exercise, harness: Harness, device: Device, ready: float) -> int:
    """Several gradings' jobs in one process (grade batch profiles many submissions per ncu run,
    grader.run.parent.profile_broker): each job's tasks in order, each job's results in its own file, the jobs
    one after another. Every buffer is zeroed before it is released, so no kernel of a later job can
    find an earlier job's inputs, outputs or reference results in recycled device memory."""
    release = getattr(device, "scrub", None)
    for job in group["jobs"]:
        code = _run_job(job, group, exercise, harness, device, ready, release=release)
        if code is not None:
            return code
    return 0


def _run_job(job: Mapping[str, Any], settings: Mapping[str, Any], exercise: Exercise, harness: Harness, device: Device,
             ready: float, release: Any = None) -> int | None:
    """One job's tasks, in order, into its results file (`settings` holds the backend and the limits);
    the exit status when the process must stop now, else None."""
    modules: Mapping[str, str] = job["modules"]
    # Each submission launch's limit from the reference's cost at its size; only where the parent asks
    # (not under ncu or a sanitizer, which would see or slow the reference's launches).
    budgets = Budgets(exercise.spec, harness, settings["backend"], modules.get("reference") if settings.get("budget") else None,
                      step_limit=int(settings.get("step_limit", 200_000)), device=device)
    finished: dict[str, TaskResult] = {}
    with open(job["results"], "a", encoding="utf-8") as out:
        for raw in job["tasks"]:
            code = _run_task(Task.from_json(raw), finished, out, ready, exercise, harness, device, modules, budgets,
                             release=release)
            if code is not None:
                return code
    return None


def _run_task(task: Task, finished: dict[str, TaskResult], out: Any, ready: float, exercise: Exercise, harness: Harness,
              device: Device, modules: Mapping[str, str], budgets: Budgets, release: Any = None) -> int | None:
    """Run one task and append its result line; the exit status when the process must stop now, else None."""
    started, waited_before = time.time(), _lock_wait(device)
    failed = unmet_requirements(task, finished)
    if failed:
        skipped = skipped_for(task, failed)
        result, fatal = {"id": skipped.id, "status": skipped.status, "message": skipped.message}, False
    else:
        if task.after:
            # Holding no share of the GPU (shares are per launch): another grading's timing
            # would otherwise wait on this idle process while this grading's ncu run waits
            # on that timing.
            wait_for_file(Path(task.after))
        # Each launch holds its own share of the GPU (_launch_once), and a timing has the GPU alone
        # only for its timed launches (grader.run.child.timing): the CPU's part of a task (inputs,
        # the float64 reference, the comparison) never keeps another grading's timing waiting.
        result, fatal = _execute(task, exercise, harness, device, modules, budgets, release)
    # Wall-clock times (epoch seconds) for the grading's timeline; the parent reads them. "waited":
    # the seconds of the task spent waiting for the GPU (other gradings' timings, or launches in
    # flight before this grading's own timing).
    waited = min(_lock_wait(device) - waited_before, time.time() - started)
    result["clock"] = {"ready": ready, "start": started, "end": time.time(), "waited": round(waited, 4)}
    line = json.dumps(result, allow_nan=False, default=_json_default)
    finished[task.id] = TaskResult.from_json(json.loads(line))
    out.write(line + "\n")
    out.flush()
    if fatal and result["status"] == "timeout":
        # A GPU kernel still running: Python's own shutdown would wait for it. Exiting now lets
        # the driver tear the context (and the kernel) down.
        os._exit(EXIT_FATAL)
    if fatal:
        return EXIT_FATAL
    return None


def _lock_wait(device: Device) -> float:
    """Seconds this process has waited for the GPU's lock so far (0 on the emulator: no lock)."""
    return float(getattr(device, "waited", 0.0))


def _execute(task: Task, exercise: Exercise, harness: Harness, device: Device, modules: Mapping[str, str], budgets: Budgets,
             release: Any = None):
    spec = exercise.spec
    if task.kind == "time":
        from .timing import time_task

        return time_task(task, exercise, harness, device, modules), False
    # The reference's cost at this size is measured before the submission's kernel is loaded or run.
    budget = budgets.for_sizes(task.sizes) if task.module == "submission" else budgets.fixed()
    kernel = load_chain(device, modules[task.module], spec)
    launches = []
    for seed in task.seeds:
        earlier = budgets.hung.get(_size_key(task)) if task.module == "submission" else None
        if earlier is not None:
            # It already ran out of its budget at this size (another check's launch): spending the
            # budget again would only delay the verdict.
            launches.append({**earlier, "seed": seed, "seconds": 0.0, "repeated": True})
            break
        record, outcome = _launch_once(task, seed, spec, harness, device, kernel, budget, release)
        launches.append(record)
        if task.module == "submission" and outcome.findings.get("status") == "step-limit":
            budgets.hung[_size_key(task)] = {k: v for k, v in record.items() if k in ("grid", "block", "emu", "error")}
        if outcome.findings.get("status") == "time-limit":  # a GPU kernel still running: no further launch can
            return {"id": task.id, "status": "timeout", "message": outcome.error, "launches": launches}, True
        if outcome.fatal:
            return {"id": task.id, "status": "error", "message": outcome.error, "launches": launches}, True
        if outcome.findings.get("status") == "step-limit":
            break  # an endless loop at this size: another launch would only spend the time budget again
    status = "error" if any(r.get("error") for r in launches) else "ok"
    return {"id": task.id, "status": status, "launches": launches}, False


def _launch_once(task: Task, seed: int, spec: Spec, harness: Harness, device: Device, kernel: Any, budget: Budget,
                 release: Any = None):
    """One launch at one seed: its record and outcome. `release` frees its buffers (default: device.free)."""
    sizes = dict(task.sizes)
    rng = np.random.default_rng(seed)
    inputs = harness.make_inputs(sizes, rng)
    damage: dict[str, Any] = {}
    # A share of the GPU for this launch's device work only (uploads, kernels, read-back, canaries,
    # release), not for the reference computed on the CPU below.
    with device.using():
        start = time.perf_counter()
        launched = launch_kernel(spec, device, kernel, sizes, inputs, step_limit=budget.step_limit, seconds=budget.seconds)
        seconds = round(time.perf_counter() - start, 4)
        outcome, buffers, outputs = budget.explain(launched.outcome), launched.buffers, launched.contents
        if not outcome.fatal:  # after a fatal error the context is gone: nothing to read or release
            damage = {name: d for name, buf in buffers.items() if (d := device.canary_damage(buf))}
            (release or device.free)(list(buffers.values()))
    record: dict[str, Any] = {"seed": seed, "seconds": seconds, "grid": launched.grid, "block": launched.block}
    if outcome.findings:
        record["emu"] = outcome.findings
    if outcome.error:
        record["error"] = outcome.error
        if outcome.fatal:
            return record, outcome
    if damage:
        record["canary"] = damage
    modified = [p.name for p in spec.kernel.buffers if p.role == "in" and not np.array_equal(outputs[p.name].view(np.uint8), np.ascontiguousarray(inputs[p.name]).ravel().view(np.uint8))]
    if modified:
        record["inputs_modified"] = modified
    out_names = [p.name for p in spec.kernel.outputs]
    record["digest"] = hashlib.sha256(b"".join(outputs[n].tobytes() for n in out_names)).hexdigest()
    if task.compare and not outcome.error:
        # The reference is computed only now, after the student's kernel has finished, and stays
        # in host memory: no student code can ever read it.
        expected, magnitude = _expected(harness, seed, sizes, inputs)
        record["compare"] = compare(spec, sizes, {n: outputs[n] for n in out_names}, expected, magnitude)
    return record, outcome


_LAST_EXPECTED: dict[tuple, tuple] = {}


def _size_key(task: Task) -> tuple:
    return tuple(sorted(task.sizes.items()))


def _expected(harness: Harness, seed: int, sizes: Mapping[str, int], inputs: Mapping[str, np.ndarray]):
    """The float64 reference and its error scale; repeated launches with the same seed and sizes (the
    race check's) reuse the last one rather than redo a large float64 product each time."""
    key = (seed, tuple(sorted(sizes.items())))
    if key not in _LAST_EXPECTED:
        _LAST_EXPECTED.clear()
        expected = harness.reference(inputs, sizes)
        _LAST_EXPECTED[key] = (expected, harness.magnitude(inputs, sizes, expected))
    return _LAST_EXPECTED[key]


def compare(spec: Spec, sizes: Mapping[str, int], got: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray],
            magnitude: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """Compare outputs with the float64 reference under the spec's tolerance; name the first bad element."""
    tol = spec.tolerance
    terms = float(expressions.evaluate(tol.terms, sizes))
    total = bad = nan = kept = 0
    first = None
    worst = 0.0
    poisoned = {p.name for p in spec.kernel.params if p.role == "out"}  # filled with the poison pattern
    for name, want in expected.items():
        if name in poisoned:
            kept += int(np.count_nonzero(untouched(got[name])))
        have = got[name].astype(np.float64).reshape(want.shape)
        allowed = tol.atol + tol.rtol * np.abs(want) + tol.ulps * 2.0**-24 * max(terms, 1.0) * magnitude[name]
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.abs(have - want)
            wrong = ~(err <= allowed)  # NaN and inf count as wrong
        total += want.size
        count = int(np.count_nonzero(wrong))
        bad += count
        nan += int(np.count_nonzero(np.isnan(have)))
        finite = np.isfinite(err)
        if finite.any():
            # An exact comparison allows 0: a wrong element's ratio to the floor overflows to inf.
            with np.errstate(over="ignore"):
                worst = max(worst, float(np.max(err[finite] / np.maximum(allowed[finite], 1e-300))))
        if count and first is None:
            idx = tuple(int(i) for i in np.argwhere(wrong)[0])
            first = {"param": name, "index": list(idx), "got": _num(have[idx]), "want": _num(want[idx]), "tol": _num(allowed[idx])}
    # nan counts every NaN; untouched only those still holding the grader's pattern (never written)
    return {"ok": bad == 0, "bad": bad, "total": total, "nan": nan, "untouched": kept, "first": first,
            "worst_ratio": _num(round(worst, 4))}  # "inf" where an exact comparison failed


def _num(x: Any) -> float | str:
    x = float(x)
    return x if np.isfinite(x) else str(x)


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, (tuple, set)):
        return list(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main(sys.argv[1:]))
