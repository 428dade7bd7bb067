"""Correctness: every size against the float64 reference, twice, with fresh inputs each time.

Outputs start as NaN (an element never written is caught), each size runs two launches with
different random inputs (a result cached across launches is caught), and the message names the
first wrong element and the size.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..results import TestResult
from ..spec import CheckSpec
from ..tasks import Task
from .base import Context, CorrectnessSummary, failed_task_text, sizes_text, verdict

LAUNCHES_PER_SIZE = 2


def task_ids(ctx: Context) -> list[str]:
    """Ids of the correctness launches planned for this grading."""
    return [tid for tid in ctx.planned if tid.startswith("correctness:")]


class CorrectnessCheck:
    category = "correctness"

    def plan(self, ctx: Context, conf: CheckSpec) -> Sequence[Task]:
        return [
            Task(id=f"correctness:{i}", kind="run", backend=ctx.backend, sizes=case,
                 seeds=tuple(ctx.seed_for(f"correctness:{i}:{k}") for k in range(LAUNCHES_PER_SIZE)))
            for i, case in enumerate(ctx.spec.cases_for(ctx.backend))
        ]

    def judge(self, ctx: Context, conf: CheckSpec) -> Sequence[TestResult]:
        cases = ctx.spec.cases_for(ctx.backend)
        problems, passed = [], 0
        per_size = []
        for i, case in enumerate(cases):
            problem = case_problem(ctx.results.get(f"correctness:{i}"), case)
            per_size.append({"sizes": dict(case), "passed": problem is None})
            if problem is None:
                passed += 1
            else:
                problems.append(problem)
        ctx.correctness = CorrectnessSummary(passed, len(cases))
        total = len(cases)
        if not problems:
            text = f"Right at all {total} sizes ({', '.join(sizes_text(c) for c in cases)}), two launches each with fresh inputs."
        else:
            text = f"Wrong at {total - passed} of {total} sizes:\n" + "\n".join(f"- {p}" for p in problems)
            text += "\n" + _advice(cases, per_size)
        score = conf.points * passed / total if total else 0.0
        return [verdict("Correctness", conf, not problems, text, score=score, extra={"sizes": per_size})]


def case_problem(result, case: Mapping[str, int]) -> str | None:
    """What went wrong at one size, or None if every launch there was right."""
    lost = failed_task_text(result, case)
    if lost:
        return lost
    for k, launch in enumerate(result.launches):
        where = sizes_text(case) + (" (second launch, new inputs)" if k else "")
        if launch.get("error"):
            return f"{where}: {launch['error']}"
        cmp = launch.get("compare")
        if cmp is None:
            return f"{where}: no output to compare"
        if not cmp["ok"]:
            hint = ""
            if k and all(l.get("compare", {}).get("ok") for l in result.launches[:k]):
                hint = " The first launch was right: is something kept across launches (a __device__ or static variable)?"
            return f"{where}: {describe_mismatch(cmp)}{hint}"
    return None


def describe_mismatch(cmp: Mapping[str, Any]) -> str:
    first = cmp.get("first") or {}
    idx = ", ".join(str(i) for i in first.get("index", []))
    got = first.get("got")
    text = f"{first.get('param', '?')}[{idx}] = {got}, expected {_fmt(first.get('want'))} (tolerance {_fmt(first.get('tol'))}); "
    text += f"{cmp['bad']:,} of {cmp['total']:,} elements wrong"
    if cmp.get("nan"):
        text += f", {cmp['nan']:,} never written (still NaN)"
    return text


def _fmt(x: Any) -> str:
    return f"{x:.6g}" if isinstance(x, float) else str(x)


def _advice(cases, per_size) -> str:
    ok_sizes = [p["sizes"] for p in per_size if p["passed"]]
    bad_sizes = [p["sizes"] for p in per_size if not p["passed"]]
    if ok_sizes and bad_sizes and all(all(v % 32 == 0 for v in s.values()) for s in ok_sizes) and \
            all(any(v % 32 for v in s.values()) for s in bad_sizes):
        return "Hint: only sizes that are not a multiple of 32 fail: check the guards of the last, partial tile."
    return "Hint: run the failing size yourself and compare element by element."
