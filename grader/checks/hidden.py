"""Hidden tests: the exercise's own pytest files, run against the submission in a child process."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from ..hidden_tests import JOB_VARIABLE
from ..results import TestResult
from ..sandbox import ChildRun, python_argv, run_child
from ..spec import CheckSpec
from ..tasks import Task
from .base import Context, gate, verdict

NAME = "Hidden tests"


def test_files(exercise_root: Path) -> list[Path]:
    """The exercise's hidden test files."""
    return sorted((exercise_root / "tests").glob("test_*.py"))


STAGE = "hidden tests"


class HiddenTestsCheck:
    """Scored as points x passed / total, in the category the spec's [hidden_tests] names.

    The tests start with the other launches (plan) and are judged with the rest, so they add no time
    of their own to a grading; a kernel that hangs there stops at the same run_seconds limit.
    """

    def __init__(self, category: str = "correctness"):
        self.category = category

    def plan(self, ctx: Context, conf: CheckSpec) -> Sequence[Task]:
        files = test_files(ctx.exercise.root)
        if files and STAGE not in ctx.background:
            ctx.start(STAGE, _run_tests, ctx, files)
        return []

    def judge(self, ctx: Context, conf: CheckSpec) -> Sequence[TestResult]:
        gated = gate(ctx, NAME, conf, need_all=False)
        if gated:
            return [gated]
        if STAGE not in ctx.background:
            return [verdict(NAME, conf, True, "This exercise has no hidden tests.")]
        child, outcomes = ctx.finish(STAGE)
        if not outcomes:
            why = "stopped at the time limit" if child.timed_out else child.describe()
            return [verdict(NAME, conf, False, f"The hidden tests did not run ({why}).")]
        failed = [o for o in outcomes if o["outcome"] != "passed"]
        passed = len(outcomes) - len(failed)
        lines = [f"{passed} of {len(outcomes)} hidden tests passed."]
        lines += [f"- {o['test']}: {o['message'].splitlines()[0] if o['message'] else o['outcome']}" for o in failed]
        if child.timed_out:
            lines.append("- the remaining hidden tests stopped at the time limit")
        score = conf.points * passed / len(outcomes)
        return [verdict(NAME, conf, not failed and not child.timed_out, "\n".join(lines), score=score)]


def _run_tests(ctx: Context, files: Sequence[Path]) -> tuple[ChildRun, list[dict]]:
    """Run the hidden test files in a pytest child against the submission; (the child, one outcome per test)."""
    workdir = ctx.runner.workdir
    results = workdir / "hidden-results.jsonl"
    job = workdir / "hidden-job.json"
    module = ctx.runner.modules[ctx.backend]["submission"]
    job.write_text(json.dumps({"exercise": str(ctx.exercise.root), "backend": ctx.backend, "module": module,
                               "results": str(results), "step_limit": ctx.spec.limits.step_limit}))
    env = dict(ctx.runner.env)
    env[JOB_VARIABLE] = str(job)
    argv = python_argv("pytest", "-q", "-p", "grader.hidden_tests", "-p", "no:cacheprovider", "--rootdir", str(workdir),
                       *map(str, files))
    with ctx.runner.clock.measure(STAGE):
        child = run_child(argv, timeout=ctx.spec.limits.run_seconds, env=env, cwd=str(workdir),
                          output_cap=ctx.spec.limits.output_bytes)
    outcomes = [json.loads(line) for line in results.read_text().splitlines()] if results.exists() else []
    return child, outcomes
