"""The child-process side: execute tasks on a backend and stream one JSON line per finished task.

Run as `python -m grader.run.child.runner JOB.json`. The parent (grader.run.parent.supervisor) starts it inside the
sandbox, possibly wrapped by ncu or compute-sanitizer. Results go to the job's results file,
never to stdout, which belongs to the student's printf.

A batch's warm GPU workers (grader.run.child.warm_worker) run the same jobs, one grading's after
another, in one process.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Mapping

if __name__ == "__main__" and sys.argv[2:4] == ["--prestart", "gpu"]:
    # Before the imports below: the CUDA context is made while they run (grader.run.child.cuda_context).
    from .cuda_context import open_early

    open_early()

import numpy as np  # noqa: E402 - after the context's start, on purpose

from ...backends import Device, open_device
from ...exercise import Exercise, Harness
from ...exercise import load as load_exercise
from .cases import CaseSource, planned_cases
from .comparison import compared, output_digest
from .launch import launch_kernel, load_chain
from .launch_budget import Budget, Budgets
from ...spec import Spec
from ..parent.supervisor import wait_for_file
from ..tasks import EXIT_FATAL, HarnessFault, Task, TaskResult, faulted, harness_fault, skipped_for, unmet_requirements


def main(argv: list[str]) -> int:
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
    try:
        harness = Harness(exercise)
    except Exception as exc:  # noqa: BLE001 - harness.py does not import: every task is the exercise's fault
        fault = harness_fault(exc, exercise.root)
        if fault is None:
            raise
        for one in job.get("jobs", [job]):
            _all_faulted(one, fault)
        return 0
    device = device or open_device(job["backend"], pool=job.get("pool", True))
    ready = time.time()  # imports done, device open: the rest is the tasks' own time
    if "jobs" in job:
        return _run_jobs(job, exercise, harness, device, ready)
    code = _run_job(job, job, exercise, harness, device, ready)
    return 0 if code is None else code


def _all_faulted(job: Mapping[str, Any], fault: HarnessFault) -> None:
    """Every task of a job reported as stopped by the exercise's own code."""
    with open(job["results"], "a", encoding="utf-8") as out:
        for raw in job["tasks"]:
            out.write(json.dumps(faulted(Task.from_json(raw), fault)) + "\n")


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
    tasks = [Task.from_json(raw) for raw in job["tasks"]]
    cases = CaseSource(harness, planned_cases(tasks))
    try:
        with open(job["results"], "a", encoding="utf-8") as out:
            for task in tasks:
                code = _run_task(task, finished, out, ready, exercise, harness, device, modules, budgets, cases,
                                 release=release)
                if code is not None:
                    return code
    finally:
        cases.close()
    return None


def _run_task(task: Task, finished: dict[str, TaskResult], out: Any, ready: float, exercise: Exercise, harness: Harness,
              device: Device, modules: Mapping[str, str], budgets: Budgets, cases: CaseSource,
              release: Any = None) -> int | None:
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
        try:
            result, fatal = _execute(task, exercise, harness, device, modules, budgets, cases, release)
        except Exception as exc:  # noqa: BLE001 - sorted below: the exercise's own code, or the grader's bug
            fault = harness_fault(exc, exercise.root)
            if fault is None:
                raise
            # The staff's code raised (make_inputs, reference, ...): a value, so the parent can tell the
            # student it is not their doing and give staff the traceback.
            result, fatal = faulted(task, fault), False
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
             cases: CaseSource, release: Any = None):
    spec = exercise.spec
    if task.kind == "time":
        from .timing import time_task

        return time_task(task, exercise, harness, device, modules, cases), False
    # The reference's cost at this size is measured before the submission's kernel is loaded or run.
    budget = budgets.for_sizes(task.sizes) if task.module == "submission" else budgets.fixed()
    kernel = load_chain(device, modules[task.module], spec)
    launches = []
    for seed in task.seeds:
        earlier = budgets.stopped_at(task.sizes) if task.module == "submission" else None
        if earlier is not None:
            # It already ran out of its budget at this size (another check's launch): spending the
            # budget again would only delay the verdict.
            launches.append({**earlier, "seed": seed, "seconds": 0.0, "repeated": True})
            break
        record, outcome = _launch_once(task, seed, spec, cases, device, kernel, budget, release)
        launches.append(record)
        if task.module == "submission" and outcome.findings.get("status") == "step-limit":
            budgets.stopped(task.sizes, {k: v for k, v in record.items() if k in ("grid", "block", "emu", "error")})
        if outcome.findings.get("status") == "time-limit":  # a GPU kernel still running: no further launch can
            return {"id": task.id, "status": "timeout", "message": outcome.error, "launches": launches}, True
        if outcome.fatal:
            return {"id": task.id, "status": "error", "message": outcome.error, "launches": launches}, True
        if outcome.findings.get("status") == "step-limit":
            break  # an endless loop at this size: another launch would only spend the time budget again
    status = "error" if any(r.get("error") for r in launches) else "ok"
    return {"id": task.id, "status": status, "launches": launches}, False


def _launch_once(task: Task, seed: int, spec: Spec, cases: CaseSource, device: Device, kernel: Any, budget: Budget,
                 release: Any = None):
    """One launch at one seed: its record and outcome. `release` frees its buffers (default: device.free)."""
    sizes = dict(task.sizes)
    case = cases.case(seed, sizes, reference=task.compare)
    inputs = case.inputs
    damage: dict[str, Any] = {}
    # A share of the GPU for this launch's device work only (uploads, kernels, read-back, canaries,
    # release), not for the reference computed on the CPU below.
    with device.using():
        start = time.perf_counter()
        launched = launch_kernel(spec, device, kernel, sizes, inputs, step_limit=budget.step_limit, seconds=budget.seconds,
                                 work=budget.work)
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
    answer = {n: outputs[n] for n in out_names}
    record["digest"] = output_digest(answer)
    if task.compare and not outcome.error:
        # The reference lives in host memory only (grader.run.child.cases): no student code can read it.
        record["compare"] = compared(case, spec, sizes, answer, record["digest"])
    return record, outcome


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, (tuple, set)):
        return list(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main(sys.argv[1:]))
