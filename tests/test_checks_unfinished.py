"""grader.checks: a check whose own GPU launch never completed (it hung, or its child stopped at an
earlier launch that hung) is not graded, rather than reporting as found what it never looked for."""
from __future__ import annotations

from pathlib import Path

import pytest

from grader.checks.base import Context, CorrectnessSummary
from grader.checks.memory_safety import MemorySafetyCheck
from grader.checks.race import RaceCheck
from grader.exercise import load
from grader.run.tasks import Task, TaskResult
from grader.tools import Tools

ROOT = Path(__file__).resolve().parent.parent
HUNG = "not run: an earlier launch (N = 129) hung"


def _context(task_id: str, result: TaskResult) -> Context:
    exercise = load(ROOT / "exercises" / "level2")
    ctx = Context(exercise=exercise, backend="gpu", runner=None, seed=1, tools=Tools(), source_name="s.cu", source="",
                  has_reference=True, emu_available=False)
    ctx.planned[task_id] = Task(id=task_id, kind="run", backend="gpu", sizes={"N": 100}, seeds=(1,), compare=False)
    ctx.results[task_id] = result
    ctx.correctness = CorrectnessSummary(7, 10)
    return ctx


CASES = [(MemorySafetyCheck, "memory-safety", "memory:canary"), (RaceCheck, "race", "race:repeat")]


@pytest.mark.parametrize("check, category, task_id", CASES)
@pytest.mark.parametrize("status, message", [("skipped", HUNG), ("timeout", "the kernel did not finish")])
def test_a_check_whose_launch_never_completed_is_not_graded(check, category, task_id, status, message):
    ctx = _context(task_id, TaskResult(task_id, status, message))
    [result] = check().judge(ctx, ctx.spec.checks[category])
    assert not result.passed and result.score == 0 and result.extra.get("gated")
    assert result.output.startswith("Not graded: the launch this check needs did not complete") and message in result.output
    assert "found" not in result.output.split("(")[0] and "Unsafe" not in result.output


@pytest.mark.parametrize("check, category, task_id", CASES)
def test_a_launch_that_completed_is_still_judged(check, category, task_id):
    ctx = _context(task_id, TaskResult(task_id, "ok", launches=({"digest": "a", "seed": 1},)))
    [result] = check().judge(ctx, ctx.spec.checks[category])
    assert result.passed, result.output
    crashed = _context(task_id, TaskResult(task_id, "crashed", "the process running your kernel was killed (SIGKILL)"))
    [result] = check().judge(crashed, crashed.spec.checks[category])
    assert not result.extra.get("gated")  # a crash is not a launch that never ran
