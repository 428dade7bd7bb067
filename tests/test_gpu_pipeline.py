"""The GPU backend's orchestration, tested without a GPU: which tool runs when, and how their output
is read back. The launches themselves are faked; tests/gpu/ runs the real thing on a GPU."""
from __future__ import annotations

import dataclasses
import json
import threading
import time
from pathlib import Path

import pytest

from grader import api
from grader.kinds import cuda
from grader.checks import REGISTRY, Context
from grader.checks.counters import NCU_STAGE
from grader.exercise import load
from grader.run.parent.supervisor import TaskSupervisor, StageRun
from grader.run.tasks import Task, TaskResult
from grader import tools
from grader.tools import Tools

ROOT = Path(__file__).resolve().parent.parent


class FakeRunner(TaskSupervisor):
    """Records every batch it is asked to run and answers with canned results."""

    def __init__(self, workdir: Path, answer):
        super().__init__(exercise_root=ROOT, workdir=workdir, modules={}, limits=load(ROOT / "exercises" / "level2").spec.limits)
        self.calls: list[dict] = []
        self.answer = answer
        self.lock = threading.Lock()

    def run(self, tasks, *, backend, wrapper=(), pool=True, timeout=None, log_name=None, label=None, extra_env=None,
            prestarted=None, stop=None):
        with self.lock:
            self.calls.append({"tasks": list(tasks), "backend": backend, "wrapper": list(wrapper), "log_name": log_name,
                               "env": dict(extra_env or {})})
        return self.answer(self, list(tasks), list(wrapper), log_name)


def _context(tmp_path: Path, exercise: str, answer, *, tools=Tools(ncu="/x/ncu", sanitizer="/x/compute-sanitizer")) -> Context:
    return Context(exercise=load(ROOT / "exercises" / exercise), backend="gpu", runner=FakeRunner(tmp_path, answer), seed=1,
                   tools=tools, source_name="s.cu", source="", has_reference=True, emu_available=True)


def _plan(ctx: Context, pool) -> None:
    ctx.pool = pool
    for category, conf in ctx.spec.checks.items():
        if category in REGISTRY:
            for task in REGISTRY[category].plan(ctx, conf):
                ctx.planned.setdefault(task.id, task)


def _ok(tasks) -> StageRun:
    return StageRun({t.id: TaskResult(t.id, "ok", launches=({"seed": 1},)) for t in tasks})


def _sanitizer_runs(ctx: Context) -> list[str]:
    return [c["wrapper"][2] for c in ctx.runner.calls if c["wrapper"] and "compute-sanitizer" in c["wrapper"][0]]


def _emu_result(ctx: Context, conf, status: str) -> None:
    from grader.checks.base import sizes_text

    label = "emu:" + sizes_text(conf.emu_size or conf.size)
    launch = {"seed": 1, "emu": {"status": status, "message": "the emulator does not support malloc"}}
    if status != "ok":
        launch["error"] = "the emulator cannot run this kernel"
    ctx.results[label] = TaskResult(label, "error" if status != "ok" else "ok", launches=(launch,))


def test_sanitizers_are_only_a_fallback_when_the_emulator_ran_the_kernel(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    ctx = _context(tmp_path, "level2", lambda runner, tasks, wrapper, log: _ok(tasks))
    with ThreadPoolExecutor(4) as pool:
        _plan(ctx, pool)
        assert _sanitizer_runs(ctx) == []  # nothing started while planning
        for category in ("race", "memory-safety"):
            _emu_result(ctx, ctx.spec.checks[category], "ok")
        from grader.checks.findings import sanitizer_messages

        assert sanitizer_messages(ctx, ctx.spec.checks["race"], ("racecheck", "synccheck"), ctx.spec.checks["race"].emu_size, "race") == []
    assert _sanitizer_runs(ctx) == [] and ctx.not_run == []


def test_sanitizers_stand_in_when_the_emulator_cannot_run_the_kernel(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    from grader.checks.findings import sanitizer_messages

    def answer(runner, tasks, wrapper, log):
        log_file = runner.workdir / f"{log}.log"
        log_file.write_text("========= Race reported between Write access at k+0x10 in s.cu:9\n========= ERROR SUMMARY: 1 error\n")
        return StageRun({t.id: TaskResult(t.id, "ok") for t in tasks}, log_files=(log_file,))

    ctx = _context(tmp_path, "level2", answer)
    conf = ctx.spec.checks["race"]
    with ThreadPoolExecutor(4) as pool:
        _plan(ctx, pool)
        _emu_result(ctx, conf, "unsupported")
        found = sanitizer_messages(ctx, conf, ("racecheck", "synccheck"), conf.emu_size, "race")
    assert sorted(_sanitizer_runs(ctx)) == ["racecheck", "synccheck"]
    assert len(found) == 2 and all("s.cu:9" in f for f in found)


def test_sanitizer_always_starts_while_planning_and_never_not_at_all(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    for policy, expected in (("always", ["memcheck", "racecheck", "synccheck"]), ("never", [])):
        ctx = _context(tmp_path, "level2", lambda runner, tasks, wrapper, log: _ok(tasks))
        checks = {c: dataclasses.replace(conf, sanitizer=policy) for c, conf in ctx.spec.checks.items()}
        ctx.exercise = dataclasses.replace(ctx.exercise, spec=dataclasses.replace(ctx.spec, checks=checks))
        with ThreadPoolExecutor(4) as pool:
            _plan(ctx, pool)
            for key in list(ctx.background):
                ctx.finish(key)
        assert sorted(_sanitizer_runs(ctx)) == expected, policy


def test_a_missing_sanitizer_is_reported_only_when_it_was_needed(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    from grader.checks.findings import sanitizer_messages

    ctx = _context(tmp_path, "level2", lambda runner, tasks, wrapper, log: _ok(tasks), tools=Tools(ncu="/x/ncu"))
    conf = ctx.spec.checks["memory-safety"]
    with ThreadPoolExecutor(4) as pool:
        _plan(ctx, pool)
        _emu_result(ctx, conf, "ok")
        assert sanitizer_messages(ctx, conf, ("memcheck",), conf.emu_size, "memory-safety") == []
        assert ctx.not_run == []
        _emu_result(ctx, conf, "unsupported")
        sanitizer_messages(ctx, conf, ("memcheck",), conf.emu_size, "memory-safety")
    assert [n.category for n in ctx.not_run] == ["memory-safety"]


NCU_HEADER = '"ID","Kernel Name","{}"\n"","","{}"\n'


def _ncu_answer(values_by_task):
    """An ncu run: one CSV row per profiled launch, in task order, from values_by_task(task, metric)."""

    def answer(runner, tasks, wrapper, log):
        metrics = wrapper[wrapper.index("--metrics") + 1].split(",")
        text = NCU_HEADER.format('","'.join(metrics), '","'.join("x" for _ in metrics))
        for i, t in enumerate(tasks):
            text += f'"{i}","transpose",' + ",".join(f'"{values_by_task(t, m):,}"' for m in metrics) + "\n"
        log_file = runner.workdir / "ncu.log"
        log_file.write_text(text)
        return StageRun({t.id: TaskResult(t.id, "ok", launches=({"seed": 1},)) for t in tasks}, log_files=(log_file,))

    return answer


def test_one_ncu_run_serves_every_counter_check(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    def value(task, metric):
        base = 1000 if task.module == "reference" else 1100  # the submission: 10% more of everything
        return base * (task.sizes["rows"] // 100) + (7 if "shared" in metric else 0)

    ctx = _context(tmp_path, "transpose", _ncu_answer(value))
    with ThreadPoolExecutor(4) as pool:
        _plan(ctx, pool)
        ctx.finish(NCU_STAGE)
    ncu_calls = [c for c in ctx.runner.calls if c["log_name"] == "ncu"]
    assert len(ncu_calls) == 1
    # ncu's own lock against other ncu runs lives in TMPDIR: every grading's ncu must share one.
    assert ncu_calls[0]["env"]["TMPDIR"] != str(tmp_path) and ncu_calls[0]["env"] == tools.ncu_env()
    tasks = ncu_calls[0]["tasks"]
    # Two sizes (traffic and bank-conflicts differ), every submission launch before any reference one.
    assert [t.module for t in tasks] == ["submission", "submission", "reference", "reference"]
    assert len({tuple(t.sizes.items()) for t in tasks}) == 2
    metrics = ncu_calls[0]["wrapper"][ncu_calls[0]["wrapper"].index("--metrics") + 1].split(",")
    assert any("shared" in m for m in metrics) and any("global" in m for m in metrics)
    ctx.correctness = None  # no gate
    traffic = REGISTRY["traffic"].judge(ctx, ctx.spec.checks["traffic"])[0]
    banks = REGISTRY["bank-conflicts"].judge(ctx, ctx.spec.checks["bank-conflicts"])[0]
    assert traffic.extra["sizes"] == dict(ctx.spec.checks["traffic"].size)
    assert banks.extra["sizes"] == dict(ctx.spec.checks["bank-conflicts"].size)
    assert 1.09 < traffic.extra["ratio"] < 1.11 and 1.09 < banks.extra["ratio"] < 1.11


def test_ncu_missing_a_launch_is_a_measurement_problem_of_the_graders(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    def answer(runner, tasks, wrapper, log):
        return _ncu_answer(lambda t, m: 5)(runner, tasks[:-1], wrapper, log)  # one launch never profiled

    ctx = _context(tmp_path, "level2", answer)
    with ThreadPoolExecutor(4) as pool:
        _plan(ctx, pool)
    assert REGISTRY["traffic"].judge(ctx, ctx.spec.checks["traffic"]) == []
    (fault,) = ctx.not_run
    assert fault.grader_fault and "could not measure" in fault.reason


def test_timing_waits_for_the_gpu_and_needs_correct_launches(tmp_path):
    ctx = _context(tmp_path, "level2", lambda runner, tasks, wrapper, log: _ok(tasks))
    ctx.pool = None
    for category in ("correctness", "performance"):
        for task in REGISTRY[category].plan(ctx, ctx.spec.checks[category]):
            ctx.planned.setdefault(task.id, task)
    timed = [t for t in ctx.planned.values() if t.kind == "time"]
    # One task times the submission and the reference in turns (a ratio taken in one window).
    assert [(t.module, t.rivals) for t in timed] == [("submission", ("reference",))]
    correctness = {t for t in ctx.planned if t.startswith("correctness:")}
    assert all(set(t.requires) == correctness and t.after.endswith("gpu-free") for t in timed)
    assert list(ctx.planned)[-len(timed):] == [t.id for t in timed]  # last in the batch


def _timed_context(tmp_path):
    """A level2 context with the correctness and performance tasks planned and every launch but the
    timing's answered right; and the performance check's spec."""
    ctx = _context(tmp_path, "level2", lambda runner, tasks, wrapper, log: _ok(tasks))
    ctx.pool = None
    for category in ("correctness", "performance"):
        for task in REGISTRY[category].plan(ctx, ctx.spec.checks[category]):
            ctx.planned.setdefault(task.id, task)
    ctx.results.update(_ok([t for t in ctx.planned.values() if t.kind != "time"]).results)
    return ctx, ctx.spec.checks["performance"]


def test_performance_scores_the_ratio_of_times_taken_in_turns_and_names_what_failed(tmp_path):
    """The judge reads the one timing task's fastest calls by module: 68% of the reference's speed, with
    full marks from 90%, is 75% of the points (the step below 0.68 / 0.9); a failed timing names its module."""
    ctx, conf = _timed_context(tmp_path)
    # The fastest calls count: a median pushed up by another process's work on the GPU does not.
    ctx.results["time"] = TaskResult("time", "ok", data={"median_ms": {"submission": 2.4, "reference": 1.37},
                                                         "min_ms": {"submission": 2.0, "reference": 1.36}, "repeats": 20})
    (verdict,) = REGISTRY["performance"].judge(ctx, conf)
    assert verdict.score == pytest.approx(conf.points * 0.75) and not verdict.passed
    assert verdict.extra["fraction_of_reference"] == 0.68 and "68% of its speed" in verdict.output
    assert "fastest of 20 timed calls 2.000 ms against 1.360 ms" in verdict.output and "medians 2.400 and 1.370 ms" in verdict.output
    ctx.results["time"] = TaskResult("time", "error", message="CUDARuntimeError: boom", data={"module": "reference"})
    (failed,) = REGISTRY["performance"].judge(ctx, conf)
    assert failed.score == 0 and failed.output.startswith("Timing the reference solution at N = 2048 failed: CUDARuntimeError")


def test_a_timed_call_that_computed_a_wrong_answer_gets_no_performance_points(tmp_path):
    """The timing checks every timed call's answer (grader.run.child.timing); a wrong one ends it, and
    the judge says which call and what was wrong, with the launch-counter hint once earlier calls were right."""
    ctx, conf = _timed_context(tmp_path)
    compare = {"ok": False, "bad": 16, "total": 16, "nan": 16, "untouched": 16, "worst_ratio": 0.0,
               "first": {"param": "C", "index": [0, 0], "got": "nan", "want": 1.5, "tol": 1e-5}}
    for call, where, hint in ((5, "timed call 5 of 23", "The call before the timed calls was right"),
                              (0, "the untimed call before the timed calls", "wrong from the first call")):
        ctx.results["time"] = TaskResult("time", "error", message=f"{where} computed a wrong answer",
                                         data={"module": "submission", "wrong": {"call": call, "calls": 23, "compare": compare}})
        (verdict,) = REGISTRY["performance"].judge(ctx, conf)
        assert verdict.score == 0 and not verdict.passed and verdict.extra["wrong_call"] == call
        assert f"at N = 2048, {where} computed a wrong answer: C[0, 0] = nan" in verdict.output
        assert "16 never written" in verdict.output and hint in verdict.output

@pytest.mark.parametrize("stage, waited", [("hidden tests", True), (NCU_STAGE, False)])
def test_the_gpu_is_released_for_timing_once_the_stages_that_could_run_beside_it_finish(tmp_path, stage, waited):
    """A background stage (the hidden tests, say) is waited for; the ncu run is not: its launches each
    hold a share of the GPU's lock, so they never run while a kernel is timed."""
    from concurrent.futures import ThreadPoolExecutor

    ctx = _context(tmp_path, "level2", lambda runner, tasks, wrapper, log: _ok(tasks))
    go = tmp_path / "gpu-free"
    ctx.planned["time:submission"] = Task(id="time:submission", kind="time", backend="gpu", after=str(go))
    gate = threading.Event()

    def released() -> bool:
        deadline = time.monotonic() + (0.3 if waited and not gate.is_set() else 5)
        while not go.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        return go.exists()

    with ThreadPoolExecutor(2) as pool:
        ctx.pool = pool
        ctx.start(stage, gate.wait, 10)
        cuda._release_gpu_when_idle(ctx)
        assert released() is not waited  # while the stage still runs
        gate.set()
        assert released()


def test_runner_skips_timing_after_a_failed_required_launch(tmp_path):
    """Through a real emulator child: a wrong kernel's timing task is skipped, and one that needs a
    file waits for it."""
    from grader.compile import compile_source

    exercise = load(ROOT / "exercises" / "level2")
    compiled = compile_source((ROOT / "exercises" / "level2" / "skeleton.cu").read_text(), "skeleton.cu")
    ptx = tmp_path / "skeleton.ptx"
    ptx.write_text(compiled.ptx)
    runner = TaskSupervisor(exercise_root=exercise.root, workdir=tmp_path, modules={"emu": {"submission": str(ptx)}},
                    limits=exercise.spec.limits, env=api.child_env(tmp_path))
    go = tmp_path / "go"
    tasks = [Task(id="correctness:0", kind="run", backend="emu", sizes={"N": 17}, seeds=(1,)),
             Task(id="time:submission", kind="time", backend="emu", sizes={"N": 17}, requires=("correctness:0",), after=str(go)),
             Task(id="time:later", kind="time", backend="emu", sizes={"N": 17}, after=str(go))]
    threading.Timer(1.5, go.touch).start()
    start = time.perf_counter()
    stage = runner.run(tasks, backend="emu")
    assert not stage.results["correctness:0"].succeeded
    assert stage.results["time:submission"].status == "skipped" and "correctness:0 failed" in stage.results["time:submission"].message
    assert stage.results["time:later"].message == "timing needs a GPU"  # it ran, after the file appeared
    assert time.perf_counter() - start >= 1.4
    assert json.dumps([t.to_json() for t in tasks])  # requires and after travel as JSON
    assert Task.from_json(json.loads(json.dumps(tasks[1].to_json()))) == tasks[1]


def test_parent_skips_timing_whose_prerequisite_crashed_an_earlier_child(tmp_path):
    """A child that dies on a launch is restarted for the rest; timing that needed that launch is
    skipped by the parent, which alone knows what the dead child did."""
    exercise = load(ROOT / "exercises" / "level2")
    runner = TaskSupervisor(exercise_root=exercise.root, workdir=tmp_path, modules={"emu": {"submission": str(tmp_path / "missing.ptx")}},
                    limits=exercise.spec.limits, env=api.child_env(tmp_path))
    tasks = [Task(id="correctness:0", kind="run", backend="emu", sizes={"N": 17}, seeds=(1,)),
             Task(id="time:submission", kind="time", backend="emu", sizes={"N": 17}, requires=("correctness:0",))]
    stage = runner.run(tasks, backend="emu")
    assert stage.results["correctness:0"].status == "crashed"
    assert stage.results["time:submission"].status == "skipped"
    assert "correctness:0 failed first" in stage.results["time:submission"].message
    assert len(stage.children) == 1  # no second child was started just to skip it
    assert TaskResult("x", "ok", launches=({"compare": {"ok": True}},)).succeeded
    assert not TaskResult("x", "ok", launches=({"compare": {"ok": False}},)).succeeded


def test_cuda_errors_are_recognised_in_driver_and_runtime_spelling():
    from grader.backends import gpu

    for text in ("CUDARuntimeError: cudaErrorLaunchFailure: unspecified launch failure",
                 "CUDADriverError: CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure"):
        # "unspecified launch failure" names no cause: the message must not claim a failed assert
        told = gpu._explain(text)
        assert "no named cause" in told and "assert" not in told and any(tag in gpu._key(text) for tag in gpu._FATAL)
    for text in ("CUDARuntimeError: cudaErrorAssert: device-side assert triggered",
                 "CUDADriverError: CUDA_ERROR_ILLEGAL_INSTRUCTION: an illegal instruction was encountered"):
        assert "trap or failed assert" in gpu._explain(text) and any(tag in gpu._key(text) for tag in gpu._FATAL)
    illegal = "CUDARuntimeError: cudaErrorIllegalAddress: an illegal memory access was encountered"
    assert "illegal address" in gpu._explain(illegal) and any(tag in gpu._key(illegal) for tag in gpu._FATAL)
    assert not any(tag in gpu._key("cudaErrorInvalidValue: invalid argument") for tag in gpu._FATAL)


def test_a_child_that_stops_after_a_fatal_launch_is_restarted_without_blaming_the_next_task(tmp_path, monkeypatch):
    """The runner exits with EXIT_FATAL right after reporting a launch that broke its CUDA context;
    the next task must run in a fresh child, not be reported as crashed."""
    import sys

    from grader.run.parent import supervisor as stages
    from grader.run.tasks import EXIT_FATAL

    script = tmp_path / "fake_runner.py"
    script.write_text(
        "import json, sys\n"
        "job = json.load(open(sys.argv[1]))\n"
        "first = job['tasks'][0]\n"
        "with open(job['results'], 'a') as out:\n"
        "    status = 'error' if first['id'] == 'correctness:0' else 'ok'\n"
        "    out.write(json.dumps({'id': first['id'], 'status': status, 'launches': [{'error': 'trap'}]}) + '\\n')\n"
        "print('Traceback (most recent call last): moduleUnload', file=sys.stderr)\n"
        f"sys.exit({EXIT_FATAL} if first['id'] == 'correctness:0' else 0)\n")
    monkeypatch.setattr(stages, "python_argv", lambda module, *args: [sys.executable, str(script), *args])
    exercise = load(ROOT / "exercises" / "level2")
    runner = TaskSupervisor(exercise_root=exercise.root, workdir=tmp_path, modules={}, limits=exercise.spec.limits)
    tasks = [Task(id="correctness:0", kind="run", backend="gpu"), Task(id="correctness:1", kind="run", backend="gpu")]
    stage = runner.run(tasks, backend="gpu")
    assert stage.results["correctness:0"].status == "error"
    assert stage.results["correctness:1"].status == "ok", stage.results["correctness:1"].message
    assert len(stage.children) == 2


def test_a_child_holds_no_share_of_the_gpu_between_launches(tmp_path, monkeypatch):
    """Shares of the GPU belong to launches (runner._launch_once, the timing's own launches), not to
    tasks: a child holds none while it waits for its own grading's ncu and hidden tests (another
    grading's timing would otherwise wait on it while that ncu run waits on the timing: on an H200,
    seven validations at once slowed to a minute per grading this way), nor while a task works on
    the CPU."""
    from contextlib import contextmanager

    from grader.run.child import runner

    calls: list[str] = []
    held: list[str] = []
    seen_while_waiting: list[list[str]] = []
    go = tmp_path / "go"

    class FakeDevice:
        name = "fake"

        @contextmanager
        def using(self):
            held.append("share")
            yield
            held.remove("share")

        def take_exclusive(self):
            held.append("exclusive")
            return True

        def leave(self):
            held.remove("exclusive")

    def execute(task, *rest):
        calls.append(f"run {task.id} holding {sorted(held)}")
        return {"id": task.id, "status": "ok"}, False

    def open_the_way():
        seen_while_waiting.append(list(held))
        go.touch()

    monkeypatch.setattr(runner, "open_device", lambda backend, pool=True: FakeDevice())
    monkeypatch.setattr(runner, "_execute", execute)
    tasks = [Task(id="run:first", kind="run", backend="gpu", sizes={"N": 17}, seeds=(1,)),
             Task(id="time:submission", kind="time", backend="gpu", sizes={"N": 17}, after=str(go)),
             Task(id="run:later", kind="run", backend="gpu", sizes={"N": 17}, seeds=(1,), after=str(go))]
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"exercise": str(ROOT / "exercises" / "level2"), "backend": "gpu", "modules": {},
                               "results": str(tmp_path / "out.jsonl"), "tasks": [t.to_json() for t in tasks]}))
    threading.Timer(0.3, open_the_way).start()
    assert runner.main([str(job)]) == 0
    assert seen_while_waiting == [[]]
    assert calls == ["run run:first holding []", "run time:submission holding []", "run run:later holding []"]
    assert held == []


def test_word_that_the_gpu_is_free_is_dropped_quietly_once_the_grading_is_over(tmp_path, monkeypatch):
    """The thread that tells the timing the GPU is free may wake after the grading ended and its
    folder was removed (on an H200 `grade validate` printed that thread's traceback): nobody waits
    then, so nothing is said."""
    from types import SimpleNamespace

    errors = []
    monkeypatch.setattr(threading, "excepthook", lambda args: errors.append(args.exc_value))
    gone = tmp_path / "gone" / "gpu-free"
    task = Task(id="time:submission", kind="time", backend="gpu", sizes={"N": 17}, after=str(gone))
    ctx = SimpleNamespace(planned={task.id: task}, background={})
    cuda._release_gpu_when_idle(ctx)
    for thread in threading.enumerate():
        if thread.name == "release-gpu":
            thread.join(5)
    assert errors == [] and not gone.exists()


def test_in_a_batch_ncu_starts_only_for_a_kernel_past_the_gate_and_falls_back_alone(tmp_path, monkeypatch):
    """With a batch's profiler (KERNEL_GRADER_PROFILER), planning starts no ncu and prestarts none; the
    counters check starts it at judging, only once the gate lets the counts count; with no live
    profiler the grading runs ncu itself and gets the lone verdict."""
    from concurrent.futures import ThreadPoolExecutor

    from grader.run.parent import profile_spool
    from grader.checks.base import CorrectnessSummary
    from grader.checks.counters import ncu_prestart

    monkeypatch.setenv(profile_spool.VARIABLE, str(tmp_path / "spool"))  # a spool nobody serves
    (tmp_path / "spool").mkdir()
    ctx = _context(tmp_path, "transpose", _ncu_answer(lambda t, m: 1000 if t.module == "reference" else 1100))
    assert ncu_prestart(ctx.spec, ctx.runner, ctx.tools, 10) is None
    with ThreadPoolExecutor(4) as pool:
        _plan(ctx, pool)
        assert NCU_STAGE not in ctx.background
        ctx.correctness = CorrectnessSummary(2, 3)
        gated = REGISTRY["traffic"].judge(ctx, ctx.spec.checks["traffic"])[0]
        assert gated.extra.get("gated") and NCU_STAGE not in ctx.background
        ctx.correctness = CorrectnessSummary(3, 3)
        traffic = REGISTRY["traffic"].judge(ctx, ctx.spec.checks["traffic"])[0]
        banks = REGISTRY["bank-conflicts"].judge(ctx, ctx.spec.checks["bank-conflicts"])[0]
    assert 1.09 < traffic.extra["ratio"] < 1.11 and 1.09 < banks.extra["ratio"] < 1.11
    assert len([c for c in ctx.runner.calls if c["log_name"] == "ncu"]) == 1  # one run for both checks


def test_in_a_batch_the_profilers_answer_is_the_counts(tmp_path, monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    from grader.run.parent import profile_spool
    from grader.checks.base import CorrectnessSummary
    from grader.checks.counters import ncu_request

    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / profile_spool.HEARTBEAT).touch()
    monkeypatch.setenv(profile_spool.VARIABLE, str(spool))
    ctx = _context(tmp_path, "level2", lambda runner, tasks, wrapper, log: _ok(tasks))
    size = ", ".join(f"{k} = {v}" for k, v in ctx.spec.checks["traffic"].size.items())
    counts = {size: {"submission": {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 300.0},
                     "reference": {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 100.0}}}
    asked = []

    def serve() -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            for path in spool.glob("*" + profile_spool.REQUEST_SUFFIX):
                request = json.loads(path.read_text())
                asked.append(request)
                path.unlink()
                stages.write_atomically(Path(request["answer"]), json.dumps({"by_size": counts, "problem": None}))
                return
            time.sleep(0.01)

    from grader.run.parent import supervisor as stages

    server = threading.Thread(target=serve)
    server.start()
    with ThreadPoolExecutor(4) as pool:
        _plan(ctx, pool)
        ctx.correctness = CorrectnessSummary(3, 3)
        traffic = REGISTRY["traffic"].judge(ctx, ctx.spec.checks["traffic"])[0]
    server.join()
    assert traffic.extra["ratio"] == 3.0 and not traffic.passed
    assert [c for c in ctx.runner.calls if c["log_name"] == "ncu"] == []  # no ncu run of its own
    assert asked[0]["tasks"] == ncu_request(ctx).to_json()["tasks"]


def _stoppable_runner(tmp_path: Path, gpu_status: str) -> tuple[FakeRunner, dict]:
    """A runner whose GPU batch answers at once with `gpu_status` for every correctness size, and whose
    emulator batch spins (as on a hung kernel) until its stop event is set, or 3 s."""
    seen: dict = {}

    class Spinning(FakeRunner):
        def run(self, tasks, *, backend, stop=None, **kw):
            if backend == "gpu":
                return StageRun({t.id: TaskResult(t.id, gpu_status, launches=({"seed": 1, "error": "x"},)) for t in tasks})
            seen["stop_set"] = bool(stop and stop.wait(3))
            return StageRun({t.id: TaskResult(t.id, "skipped", "not run: no longer needed") for t in tasks})

    return Spinning(tmp_path, None), seen


def test_a_kernel_hung_at_every_size_on_the_gpu_stops_the_emulator_batch(tmp_path):
    """Every check that reads the emulator's findings is gated on a right size: when the GPU stopped the
    kernel as a hang and no size was right, the emulator (spinning on the same loop) is stopped too,
    so the hang costs seconds, not the emulator's step budget."""
    for status, stopped in (("timeout", True), ("error", False)):
        runner, seen = _stoppable_runner(tmp_path, status)
        ctx = Context(exercise=load(ROOT / "exercises" / "level2"), backend="gpu", runner=runner, seed=1, tools=Tools(),
                      source_name="s.cu", source="", has_reference=True, emu_available=True)
        ctx.planned = {"correctness:0": Task(id="correctness:0", kind="run", backend="gpu", sizes={"N": 1}, seeds=(1,)),
                       "emu:N = 64": Task(id="emu:N = 64", kind="run", backend="emu", sizes={"N": 64}, seeds=(1,))}
        started = time.monotonic()
        cuda._run_planned(ctx)
        assert seen["stop_set"] is stopped, status
        assert (time.monotonic() - started < 2) is stopped


def test_on_a_gpu_memory_safety_also_emulates_the_small_correctness_sizes(tmp_path):
    """A bug of the ragged edge shows at the emulator's small sizes, not always at the check's own size
    (histogram: threads past n return before zeroing their shared bin only when n < one block)."""
    ctx = _context(tmp_path, "histogram", lambda runner, tasks, wrapper, log: _ok(tasks))
    _plan(ctx, None)
    emulated = {t.id for t in ctx.planned.values() if t.backend == "emu"}
    from grader.checks.base import sizes_text
    wanted = {"emu:" + sizes_text(case) for case in ctx.spec.emu_cases}
    assert wanted and wanted <= emulated
