"""Child runners started before their job exists (while the submission compiles), by the TaskSupervisor."""
from __future__ import annotations

import os
import time
from pathlib import Path
from types import SimpleNamespace

from grader import api
from grader.compile import compile_source
from grader.exercise import load
from grader.run.parent.supervisor import TaskSupervisor
from grader.run.tasks import Task

ROOT = Path(__file__).resolve().parent.parent
LEVEL2 = ROOT / "exercises" / "level2"


def _runner(tmp_path: Path, modules=None) -> TaskSupervisor:
    exercise = load(LEVEL2)
    return TaskSupervisor(exercise_root=exercise.root, workdir=tmp_path, modules=modules or {}, limits=exercise.spec.limits,
                  env=api.child_env(tmp_path))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0): read its state (the process may be reaped meanwhile: then it is gone).
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _ended(pid: int, within: float = 10.0) -> bool:
    """Whether the process has ended (or ends within `within` seconds: a cancelled child is killed at
    once, and awaited in the background)."""
    deadline = time.monotonic() + within
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_a_prestarted_child_takes_the_first_job(tmp_path):
    """The child starts (imports, device) before the module exists; the batch then runs in it, with
    its time limit counted from the job, not from the start."""
    runner = _runner(tmp_path)
    early = runner.prestart("emu", wait=30)
    time.sleep(0.5)  # the compile, meanwhile
    compiled = compile_source((LEVEL2 / "skeleton.cu").read_text(), "skeleton.cu")
    ptx = tmp_path / "skeleton.ptx"
    ptx.write_text(compiled.ptx)
    runner.modules = {"emu": {"submission": str(ptx)}}
    job_written = time.time()
    stage = runner.run([Task(id="correctness:0", kind="run", backend="emu", sizes={"N": 17}, seeds=(1,))],
                       backend="emu", prestarted=early)
    assert stage.results["correctness:0"].launches  # it ran the launch
    # One child: the early one, spawned before its job existed; none was started for the job.
    assert len(stage.children) == 1 and early.child.proc.returncode == 0
    assert early.spawned < job_written <= stage.results["correctness:0"].clock["ready"]


def test_an_unused_prestarted_child_is_cancelled(tmp_path):
    runner = _runner(tmp_path)
    early = runner.prestart("emu", wait=30)
    began = time.perf_counter()
    stage = runner.run([], backend="emu", prestarted=early)  # nothing to run after all
    assert stage.results == {} and time.perf_counter() - began < 1.0  # killed, not waited for
    assert _ended(early.child.proc.pid)
    deadline = time.monotonic() + 10
    while early.child.proc.returncode is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert early.child.proc.returncode is not None  # reaped in the background: no zombie left


def test_a_prestarted_child_gives_up_when_no_job_comes(tmp_path):
    early = _runner(tmp_path).prestart("emu", wait=1)
    run = early.child.finish(30)
    assert run.returncode == 0 and not run.timed_out and run.seconds < 25


def test_a_submission_that_does_not_compile_leaves_no_child_behind(tmp_path, monkeypatch):
    started = []
    real = TaskSupervisor.prestart

    def spy(self, *args, **kwargs):
        early = real(self, *args, **kwargs)
        started.append(early)
        return early

    monkeypatch.setattr(TaskSupervisor, "prestart", spy)
    bad = tmp_path / "bad.cu"
    bad.write_text('extern "C" __global__ void matmul_tiled(const float* A, const float* B, float* C, int N) { oops }\n')
    report = api.grade(LEVEL2, bad, backend="emu", seed=1)
    assert not next(t for t in report.tests if t.category == "compile").passed
    assert started and all(_ended(e.child.proc.pid) for e in started)


def test_a_timeout_while_printing_megabytes_names_printf():
    from grader.run.parent.sandbox import ChildRun
    from grader.run.parent.supervisor import _timeout_text

    flood = ChildRun(None, True, 60.0, "x" * 100, "", stdout_bytes=20_000_000, stderr_bytes=0)
    quiet = ChildRun(None, True, 60.0, "", "", stdout_bytes=10, stderr_bytes=0)
    assert "while printing 20.0 MB" in _timeout_text(60, flood) and "printf" in _timeout_text(60, flood)
    assert "the kernel hangs?" in _timeout_text(60, quiet) and "printf" not in _timeout_text(60, quiet)


def test_a_launch_stopped_at_its_budget_while_printing_megabytes_names_printf():
    """The child stops a launch at a multiple of the reference's time and guesses a hang; a child that
    printed megabytes meanwhile was slowed by its printf, and the parent, which counted the bytes, says so."""
    from grader.run.child.launch_budget import Budget
    from grader.backends.base import LaunchOutcome
    from grader.run.parent.sandbox import ChildRun
    from grader.run.parent.supervisor import _printing_explained
    from grader.run.tasks import TaskResult

    budget = Budget(1000, seconds=2.0, basis="its time limit at this size", detail="stopped after 2.0 s")
    error = budget.explain(LaunchOutcome(error="stopped", fatal=True, findings={"status": "time-limit"})).error
    from grader.run.tasks import HANG_GUESS

    assert error.endswith(HANG_GUESS) and "endless loop" in error
    done = {"correctness:N=1000": TaskResult("correctness:N=1000", "timeout", error, ({"error": error, "seed": 1},)),
            "correctness:N=1": TaskResult("correctness:N=1", "ok", "", ({"error": None, "seed": 1},))}
    flood = ChildRun(1, False, 3.0, "x" * 100, "", stdout_bytes=2_500_000, stderr_bytes=0)
    quiet = ChildRun(1, False, 3.0, "", "", stdout_bytes=10, stderr_bytes=0)
    told = _printing_explained(done, flood)["correctness:N=1000"]
    assert "stopped after 2.0 s" in told.launches[0]["error"] and "endless loop" not in told.launches[0]["error"]
    assert "while printing 2.5 MB" in told.launches[0]["error"] and "remove the printf calls" in told.message
    assert _printing_explained(done, flood)["correctness:N=1"] == done["correctness:N=1"]
    assert _printing_explained(done, quiet) == done


def test_a_late_stage_gets_what_is_left_of_the_grading_time():
    from grader.checks.base import Context
    from grader.tools import Tools

    exercise = load(LEVEL2)
    ctx = Context(exercise=exercise, backend="gpu", runner=_runner_for(exercise), seed=1, tools=Tools(), source_name="s.cu",
                  source="", has_reference=True, emu_available=True)
    limit = exercise.spec.limits.run_seconds
    assert ctx.time_left() == limit  # no deadline: the run limit
    ctx.deadline = time.monotonic() + limit + 100
    assert ctx.time_left() == limit  # a far deadline: still the run limit
    ctx.deadline = time.monotonic() + 25
    assert 24 < ctx.time_left() <= 25
    ctx.deadline = time.monotonic() - 5
    assert ctx.time_left() == 10.0  # past the deadline: the floor


def _runner_for(exercise) -> TaskSupervisor:
    return TaskSupervisor(exercise_root=exercise.root, workdir=Path("/nonexistent"), modules={}, limits=exercise.spec.limits)


def test_a_stage_no_longer_needed_is_stopped_at_once(tmp_path):
    """ncu for a kernel that failed correctness: its counts will not be read, and a kernel that hangs
    under it has no launch budget. Setting the stage's stop event kills its child within moments,
    not at the run limit, and what it did not run is skipped."""
    import sys
    import threading

    from grader.run.parent.supervisor import StageStop

    runner = _runner(tmp_path)
    stop = StageStop()
    hang = [sys.executable, "-c", "import time; time.sleep(120)"]  # stands in for a profiled hung kernel
    threading.Timer(0.5, stop.set).start()
    started = time.monotonic()
    stage = runner.run([Task(id="ncu:submission:N = 17", kind="profile", backend="emu", sizes={"N": 17}, seeds=(1,))],
                       backend="emu", wrapper=hang, timeout=60, stop=stop)
    assert time.monotonic() - started < 10
    assert stage.results["ncu:submission:N = 17"].status == "skipped"
    child = stage.children[0]
    assert child.returncode is not None and child.returncode < 0 and not child.timed_out  # killed, reaped, not a timeout


def test_a_hang_fails_its_size_and_every_larger_one_of_the_same_module():
    """A GPU launch stopped at its time limit stands for every launch at sizes each at least as large;
    smaller sizes, other modules and other size names are run (in a fresh child)."""
    from grader.run.parent.supervisor import _larger_than_hung, at_least
    from grader.run.tasks import TaskResult

    hung = Task(id="correctness:3", kind="run", backend="gpu", sizes={"rows": 4, "cols": 1000})
    def task(rows, cols, module="submission", backend="gpu"):
        return Task(id="t", kind="run", backend=backend, module=module, sizes={"rows": rows, "cols": cols})

    assert at_least(task(4, 1000), hung) and at_least(task(8, 1000), hung) and at_least(task(4, 4099), hung)
    assert not at_least(task(3, 4099), hung) and not at_least(task(1024, 999), hung)
    assert not at_least(task(8, 1000, module="reference"), hung) and not at_least(task(8, 1000, backend="emu"), hung)
    assert not at_least(Task(id="t", kind="run", backend="gpu", sizes={"N": 4}), hung)
    stopped = TaskResult("correctness:3", "timeout", "the kernel did not finish within its time limit at rows = 4, cols = 1000")
    text = _larger_than_hung(task(8, 1000), hung, stopped)
    assert text == ("not run at this size: at the smaller size rows = 4, cols = 1000, did not finish within its time "
                    "limit at rows = 4, cols = 1000")
    assert _larger_than_hung(task(4, 1000), hung, stopped) == stopped.message


def test_the_grading_deadline_follows_the_submission_launches():
    from grader.run.parent.supervisor import GRADING_GRACE_S, GRADING_SLACK, StageRun, grading_deadline
    from grader.run.tasks import TaskResult

    stage = StageRun({"a": TaskResult("a", "ok", "", ({"seconds": 1.5}, {"seconds": 0.5})),
                      "b": TaskResult("b", "timeout", "hung", ({"seconds": 4.0},))})
    assert grading_deadline(stage, 100.0) == 100.0 + GRADING_GRACE_S + GRADING_SLACK * 6.0
    assert grading_deadline(StageRun({}), 0.0) == GRADING_GRACE_S


def test_a_background_stage_past_the_grading_deadline_is_stopped_with_its_reason():
    """Context.finish waits no longer than the deadline; then the stage's stop event is set with the
    words its skipped tasks get (the stage's child watches the event and is killed)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from grader.checks.base import Context
    from grader.tools import Tools

    exercise = load(LEVEL2)
    with ThreadPoolExecutor(1) as pool:
        ctx = Context(exercise=exercise, backend="gpu", runner=_runner_for(exercise), seed=1, tools=Tools(), source_name="s.cu",
                      source="", has_reference=True, emu_available=True, pool=pool)
        stop = ctx.stop_event("ncu")

        def stage():
            stop.wait(30)
            return getattr(stop, "reason", "no reason")

        ctx.launches_done = time.monotonic()
        ctx.deadline = ctx.launches_done + 0.3
        ctx.start("ncu", stage)
        started = time.monotonic()
        reason = ctx.finish("ncu")
    assert time.monotonic() - started < 5
    assert stop.is_set() and reason.startswith("not run: the grading's deadline passed (0 s after the submission's launches")


def test_each_childs_results_are_handed_on_as_soon_as_it_ends(tmp_path):
    """on_results sees a child's results when that child ends (cuda kind: the ncu run is stopped at
    the first wrong size rather than once every launch is judged)."""
    runner = _runner(tmp_path)
    compiled = compile_source((LEVEL2 / "skeleton.cu").read_text(), "skeleton.cu")
    ptx = tmp_path / "skeleton.ptx"
    ptx.write_text(compiled.ptx)
    runner.modules = {"emu": {"submission": str(ptx)}}
    seen: list[set[str]] = []
    tasks = [Task(id=f"correctness:{i}", kind="run", backend="emu", sizes={"N": n}, seeds=(1,)) for i, n in enumerate((1, 17))]
    stage = runner.run(tasks, backend="emu", on_results=lambda done: seen.append(set(done)))
    assert seen == [set(stage.results)] == [{"correctness:0", "correctness:1"}]


def test_a_wrong_size_on_the_gpu_stops_the_profiler_run_at_once():
    from grader.checks.counters import NCU_STAGE
    from grader.kinds.cuda import _profile_only_if_right
    from grader.run.tasks import TaskResult

    ctx = SimpleNamespace(stops={}, abandon=lambda key: ctx.stops.setdefault(key, True))
    right = TaskResult("correctness:0", "ok", launches=({"seed": 1, "compare": {"ok": True}},))
    seen = _profile_only_if_right(ctx)
    seen({"correctness:0": right, "memory:canary": TaskResult("memory:canary", "timeout", "stopped")})
    assert NCU_STAGE not in ctx.stops  # only a correctness size decides
    seen({"correctness:1": TaskResult("correctness:1", "timeout", "the kernel did not finish within its time limit")})
    assert ctx.stops.get(NCU_STAGE)
