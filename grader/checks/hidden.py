"""Hidden tests: the exercise's own pytest files, run against the submission in a child process."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from ..hidden_tests import JOB_VARIABLE
from ..results import TestResult
from ..sandbox import python_argv, run_child
from ..spec import CheckSpec
from ..tasks import Task
from .base import Context, gate, verdict

NAME = "Hidden tests"


def test_files(exercise_root: Path) -> list[Path]:
    """The exercise's hidden test files."""
    return sorted((exercise_root / "tests").glob("test_*.py"))


class HiddenTestsCheck:
    """Scored as points x passed / total, in the category the spec's [hidden_tests] names."""

    def __init__(self, category: str = "correctness", seconds: float | None = None):
        self.category = category
        self.seconds = seconds  # what is left of the grading's run budget; default: the spec's run_seconds

    def plan(self, ctx: Context, conf: CheckSpec) -> Sequence[Task]:
        return []

    def judge(self, ctx: Context, conf: CheckSpec) -> Sequence[TestResult]:
        gated = gate(ctx, NAME, conf, need_all=False)
        if gated:
            return [gated]
        files = test_files(ctx.exercise.root)
        if not files:
            return [verdict(NAME, conf, True, "This exercise has no hidden tests.")]
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
        with ctx.runner.clock.measure("hidden tests"):
            child = run_child(argv, timeout=self.seconds or ctx.spec.limits.run_seconds, env=env, cwd=str(workdir),
                              output_cap=ctx.spec.limits.output_bytes)
        outcomes = [json.loads(line) for line in results.read_text().splitlines()] if results.exists() else []
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
