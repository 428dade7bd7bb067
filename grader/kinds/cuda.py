"""The CUDA kind: a kernel (a .cu file, or a notebook's kernel cell) compiled with NVRTC, run on a GPU
or the CPU emulator, and judged by the checks of grader.checks.

The pipeline, in order: read and the source policy (read) -> the backend (the GPU probe runs
meanwhile, and on a machine with a driver the GPU children start before it answers) -> children
that can start before the compile (prestart) -> compile (grader.kinds.cuda_compile) -> every check
plans its launches -> one batch of launches per backend (_run_planned) -> every check judges, in the
spec's order -> the Report.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Callable, Mapping, Sequence

from .. import notebook as notebook_module
from ..checks import REGISTRY, Context
from ..checks.base import harness_fault
from ..checks.correctness import case_problem
from ..checks.counters import NCU_STAGE, ncu_prestart
from ..checks.hidden import STAGE as HIDDEN_STAGE
from ..checks.hidden import HiddenTestsCheck, hidden_prestart
from ..exercise import Exercise
from ..grading.backend import BACKENDS, ask_for_gpu, driver_present, resolve_backend
from ..grading.children import child_env, grading_tag
from ..grading.not_run import every_check_not_run, grader_broken, not_compiled
from ..grading.output import shown_output
from ..grading.seed import class_seed, derive_seed
from ..grading.submitted import Submitted
from ..grading.validation import Validation
from ..results import NotRun, Report, TestResult, inert
from ..run.parent import gpu_worker
from ..run.parent.device_probe import GpuInfo
from ..run.parent.sandbox import TAG_VARIABLE, kill_tagged
from ..run.parent.stage_clock import StageClock
from ..run.parent.supervisor import StageStop, TaskSupervisor, grading_deadline
from ..run.tasks import TaskResult
from ..spec import CATEGORIES
from ..tools import Tools, find_tools
from . import cuda_staff
from .base import Grade, KindTraits, Options
from .cuda_compile import compile_problem, compile_submission, compile_test


class CudaKind:
    """Kernel exercises (spec kind "cuda")."""

    name = "cuda"
    traits = KindTraits(suffix=".cu", python_source=False, on_gpu=True, sized=True, profiled=True)
    gradescope_readme = cuda_staff.GRADESCOPE_README

    def read(self, exercise: Exercise, path: Path) -> Submitted:
        """The .cu file, or the kernel cell of a notebook, read once and held to the source policy."""
        sub, verdict, where = notebook_module.read_checked(path, exercise.spec.limits)
        return Submitted(name=where.name, source=sub.source if sub else None, sha256=sub.sha256 if sub else None,
                         verdict=verdict, where=where)

    def grade(self, exercise: Exercise, submitted: Submitted, options: Options) -> Report:
        """Grade one kernel submission on the backend asked for; never raises for student errors."""
        if options.backend not in BACKENDS:
            resolve_backend(options.backend)  # the usage error, before anything starts
        answer = ask_for_gpu(options.backend)
        # Absolute: the children run in folders of their own, where a relative path names nothing.
        tmp = Path(options.workdir).absolute() if options.workdir else Path(tempfile.mkdtemp(prefix="kernel-grader-"))
        tmp.mkdir(parents=True, exist_ok=True)
        try:
            return _grade(exercise, submitted, options.backend, answer, options.seed, tmp, options.started)
        finally:
            if TAG_VARIABLE not in os.environ:
                # Nothing this grading started outlives it: a stage abandoned mid-run, a prestarted child
                # never used, or all of them when the grading is interrupted (Ctrl-C, a `kill`). Under a
                # batch the tag is the batch's, and the batch does this for the whole child.
                kill_tagged(grading_tag(tmp))
            if not options.keep_workdir and not options.workdir:
                shutil.rmtree(tmp, ignore_errors=True)

    def not_graded(self, exercise: Exercise, backend: str, reason: str) -> tuple[list[TestResult], list[NotRun]]:
        """The compile test failed with `reason`, every other check gated (as a refused submission)."""
        return not_compiled(exercise.spec, backend, reason)

    def summary(self, exercise: Exercise) -> str:
        """The kernel and the checks with their points."""
        return cuda_staff.summary(exercise)

    def student_bundle(self, exercise: Exercise, out: Path, pip_source: str):
        """README, skeleton.cu, the public spec, the harness, the reference's counters and a notebook."""
        return cuda_staff.build_student_bundle(exercise, out, pip_source)

    def hidden_in_bundle(self, exercise: Exercise) -> list[str]:
        """Hidden sizes, solution or wrong-corpus lines, hidden tests' lines found in the built bundle."""
        return cuda_staff.hidden_in_bundle(exercise)

    def validate(self, exercise: Exercise, *, grade: Grade, conventions: Callable[[Exercise, Validation], None],
                 backend: str, seed: int, progress: Callable[[str], None]) -> Validation:
        """The reference, the skeleton and the wrong corpus graded on the backend asked for."""
        return cuda_staff.validate(exercise, grade=grade, conventions=conventions, backend=backend, seed=seed,
                                   progress=progress)


def _grade(exercise: Exercise, sub: Submitted, requested: str, answer: Future | None, seed: int | None, tmp: Path,
           started: float) -> Report:
    spec = exercise.spec
    clock = StageClock(origin=started, origin_epoch=time.time() - (time.perf_counter() - started))
    runner = TaskSupervisor(exercise_root=exercise.root, workdir=tmp, modules={}, limits=spec.limits, env=child_env(tmp), clock=clock)
    early: dict = {}
    try:
        if sub.ok and answer is not None and driver_present():
            # Started while the probe runs; kept only if it finds the GPU they were started for.
            early = prestart(exercise, "gpu", runner, find_tools())
        backend, gpu, note = resolve_backend(requested, answer)
        if backend != "gpu":
            for child in early.values():
                child.cancel()
            early = {}
        notes = [note] if note else []
        return _checked(exercise, sub, backend, gpu, seed, runner, early, notes)
    finally:
        for child in early.values():  # those no stage took: the submission did not compile, or no check needed them
            child.cancel()


def _checked(exercise: Exercise, sub: Submitted, backend: str, gpu: GpuInfo | None, seed: int | None,
             runner: TaskSupervisor, early: dict, notes: list[str]) -> Report:
    """The grading once the backend is known: refused, or compiled and checked."""
    spec = exercise.spec
    device = gpu.name if gpu else "CPU emulator"
    clock, started = runner.clock, runner.clock.origin
    if sub.where.note():
        notes.append(sub.where.note())
    shared = class_seed(spec.id, seed)  # from --seed or the exercise: not from the submission's seed below
    if seed is None:
        seed = derive_seed(spec.id, sub.sha256)

    def report(tests: Sequence[TestResult], not_run: Sequence[NotRun] = (), output: str = "") -> Report:
        # A test's output may quote the student's source (a compiler error's excerpt, a finding's
        # line), and a source may hold a terminal escape or a bidirectional override: made inert here,
        # the results JSON, the terminal and the pages all show it harmlessly.
        tests = [dataclasses.replace(t, output=inert(t.output)) for t in tests]
        return Report(exercise=spec.id, submission=sub.name, sha256=sub.sha256, backend=backend,
                      device=device, tests=tuple(tests), not_run=tuple(not_run), max_score=spec.max_score,
                      seconds=time.perf_counter() - started, seeds={"base": seed}, notes=tuple(inert(n) for n in notes),
                      student_output=output, stages=clock.stages())

    if not sub.ok:
        tests, skipped = not_compiled(spec, backend, f"Refused before compiling: {sub.verdict.message}")
        return report(tests, skipped)

    tools = find_tools() if backend == "gpu" else Tools()
    if not early:  # (GPU children already started while the probe ran are kept)
        early.update(prestart(exercise, backend, runner, tools))
    return _compile_and_check(exercise, sub, backend, gpu, (seed, shared), runner, tools, early, notes, report)


def prestart(exercise: Exercise, backend: str, runner: TaskSupervisor, tools: Tools) -> dict:
    """Children that can start before the submission has compiled, by stage: the launch child, ncu
    and the hidden tests' pytest. Their start-up (Python, CuPy, a CUDA context, ncu's own) then
    overlaps the compile; each waits for its job file, at most `wait` seconds (both compiles, and a
    margin) before it gives up."""
    wait = exercise.spec.limits.compile_seconds * 2 + 10
    early = {}
    if not (backend == "gpu" and runner.env.get(gpu_worker.VARIABLE)):  # a batch slot's warm workers need none
        early[f"{backend} launches"] = runner.prestart(backend, wait=wait)
    if backend == "gpu" and exercise.solution_path.exists():
        early[NCU_STAGE] = ncu_prestart(exercise.spec, runner, tools, wait)
    if exercise.spec.hidden_tests and not (backend == "gpu" and runner.env.get(gpu_worker.TESTS_VARIABLE)):
        early[HIDDEN_STAGE] = hidden_prestart(exercise, backend, runner, wait)
    return {stage: child for stage, child in early.items() if child is not None}


def _compile_and_check(exercise: Exercise, sub: Submitted, backend: str, gpu: GpuInfo | None, seeds: tuple[int, int],
                       runner: TaskSupervisor, tools: Tools, early: dict, notes: list[str], report) -> Report:
    """Compile, plan every check's launches, run them, and judge: the Report, through `report`.
    `seeds`: the grading's base seed and the class's (grader.grading.seed.class_seed)."""
    seed, shared = seeds
    where = sub.where
    spec = exercise.spec
    tmp = runner.workdir
    with runner.clock.measure("compile"):
        compiled = compile_submission(exercise, sub, gpu.arch if gpu else "sm_90", tmp)
    if "_tool_error" in compiled:
        tests, skipped = grader_broken(spec, compiled["_tool_error"]["log"])
        return report(tests, skipped)
    mine = dict(compiled.get("submission", {}))
    mine["log"] = where.rewrite_log(mine.get("log", ""))  # line numbers a notebook's author can find
    problem = compile_problem(spec, sub.name, mine)
    if problem:
        tests, skipped = not_compiled(spec, backend, problem)
        return report(tests, skipped)
    compiled_test = compile_test(spec, mine)
    ref = compiled.get("reference", {})
    has_reference = bool(ref.get("ok"))
    if exercise.solution_path.exists() and not has_reference:
        notes.append("The reference solution did not compile here; checks that compare with it were not run.")
    runner.modules = {
        "gpu": {k: v["cubin"] for k, v in compiled.items() if v.get("ok")},
        "emu": {k: v["ptx"] for k, v in compiled.items() if v.get("ok")},
    }
    # The whole grading should end within both compiles and one run limit (docs/limits.md): a
    # sanitizer that only starts after the launches (the emulator could not run the kernel) gets
    # what is left of that, not a run limit of its own.
    deadline = time.monotonic() - (time.perf_counter() - runner.clock.origin) + 2 * spec.limits.compile_seconds + spec.limits.run_seconds
    ctx = Context(exercise=exercise, backend=backend, runner=runner, seed=seed, class_seed=shared, tools=tools, source_name=sub.name,
                  source=sub.source, place=where.describe, has_reference=has_reference, emu_available=_emu_importable(), prestarted=early,
                  deadline=deadline)
    tests: list[TestResult] = [compiled_test] if compiled_test else []
    order = [c for c in CATEGORIES if c in spec.checks and c in REGISTRY]
    hidden = HiddenTestsCheck(spec.hidden_tests.category) if spec.hidden_tests else None
    with ThreadPoolExecutor(max_workers=6) as pool:
        ctx.pool = pool
        for category in order:
            for task in REGISTRY[category].plan(ctx, spec.checks[category]):
                ctx.planned.setdefault(task.id, task)
        if hidden:
            for task in hidden.plan(ctx, spec.hidden_tests):
                ctx.planned.setdefault(task.id, task)
        # Timing goes last in its batch: after every other launch of the submission.
        ctx.planned = dict(sorted(ctx.planned.items(), key=lambda item: item[1].kind == "time"))
        _release_gpu_when_idle(ctx)
        output = _run_planned(ctx)
        fault = harness_fault(ctx)
        if fault is not None:
            # The exercise's own code raised: no launch can be judged, so nothing is scored for the
            # student (every check's points leave the denominator) and `grade` exits 1.
            for stage in list(ctx.background):
                ctx.abandon(stage)
            skipped = every_check_not_run(spec, order, fault.reason, grader_fault=True, detail=fault.detail)
            notes.append(f"Not graded: the exercise's own code failed ({fault.where}), so no check could be judged and "
                         "nothing was counted against you. The course staff need to fix the exercise; then grade again.")
            return report(tests, skipped, output=output)
        beyond = _beyond_emulator(ctx) if backend == "emu" else None
        if beyond:
            # Not the student's fault and not a verdict: every check is listed as not run, none passed.
            # Its points stay in the denominator whatever the exercise's policy: "not graded" is no score.
            reason = "the emulator cannot run this kernel (see the note below); grade it on a GPU"
            skipped = every_check_not_run(spec, order, reason, policy="zero")
            notes.append(f"Not graded on the emulator: {where.rewrite_text(beyond)}. Nothing was counted as passed; a GPU can grade it.")
            return report(tests, skipped, output=output)
        for category in order:
            tests.extend(REGISTRY[category].judge(ctx, spec.checks[category]))
            if category == "correctness" and ctx.correctness is not None and not ctx.correctness.all_passed:
                # Counter checks are gated on correctness: ncu's counts will not be read, and a kernel
                # that hangs under ncu (no launch budget there) would hold the grading to the run limit.
                ctx.abandon(NCU_STAGE)
        if hidden:
            tests.extend(hidden.judge(ctx, spec.hidden_tests))
    if where.is_notebook:  # the emulator's own details say "at line N" of the extracted kernel
        tests = [dataclasses.replace(t, output=where.rewrite_text(t.output)) for t in tests]
    return report(tests, ctx.not_run, output=output)


def _release_gpu_when_idle(ctx: Context) -> None:
    """Create the files timing tasks wait for once every background stage but the ncu run has finished
    (the hidden tests, whose exercise code does CuPy work between launches without a share of the GPU;
    a sanitizer, rare on a GPU with the emulator at hand), so nothing else runs on the GPU while it is
    timed. The ncu run is a runner child that does all its GPU work inside launches that each hold a
    share of the GPU's lock (grader.run.gpu_lock), so none of it runs while a kernel is timed; waiting
    for it only made a correct submission's timing start after the whole ncu run (2 s on an H200)."""
    paths = {Path(t.after) for t in ctx.planned.values() if t.after}
    if not paths:
        return
    stages = [stage for key, stage in ctx.background.items() if key != NCU_STAGE]

    def release() -> None:
        try:
            wait(stages)
        finally:
            for path in paths:
                # The grading may already be over and its folder gone (its launch child skipped the
                # timing, and the judging waited for the same stages): then nobody is waiting.
                with contextlib.suppress(OSError):
                    path.touch()

    threading.Thread(target=release, name="release-gpu", daemon=True).start()


def _run_planned(ctx: Context) -> str:
    """Run every planned launch, one child batch per backend; return what the kernels printed."""
    batches = {b: [t for t in ctx.planned.values() if t.backend == b] for b in ("gpu", "emu")}
    stops = {b: StageStop() for b in batches}
    # The emulator needs only the CPU: its batch runs beside the GPU batch rather than after it.
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {b: pool.submit(ctx.runner.run, tasks, backend=b, prestarted=ctx.take_prestart(f"{b} launches"),
                                  stop=stops[b], on_results=_profile_only_if_right(ctx) if b == "gpu" else None)
                   for b, tasks in batches.items() if tasks}
        if "gpu" in futures and "emu" in futures and _hung_at_every_size(futures["gpu"].result().results):
            # A kernel that hung on the GPU and got no size right: every check that reads the emulator's
            # findings is gated on a right size, and the emulator would spin on the same loop until its
            # own step budget (about 15 s on an H200's host for level2's hostile spinners).
            stops["emu"].set()
        stages = [f.result() for f in futures.values()]
    if "gpu" in futures:
        # Every child still running (ncu, the hidden tests) ends by a deadline derived from what the
        # submission's own launches took, not at the run limit.
        ctx.launches_done = time.monotonic()
        derived = grading_deadline(futures["gpu"].result(), ctx.launches_done)
        ctx.deadline = derived if ctx.deadline is None else min(ctx.deadline, derived)
    printed = []
    for stage in stages:
        ctx.results.update(stage.results)
        printed += [c.stdout for c in stage.children if c.stdout.strip()]
    return shown_output("\n".join(printed))


def _profile_only_if_right(ctx: Context) -> Callable[[Mapping[str, TaskResult]], None]:
    """Stop the ncu run as soon as a GPU child reports a size wrong or not finished, not once the
    launches are all judged: its counts would never be read (the counter checks are gated on
    correctness), and a kernel that is slow (a printf from every thread) can take minutes under the
    profiler's replays, holding the GPU that the rest of the grading's launches wait for."""

    def seen(done: Mapping[str, TaskResult]) -> None:
        if any(tid.startswith("correctness:") and case_problem(r, {}) is not None for tid, r in done.items()):
            ctx.abandon(NCU_STAGE)

    return seen


def _hung_at_every_size(results: Mapping[str, TaskResult]) -> bool:
    """A launch of the correctness check was stopped as a hang and no size was right."""
    runs = [r for tid, r in results.items() if tid.startswith("correctness:")]
    hung = any(r.status == "timeout" for r in runs)  # the child stopped a GPU kernel at its launch's limit
    return hung and all(case_problem(r, {}) is not None for r in runs)


def _beyond_emulator(ctx: Context) -> str | None:
    """What the emulator could not run in the submission's launches (an opcode it lacks), or None."""
    for task_id, task in ctx.planned.items():
        result = ctx.results.get(task_id)
        if task.backend != "emu" or task.module != "submission" or result is None:
            continue
        for launch in result.launches:
            emu = launch.get("emu", {})
            if emu.get("status") == "unsupported":
                return emu.get("message") or "an unsupported instruction"
    return None


def _emu_importable() -> bool:
    """Whether the emulator can be imported here: the checks that read its findings run only then."""
    try:
        from ..emu import Emulator  # noqa: F401
    except ImportError:
        return False
    return True
