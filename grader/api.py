"""grade(): the one orchestrator. Exercise -> policy -> compile -> planned launches -> checks -> Report.

Defaults live here, once; the CLI reads them from this signature.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import hashlib
import shutil
import tempfile
import time
import threading
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Mapping, Sequence

from .run.parent import compile_cache, gpu_worker, math_threads
from . import exercise as exercise_module
from . import notebook as notebook_module
from . import submission as submission_module
from .checks import NAMES, REGISTRY, Context
from .checks.base import harness_fault
from .checks.correctness import case_problem
from .checks.counters import NCU_STAGE, ncu_prestart
from .checks.hidden import NAME as HIDDEN_NAME
from .checks.hidden import STAGE as HIDDEN_STAGE
from .checks.hidden import HiddenTestsCheck, hidden_prestart
from .compile import entry_names, kernel_param_types
from .run.parent.device_probe import GpuInfo, probe
from .errors import UsageError
from .exercise import Exercise
from .results import NotRun, Report, TestResult, inert
from .run.parent.sandbox import TAG_VARIABLE, kill_tagged, python_argv, run_child
from .spec import CATEGORIES, Spec
from .run.tasks import TaskResult
from .run.parent.stage_clock import StageClock
from .run.parent.supervisor import TaskSupervisor, child_limits
from .tools import Tools, find_tools

BACKENDS = ("auto", "gpu", "emu")
SECRET_VARIABLE = "KERNEL_GRADER_SECRET"  # a course's secret, mixed into every seed (derive_seed)
_PTX_TYPES = {"int": {"u32", "s32", "b32"}, "unsigned int": {"u32", "s32", "b32"}, "float": {"f32", "b32"},
              "long long": {"u64", "s64", "b64"}, "unsigned long long": {"u64", "s64", "b64"}, "double": {"f64", "b64"}}


def resolve_backend(requested: str, answer: Future | None = None) -> tuple[str, GpuInfo | None, str]:
    """("gpu" | "emu", GPU info, note). --backend gpu without a GPU is a usage error with a one-line
    reason. `answer`: a probe already under way (ask_for_gpu), else the probe runs now."""
    if requested not in BACKENDS:
        raise UsageError(f"unknown backend {requested!r}; choose one of {', '.join(BACKENDS)}")
    if requested == "emu":
        return "emu", None, ""
    info = answer.result() if answer is not None else probe()
    if info.available:
        return "gpu", info, ""
    if requested == "gpu":
        raise UsageError(f"--backend gpu: no usable GPU ({info.reason})")
    return "emu", None, f"No GPU is visible ({info.reason}), so this was graded on the CPU emulator; performance needs a GPU."


def ask_for_gpu(requested: str) -> Future | None:
    """Start the GPU probe in the background (None for --backend emu): the grading meanwhile reads
    the submission and, on a machine with an NVIDIA driver, starts its GPU children."""
    if requested == "emu" or requested not in BACKENDS:
        return None
    answer: Future = Future()

    def ask() -> None:
        try:
            answer.set_result(probe())
        except BaseException as exc:  # noqa: BLE001 - raised again where the answer is read
            answer.set_exception(exc)

    threading.Thread(target=ask, name="gpu-probe", daemon=True).start()
    return answer


def _driver_present() -> bool:
    """Whether this machine has an NVIDIA driver at all (its device files): only then is it worth
    starting GPU children before the probe has answered."""
    return any(os.path.exists(p) for p in ("/dev/nvidiactl", "/proc/driver/nvidia/version"))


def grade(exercise_dir: Path, submission: Path, *, backend: str = "auto", seed: int | None = None,
          workdir: Path | None = None, keep_workdir: bool = False) -> Report:
    """Grade one submission against one exercise and return the Report (never raises for student errors)."""
    started = time.perf_counter()
    exercise = exercise_module.load(Path(exercise_dir))
    if exercise.kind == "python":  # functions in a Python child, no kernel and no backend to choose
        from .pyexercise import grade as pygrade

        return pygrade.grade(exercise, Path(submission), seed=seed, started=started)
    if backend not in BACKENDS:
        resolve_backend(backend)  # the usage error, before anything starts
    answer = ask_for_gpu(backend)
    # Absolute: the children run in folders of their own, where a relative path names nothing.
    tmp = Path(workdir).absolute() if workdir else Path(tempfile.mkdtemp(prefix="kernel-grader-"))
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        return _grade(exercise, Path(submission), backend, answer, seed, tmp, started)
    finally:
        if TAG_VARIABLE not in os.environ:
            # Nothing this grading started outlives it: a stage abandoned mid-run, a prestarted child
            # never used, or all of them when the grading is interrupted (Ctrl-C, a `kill`). Under a
            # batch the tag is the batch's, and the batch does this for the whole child.
            kill_tagged(grading_tag(tmp))
        if not keep_workdir and not workdir:
            shutil.rmtree(tmp, ignore_errors=True)


def derive_seed(exercise_id: str, sha256: str | None, secret: str | None = None) -> int:
    """The base seed of a grading: from the exercise, the submission's exact bytes and the course's
    secret ($KERNEL_GRADER_SECRET, where staff set one), so a regrade of the same file draws the same
    inputs and gets the same results, while students cannot know the inputs without the secret."""
    secret = os.environ.get(SECRET_VARIABLE, "") if secret is None else secret
    text = "\0".join(["kernel-grader seed", exercise_id, sha256 or "unreadable", secret])
    return int.from_bytes(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:4], "little") & 0x7FFFFFFF


def _grade(exercise: Exercise, path: Path, requested: str, answer: Future | None, seed: int | None, tmp: Path,
           started: float) -> Report:
    spec = exercise.spec
    clock = StageClock(origin=started, origin_epoch=time.time() - (time.perf_counter() - started))
    sub, verdict, where = notebook_module.read_checked(path, spec.limits)
    runner = TaskSupervisor(exercise_root=exercise.root, workdir=tmp, modules={}, limits=spec.limits, env=child_env(tmp), clock=clock)
    early: dict = {}
    try:
        if verdict.ok and answer is not None and _driver_present():
            # Started while the probe runs; kept only if it finds the GPU they were started for.
            early = prestart(exercise, "gpu", runner, find_tools())
        backend, gpu, note = resolve_backend(requested, answer)
        if backend != "gpu":
            for child in early.values():
                child.cancel()
            early = {}
        notes = [note] if note else []
        return _checked(exercise, path, sub, verdict, where, backend, gpu, seed, runner, early, notes)
    finally:
        for child in early.values():  # those no stage took: the submission did not compile, or no check needed them
            child.cancel()


def _checked(exercise: Exercise, path: Path, sub, verdict, where: notebook_module.SourceMap, backend: str,
             gpu: GpuInfo | None, seed: int | None, runner: TaskSupervisor, early: dict, notes: list[str]) -> Report:
    """The grading once the backend is known: refused, or compiled and checked."""
    spec = exercise.spec
    device = gpu.name if gpu else "CPU emulator"
    clock, started = runner.clock, runner.clock.origin
    if where.note():
        notes.append(where.note())
    if seed is None:
        seed = derive_seed(spec.id, sub.sha256 if sub else None)

    def report(tests: Sequence[TestResult], not_run: Sequence[NotRun] = (), sha: str | None = None, output: str = "") -> Report:
        # A test's output may quote the student's source (a compiler error's excerpt, a finding's
        # line), and a source may hold a terminal escape or a bidirectional override: made inert here,
        # the results JSON, the terminal and the pages all show it harmlessly.
        tests = [dataclasses.replace(t, output=inert(t.output)) for t in tests]
        return Report(exercise=spec.id, submission=submission_module.display_name(path), sha256=sha, backend=backend,
                      device=device, tests=tuple(tests), not_run=tuple(not_run), max_score=spec.max_score,
                      seconds=time.perf_counter() - started, seeds={"base": seed}, notes=tuple(inert(n) for n in notes),
                      student_output=output, stages=clock.stages())

    if not verdict.ok:
        tests, skipped = not_compiled(spec, backend, f"Refused before compiling: {verdict.message}")
        return report(tests, skipped, sha=sub.sha256 if sub else None)

    tools = find_tools() if backend == "gpu" else Tools()
    if not early:  # (GPU children already started while the probe ran are kept)
        early.update(prestart(exercise, backend, runner, tools))
    return _compile_and_check(exercise, sub, where, backend, gpu, seed, runner, tools, early, notes, report)


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


def _compile_and_check(exercise: Exercise, sub, where: notebook_module.SourceMap, backend: str, gpu: GpuInfo | None, seed: int, runner: TaskSupervisor, tools: Tools,
                       early: dict, notes: list[str], report) -> Report:
    spec = exercise.spec
    tmp = runner.workdir
    with runner.clock.measure("compile"):
        compiled = compile_submission(exercise, sub, gpu.arch if gpu else "sm_90", tmp)
    if "_tool_error" in compiled:
        tests, skipped = grader_broken(spec, compiled["_tool_error"]["log"])
        return report(tests, skipped, sha=sub.sha256)
    mine = dict(compiled.get("submission", {}))
    mine["log"] = where.rewrite_log(mine.get("log", ""))  # line numbers a notebook's author can find
    problem = compile_problem(spec, sub.name, mine)
    if problem:
        tests, skipped = not_compiled(spec, backend, problem)
        return report(tests, skipped, sha=sub.sha256)
    compile_test = _compile_test(spec, mine)
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
    ctx = Context(exercise=exercise, backend=backend, runner=runner, seed=seed, tools=tools, source_name=sub.name,
                  source=sub.source, place=where.describe, has_reference=has_reference, emu_available=_emu_importable(), prestarted=early,
                  deadline=deadline)
    tests: list[TestResult] = [compile_test] if compile_test else []
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
            return report(tests, skipped, sha=sub.sha256, output=output)
        beyond = _beyond_emulator(ctx) if backend == "emu" else None
        if beyond:
            # Not the student's fault and not a verdict: every check is listed as not run, none passed.
            # Its points stay in the denominator whatever the exercise's policy: "not graded" is no score.
            reason = "the emulator cannot run this kernel (see the note below); grade it on a GPU"
            skipped = every_check_not_run(spec, order, reason, policy="zero")
            notes.append(f"Not graded on the emulator: {where.rewrite_text(beyond)}. Nothing was counted as passed; a GPU can grade it.")
            return report(tests, skipped, sha=sub.sha256, output=output)
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
    return report(tests, ctx.not_run, sha=sub.sha256, output=output)


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
    stops = {b: threading.Event() for b in batches}
    # The emulator needs only the CPU: its batch runs beside the GPU batch rather than after it.
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {b: pool.submit(ctx.runner.run, tasks, backend=b, prestarted=ctx.take_prestart(f"{b} launches"),
                                  stop=stops[b])
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
        from .run.parent.supervisor import grading_deadline

        ctx.launches_done = time.monotonic()
        derived = grading_deadline(futures["gpu"].result(), ctx.launches_done)
        ctx.deadline = derived if ctx.deadline is None else min(ctx.deadline, derived)
    printed = []
    for stage in stages:
        ctx.results.update(stage.results)
        printed += [c.stdout for c in stage.children if c.stdout.strip()]
    text = student_text("\n".join(printed).strip())
    return text[:4000] + ("\n[... more output not shown]" if len(text) > 4000 else "")


def _hung_at_every_size(results: Mapping[str, TaskResult]) -> bool:
    """A launch of the correctness check was stopped as a hang and no size was right."""
    runs = [r for tid, r in results.items() if tid.startswith("correctness:")]
    hung = any(r.status == "timeout" for r in runs)  # the child stopped a GPU kernel at its launch's limit
    return hung and all(case_problem(r, {}) is not None for r in runs)


def student_text(text: str) -> str:
    """Kernel output made inert for the report: no control characters (terminal escapes), and no run
    of three backticks, which would close the Markdown fence around it and let the output pose as
    the grader's own text."""
    return re.sub(r"`{3,}", lambda m: "'" * len(m.group()), inert(text))


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


def compile_submission(exercise: Exercise, sub, arch: str, tmp: Path) -> Mapping[str, dict]:
    """Compile the submission (and the reference solution) in a child with the spec's time limit;
    sources compiled before with the same everything come from the compile cache instead."""
    src = tmp / "submission.cu"
    src.write_text(sub.source, encoding="utf-8")
    sources = [{"label": "submission", "path": str(src), "name": sub.name, "out": str(tmp / "submission")}]
    if exercise.solution_path.exists():
        sources.append({"label": "reference", "path": str(exercise.solution_path), "name": "solution.cu", "out": str(tmp / "reference")})
    limits = exercise.spec.limits
    root = compile_cache.cache_root()
    keys = {item["label"]: compile_cache.key(Path(item["path"]).read_text(encoding="utf-8", errors="replace"), item["name"],
                                             arch, limits.allowed_includes, limits.memory_bytes) for item in sources}
    done: dict[str, dict] = {}
    for item in sources:
        hit = compile_cache.load(root, keys[item["label"]], item["out"])
        if hit is not None:
            done[item["label"]] = hit
    todo = [item for item in sources if item["label"] not in done]
    if todo:
        fresh = _compile_in_child(todo, arch, limits, tmp)
        for label, entry in fresh.items():
            if label in keys:  # not the _timed_out/_describe notes of a compile that did not finish
                compile_cache.store(root, keys[label], entry)
        done.update(fresh)
    if "_tool_error" in done:
        return {"_tool_error": {"ok": False, "log": done["_tool_error"]}}
    if "submission" not in done:
        why = (f"the compiler stopped after the {limits.compile_seconds:.0f} s limit" if done.get("_timed_out")
               else f"the compiler {done.get('_describe', 'failed')}")
        done["submission"] = {"ok": False, "log": f"{why} (a compile-time bomb? deep template or macro recursion?)"}
    return {k: v for k, v in done.items() if not k.startswith("_")}


def grader_broken(spec: Spec, problem: str) -> tuple[list[TestResult], list[NotRun]]:
    """Nothing graded because the grader's own compiler is missing or broken: every check listed as
    not run by the grader's fault (no points lost), and no test failed."""
    reason = f"the grader could not compile anything here ({problem}); this is the grader's problem, not your submission's"
    return [], every_check_not_run(spec, list(spec.checks), reason, grader_fault=True)


def every_check_not_run(spec: Spec, categories: Sequence[str], reason: str, *, policy: str | None = None,
                        grader_fault: bool = False, detail: str = "") -> list[NotRun]:
    """The checks of `categories`, and the hidden tests, listed as not run for one reason, each with
    its points and the exercise's policy for them (or `policy` in its place); `detail` is for staff
    only (results.NotRun)."""
    skipped = [NotRun(NAMES[c], c, reason, spec.checks[c].points, policy or spec.checks[c].if_not_run, grader_fault, detail)
               for c in categories]
    if spec.hidden_tests:
        h = spec.hidden_tests
        skipped.append(NotRun(HIDDEN_NAME, h.category, reason, h.points, policy or h.if_not_run, grader_fault, detail))
    return skipped


def _compile_in_child(sources: list[dict], arch: str, limits, tmp: Path) -> dict[str, dict]:
    """Compile in a child: what it finished, by label (plus _timed_out/_describe when it did not end well)."""
    job = tmp / "compile.json"
    summary = tmp / "compile-summary.json"
    job.write_text(json.dumps({"sources": sources, "arch": arch, "summary": str(summary)}))
    limit = limits.compile_seconds
    # An empty working directory: nothing a relative #include could name. NVRTC is host code, so
    # the address-space cap applies (a macro bomb stops at it rather than at the machine's memory).
    cwd = tmp / "compile-cwd"
    cwd.mkdir(exist_ok=True)
    child = run_child(python_argv("grader.compile", str(job)), timeout=limit * len(sources), env=child_env(tmp),
                      output_cap=limits.output_bytes, cwd=str(cwd), limits=child_limits(limits, limit * len(sources)))
    done = json.loads(summary.read_text()) if summary.exists() else {}
    if "submission" not in done and any(item["label"] == "submission" for item in sources):
        done["_timed_out"] = child.timed_out or child.signal_name == "SIGXCPU"
        done["_describe"] = child.describe()
    return done


def compile_problem(spec: Spec, name: str, result: Mapping) -> str | None:
    """Why the submission cannot be graded after compiling: an error, a missing or mistyped kernel."""
    if not result.get("ok"):
        text = f"{name} does not compile:\n{result.get('log', '').strip()}"
        if result.get("hint"):
            text += f"\nHint: {result['hint']}"
        return text
    ptx = Path(result["ptx"]).read_text()
    for kernel in spec.kernel.chain:  # an exercise of several kernels checks each one
        problem = _kernel_problem(ptx, kernel)
        if problem:
            return problem
    return None


def _kernel_problem(ptx: str, kernel) -> str | None:
    """Why one kernel of the exercise is missing from the PTX or has the wrong parameters, or None."""
    types = kernel_param_types(ptx, kernel.name)
    if types is None:
        found = entry_names(ptx)
        mangled = [n for n in found if kernel.name in n]
        if len(mangled) > 1:
            return (f"There are {len(mangled)} kernels named {kernel.name} (C++ overloads: {', '.join(mangled)}) and none is "
                    f"extern \"C\". Keep exactly one, declared as:\n{kernel.signature}")
        if mangled:
            return f"The kernel {kernel.name} is not declared extern \"C\" (it was compiled as {mangled[0]}). Expected:\n{kernel.signature}"
        have = ", ".join(found) or "none"
        return f"No kernel named {kernel.name} was found (kernels in your file: {have}). Expected:\n{kernel.signature}"
    if len(types) != len(kernel.params):
        return f"{kernel.name} takes {len(types)} parameter(s); the exercise expects {len(kernel.params)}:\n{kernel.signature}"
    for p, t in zip(kernel.params, types):
        allowed = {"u64", "b64", "s64"} if p.is_pointer else _PTX_TYPES[p.type]
        if t not in allowed:
            return f"Parameter {p.name} of {kernel.name} has the wrong type (compiled as .{t}). Expected:\n{kernel.signature}"
    return None


def _compile_test(spec: Spec, result: Mapping) -> TestResult | None:
    conf = spec.checks.get("compile")
    warnings = result.get("log", "").strip()
    cached = " (cached)" if result.get("cached") else ""
    text = (f"Compiled with NVRTC ({' '.join(result.get('options', []))}) in {result.get('seconds', 0):.2f} s{cached}; "
            "the kernel has the expected signature.")
    if warnings:
        text += "\nCompiler warnings:\n" + warnings
    points = conf.points if conf else 0.0
    return TestResult("Compiles", "compile", points, points, True, text, visibility=conf.visibility if conf else "visible")


def not_compiled(spec: Spec, backend: str, message: str) -> tuple[list[TestResult], list[NotRun]]:
    """Every test of the exercise, failed: the compile test with the reason, the rest as not graded."""
    conf = spec.checks.get("compile")
    tests = [TestResult("Compiles", "compile", 0.0, conf.points if conf else 0.0, False, message,
                        visibility=conf.visibility if conf else "visible")]
    skipped = []
    for category, c in spec.checks.items():
        if category == "performance" and backend != "gpu":
            skipped.append(NotRun(NAMES[category], category, "needs a GPU", c.points, c.if_not_run))
        elif category != "compile":
            tests.append(TestResult(NAMES[category], category, 0.0, c.points, False, "Not graded: the submission did not compile.",
                                    visibility=c.visibility, extra={"gated": True}))
    if spec.hidden_tests:
        h = spec.hidden_tests
        tests.append(TestResult(HIDDEN_NAME, h.category, 0.0, h.points, False, "Not graded: the submission did not compile.",
                                visibility=h.visibility, extra={"gated": True}))
    return tests, skipped


def grading_tag(tmp: Path) -> str:
    """The tag ($KERNEL_GRADER_TAG, grader.run.parent.sandbox) every child of the grading in `tmp` carries."""
    return "grading-" + hashlib.sha256(str(tmp).encode()).hexdigest()[:16]


def child_env(tmp: Path) -> dict[str, str]:
    """The environment of the grading's children: its scratch folder, this grader first on the path,
    a share of the cores for BLAS, and a tag that finds them all (a batch's own tag, if it set one)."""
    env = dict(os.environ)
    env.update({"PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": str(tmp)})
    env.setdefault(TAG_VARIABLE, grading_tag(tmp))
    # Unless a batch (or the user) has already set it: a share of the cores for each child's BLAS.
    env.update(math_threads.limits(math_threads.usable_cores() // math_threads.SIDE_BY_SIDE))
    src_root = str(Path(__file__).resolve().parent.parent)
    # Children import this same grader first, whatever their cwd.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src_root, env.get("PYTHONPATH", "")) if p)
    return env


def _emu_importable() -> bool:
    try:
        from .emu import Emulator  # noqa: F401
    except ImportError:
        return False
    return True
