"""Hidden tests: the exercise's own pytest files, run against the submission in a child process."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Sequence

from ..results import TestResult
from ..exercise import Exercise
from ..run.parent import gpu_worker
from ..run.parent.sandbox import StartedChild, python_argv, start_child
from ..spec import CheckSpec, Limits
from ..run.parent.supervisor import TaskSupervisor, child_limits, write_atomically
from ..run.tasks import Task
from .base import Context, gate, not_run, verdict

NAME = "Hidden tests"


def test_files(exercise_root: Path) -> list[Path]:
    """The exercise's hidden test files."""
    return sorted((exercise_root / "tests").glob("test_*.py"))


STAGE = "hidden tests"
JOB_VARIABLE = "KERNEL_GRADER_HIDDEN_JOB"  # the job file grader.run.child.hidden_tests (the pytest plugin) reads
EARLY_VARIABLE = "KERNEL_GRADER_HIDDEN_EARLY"  # "BACKEND SECONDS": started early; open BACKEND, wait for the job


class HiddenTestsCheck:
    """Scored as points x passed / total, in the category the spec's [hidden_tests] names.

    The tests run in a child of their own beside the other launches, so they add little time of their
    own to a grading. (Measured on an H200: running them inside the launch child instead put pytest's
    start-up on the grading's longest path, 1.3 to 2.6 s.) A kernel that hangs there stops at the
    same run_seconds limit.
    """

    def __init__(self, category: str = "correctness"):
        self.category = category

    def plan(self, ctx: Context, conf: CheckSpec) -> Sequence[Task]:
        if not test_files(ctx.exercise.root) or not pytest_available():
            return []
        _write_job(ctx)
        if STAGE not in ctx.background:
            ctx.start(STAGE, _run_child, ctx, ctx.take_prestart(STAGE))
        return []

    def judge(self, ctx: Context, conf: CheckSpec) -> Sequence[TestResult]:
        gated = gate(ctx, NAME, conf, need_all=False)
        if gated:
            return [gated]
        if ctx.correctness is not None and ctx.correctness.racy and conf.category == "correctness":
            # Scored like the correctness check: a racing kernel's passes are luck, not a grade.
            return [verdict(NAME, conf, False, "Not graded: the kernel has a race (see Races and barriers), so its "
                                               "results depend on thread timing; fix the race first.", extra={"gated": True})]
        if STAGE in ctx.background:
            stopped, fault = ctx.finish(STAGE)
        elif test_files(ctx.exercise.root) and not pytest_available():
            not_run(ctx, NAME, conf, "pytest is not installed where the grader runs (pip install pytest); "
                                     "this is the grader's problem, not your submission's", grader_fault=True)
            return []
        else:
            return [verdict(NAME, conf, True, "This exercise has no hidden tests.")]
        results = ctx.runner.workdir / "hidden-results.jsonl"
        outcomes = [json.loads(line) for line in results.read_text().splitlines()] if results.exists() else []
        if not outcomes and fault:
            not_run(ctx, NAME, conf, f"the hidden tests could not run ({stopped}); this is the grader's problem, "
                                     "not your submission's", grader_fault=True)
            return []
        if not outcomes:
            return [verdict(NAME, conf, False, f"The hidden tests did not run ({stopped or 'no test reported'}).")]
        faults = [o for o in outcomes if o.get("fault")]
        if faults:
            # A hidden test raised something other than an AssertionError: the test (or the harness it
            # calls) is broken, so its score would say nothing about the kernel.
            names = ", ".join(o["test"] for o in faults[:3]) + (" and others" if len(faults) > 3 else "")
            not_run(ctx, NAME, conf, f"a hidden test failed by an error in the exercise's own code ({names}), not by an "
                                     "assertion about your kernel: the course staff need to fix the exercise",
                    grader_fault=True, detail="\n".join(f"{o['test']}:\n{o['fault']}" for o in faults))
            return []
        failed = [o for o in outcomes if o["outcome"] != "passed"]
        passed = len(outcomes) - len(failed)
        lines = [f"{passed} of {len(outcomes)} hidden tests passed."]
        lines += [f"- {o['test']}: {o['message'].splitlines()[0] if o['message'] else o['outcome']}" for o in failed]
        if stopped:
            lines.append(f"- the remaining hidden tests did not run: {stopped}")
        score = conf.points * passed / len(outcomes)
        return [verdict(NAME, conf, not failed and not stopped, "\n".join(lines), score=score)]


def _job_path(workdir: Path) -> Path:
    return workdir / "hidden-job.json"


def _write_job(ctx: Context) -> Path:
    """The job file the hidden-tests plugin reads (grader.run.child.hidden_tests); a child started early waits for it."""
    workdir = ctx.runner.workdir
    module = ctx.runner.modules[ctx.backend]["submission"]
    job = _job_path(workdir)
    # The reference's module: each launch's limit comes from its cost at that size (grader.run.child.launch_budget).
    reference = ctx.runner.modules[ctx.backend].get("reference")
    write_atomically(job, json.dumps({"exercise": str(ctx.exercise.root), "backend": ctx.backend, "module": module,
                                      "results": str(workdir / "hidden-results.jsonl"), "step_limit": ctx.spec.limits.step_limit,
                                      "reference": reference}))
    return job


def _pytest_args(runner: TaskSupervisor, exercise_root: Path) -> list[str]:
    return ["-q", "-p", "grader.run.child.hidden_tests", "-p", "no:cacheprovider", "--rootdir", str(runner.workdir),
            *map(str, test_files(exercise_root))]


def _start(runner: TaskSupervisor, exercise_root: Path, limits: Limits, backend: str, early: str | None = None) -> StartedChild:
    """Start pytest on the hidden test files. Third-party pytest plugins installed on the machine are
    not loaded: the plugin named here is the only one hidden tests need, and another could change
    what a test reports."""
    env = dict(runner.env)
    env.update(_pytest_env(runner))
    if early:
        env[EARLY_VARIABLE] = early
    argv = python_argv("pytest", *_pytest_args(runner, exercise_root))
    # The same rlimits as the launch child's: the tests run the kernel (on the emulator, its memory
    # cap too), so a kernel that allocates without bound stops here as it does there.
    wait = limits.compile_seconds * 2 + 10 if early else 0.0
    return start_child(argv, env=env, cwd=str(runner.workdir), output_cap=limits.output_bytes,
                       limits=child_limits(limits, wait + limits.run_seconds, backend))


def _pytest_env(runner: TaskSupervisor) -> dict[str, str]:
    return {JOB_VARIABLE: str(_job_path(runner.workdir)), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def hidden_prestart(exercise: Exercise, backend: str, runner: TaskSupervisor, wait: float) -> StartedChild | None:
    """Start the hidden tests' child while the submission compiles: pytest, the imports and the
    device are ready by the time the job file appears (at most `wait` seconds later)."""
    if not (exercise.spec.hidden_tests and test_files(exercise.root) and pytest_available()):
        return None
    return _start(runner, exercise.root, exercise.spec.limits, backend, f"{backend} {wait:.0f}")


# pytest's own exit statuses that mean it could not do its job: interrupted (a hidden test file
# that does not import), internal error, usage error, no tests collected. The submission causes
# none of them: its faults end a test (status 1) or kill the process (a signal, a timeout).
_PYTEST_BROKEN = {2: "interrupted: a hidden test file did not load", 3: "pytest's internal error",
                  4: "pytest usage error", 5: "no hidden test was collected"}


def pytest_available() -> bool:
    """Whether pytest is importable here (it is a dependency, but a hand-made environment may lack it)."""
    return importlib.util.find_spec("pytest") is not None


def _run_child(ctx: Context, started: StartedChild | None = None) -> tuple[str | None, bool]:
    """Run the hidden test files in a pytest child (or let the one started early go on): why it
    stopped early (None when it finished), and whether that was the grader's fault, not the kernel's."""
    with ctx.runner.clock.measure(STAGE):
        child = None
        worker = ctx.runner.env.get(gpu_worker.TESTS_VARIABLE)
        if started is None and worker:  # a batch slot's warm worker runs them on its device
            child = gpu_worker.run_job(worker, _job_path(ctx.runner.workdir), backend=ctx.backend,
                                       timeout=ctx.time_left(), output_cap=ctx.spec.limits.output_bytes,
                                       pytest_args=_pytest_args(ctx.runner, ctx.exercise.root), env=_pytest_env(ctx.runner))
        if child is None:
            # The grading's deadline (derived from the submission's own launches once they ran), not the run limit.
            child = (started or _start(ctx.runner, ctx.exercise.root, ctx.spec.limits, ctx.backend)).finish(ctx.time_left())
    if child.timed_out:
        return "stopped at the time limit", False
    if child.returncode in (0, 1):  # pytest exits 1 when a test failed
        return None, False
    if child.returncode in _PYTEST_BROKEN:
        return _PYTEST_BROKEN[child.returncode], True
    return child.describe(), False
