"""Hidden tests: the exercise's own pytest files, run against the submission in a child process."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from ..results import TestResult
from ..sandbox import python_argv, run_child
from ..spec import CheckSpec
from ..tasks import Task
from .base import Context, gate, verdict

NAME = "Hidden tests"


def test_files(exercise_root: Path) -> list[Path]:
    """The exercise's hidden test files."""
    return sorted((exercise_root / "tests").glob("test_*.py"))


STAGE = "hidden tests"
JOB_VARIABLE = "KERNEL_GRADER_HIDDEN_JOB"  # the job file grader.hidden_tests (the pytest plugin) reads


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
        files = test_files(ctx.exercise.root)
        if not files:
            return []
        job = _write_job(ctx)
        if STAGE not in ctx.background:
            ctx.start(STAGE, _run_child, ctx, job, files)
        return []

    def judge(self, ctx: Context, conf: CheckSpec) -> Sequence[TestResult]:
        gated = gate(ctx, NAME, conf, need_all=False)
        if gated:
            return [gated]
        if STAGE in ctx.background:
            stopped = ctx.finish(STAGE)
        else:
            return [verdict(NAME, conf, True, "This exercise has no hidden tests.")]
        results = ctx.runner.workdir / "hidden-results.jsonl"
        outcomes = [json.loads(line) for line in results.read_text().splitlines()] if results.exists() else []
        if not outcomes:
            return [verdict(NAME, conf, False, f"The hidden tests did not run ({stopped or 'no test reported'}).")]
        failed = [o for o in outcomes if o["outcome"] != "passed"]
        passed = len(outcomes) - len(failed)
        lines = [f"{passed} of {len(outcomes)} hidden tests passed."]
        lines += [f"- {o['test']}: {o['message'].splitlines()[0] if o['message'] else o['outcome']}" for o in failed]
        if stopped:
            lines.append(f"- the remaining hidden tests did not run: {stopped}")
        score = conf.points * passed / len(outcomes)
        return [verdict(NAME, conf, not failed and not stopped, "\n".join(lines), score=score)]


def _write_job(ctx: Context) -> Path:
    """The job file the hidden-tests plugin reads (grader.hidden_tests)."""
    workdir = ctx.runner.workdir
    job = workdir / "hidden-job.json"
    module = ctx.runner.modules[ctx.backend]["submission"]
    job.write_text(json.dumps({"exercise": str(ctx.exercise.root), "backend": ctx.backend, "module": module,
                               "results": str(workdir / "hidden-results.jsonl"), "step_limit": ctx.spec.limits.step_limit}))
    return job


def _run_child(ctx: Context, job: Path, files: Sequence[Path]) -> str | None:
    """Run the hidden test files in a pytest child; why it stopped early, or None when it finished."""
    workdir = ctx.runner.workdir
    env = dict(ctx.runner.env)
    env[JOB_VARIABLE] = str(job)
    argv = python_argv("pytest", "-q", "-p", "grader.hidden_tests", "-p", "no:cacheprovider", "--rootdir", str(workdir),
                       *map(str, files))
    with ctx.runner.clock.measure(STAGE):
        child = run_child(argv, timeout=ctx.spec.limits.run_seconds, env=env, cwd=str(workdir),
                          output_cap=ctx.spec.limits.output_bytes)
    if child.timed_out:
        return "stopped at the time limit"
    return None if child.returncode in (0, 1) else child.describe()  # pytest exits 1 when a test failed
