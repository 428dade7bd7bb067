"""Correctness: every size against the float64 reference, twice, with fresh inputs each time.

Outputs start as NaN (an element never written is caught), each size runs two launches with
different random inputs (a result cached across launches is caught), and the message names the
first wrong element and the size.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..results import TestResult
from ..spec import CheckSpec
from ..run.tasks import Task
from .base import Context, CorrectnessSummary, failed_task_text, sizes_text, verdict
from .evidence import Evidence, gather
from .race import NAME as RACE_NAME
from .race import proven_race

LAUNCHES_PER_SIZE = 2
# The situations whose exercise hints correctness shows (spec.toml `[checks.correctness.hints]`).
HINT_SITUATIONS = ("ragged", "fails")


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
        covered = gather(ctx).covered(conf, HINT_SITUATIONS) if problems else frozenset()
        if "second_launch" in covered:  # the exercise's hint for it is shown below: no question of ours too
            problems = [p for p in (case_problem(ctx.results.get(f"correctness:{i}"), case, ask_why=False)
                                    for i, case in enumerate(cases)) if p is not None]
        racy = proven_race(ctx)
        ctx.correctness = CorrectnessSummary(passed, len(cases), racy=bool(racy))
        total = len(cases)
        if racy:
            # What a racing kernel computes depends on thread timing: the sizes it got right here may
            # be wrong at the next grading. The same file must get the same score, so none count.
            if passed:
                text = (f"It was right at {passed} of {total} sizes this time, but it has a race (see {RACE_NAME}), so "
                        "its results depend on thread timing and no correctness points are given until the race is "
                        "fixed:\n")
            else:
                text = f"Wrong at every size. It also has a race (see {RACE_NAME}), which may be the cause:\n"
            text += "\n".join(f"- {r}" for r in racy[:3])
            if problems:
                text += "\n" + "\n".join(f"- {p}" for p in problems)
            other = [c.text for c in gather(ctx).causes if c.fact in ("out_of_bounds", "uninit_read")][:MAX_CAUSES]
            if other:  # a race may come with a bad access: name that too
                text += "\nThe emulator also saw:\n" + "\n".join(f"- {c}" for c in other)
            return [verdict("Correctness", conf, False, text, score=0.0, extra={"sizes": per_size, "race": True})]
        extra: dict = {"sizes": per_size}
        if not problems:
            text = f"Right at all {total} sizes ({', '.join(sizes_text(c) for c in cases)}), two launches each with fresh inputs."
        else:
            evidence = gather(ctx)
            text = f"Wrong at {total - passed} of {total} sizes:\n" + "\n".join(f"- {p}" for p in problems)
            causes = cause_lines(evidence, covered)
            if causes:
                text += "\nWhat the emulator saw that explains it:\n" + "\n".join(f"- {c}" for c in causes)
            text += ("\n" + advice(evidence, conf)).rstrip("\n")
            extra["facts"] = sorted(evidence.facts)
            found = cause_findings(ctx)
            if found:  # by source line, for the HTML report (deduplicated there with memory-safety's)
                extra["findings"] = found
        score = conf.points * passed / total if total else 0.0
        return [verdict("Correctness", conf, not problems, text, score=score, extra=extra)]


def case_problem(result, case: Mapping[str, int], ask_why: bool = True) -> str | None:
    """What went wrong at one size, or None if every launch there was right. `ask_why`: add the
    grader's question when only a later launch went wrong (left out where an exercise hint for
    `second_launch` is shown instead)."""
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
            if ask_why and k and all(l.get("compare", {}).get("ok") for l in result.launches[:k]):
                hint = " The first launch was right: is something kept across launches (a __device__ or static variable)?"
            return f"{where}: {describe_mismatch(cmp, launch.get('emu'))}{hint}"
    return None


def describe_mismatch(cmp: Mapping[str, Any], emu: Mapping[str, Any] | None = None) -> str:
    """The first wrong element, how many are wrong, and how many the kernel never wrote: exactly, from
    the emulator's record of stores, or from the grader's fill pattern still in place (a NaN the
    kernel computed is not "never written")."""
    first = cmp.get("first") or {}
    idx = ", ".join(str(i) for i in first.get("index", []))
    got = first.get("got")
    text = f"{first.get('param', '?')}[{idx}] = {got}, expected {_fmt(first.get('want'))} (tolerance {_fmt(first.get('tol'))}); "
    text += f"{cmp['bad']:,} of {cmp['total']:,} elements wrong"
    if emu is not None and "unwritten" in emu:
        never = sum(emu["unwritten"].values())
        if never:
            text += f", {never:,} never written by the kernel"
    else:
        never = int(cmp.get("untouched", 0))
        if never:
            text += f", {never:,} never written (they still hold the value the grader filled the output with)"
    computed = int(cmp.get("nan", 0)) - never
    if computed > 0:
        text += f", {computed:,} NaN written by the kernel"
    return text


def _fmt(x: Any) -> str:
    return f"{x:.6g}" if isinstance(x, float) else str(x)


MAX_CAUSES = 4


def cause_lines(evidence: Evidence, covered: frozenset[str] = frozenset()) -> list[str]:
    """The emulator's findings that make values wrong, worst kind first: an out-of-bounds access
    before an uninitialised read before a race before an early read of an output. Shown under
    correctness even when memory safety or races are not graded: they are why the values are wrong.
    A finding's remedy is left out where an exercise hint written for its fact is shown (`covered`)."""
    order = {"out_of_bounds": 0, "uninit_read": 1, "race": 2, "early_output_read": 3}
    ranked = sorted(evidence.causes, key=lambda c: order.get(c.fact, 9))
    return [c.said(covered) for c in ranked[:MAX_CAUSES]]


def cause_findings(ctx: Context) -> list:
    """The memory and race findings by source line (the records memory safety and races attach)."""
    from .by_line import memory_findings, race_findings
    if not ctx.emu_available:
        return []
    return memory_findings(ctx) + race_findings(ctx)


def advice(evidence: Evidence, conf: CheckSpec) -> str:
    """What the failing sizes and elements have in common, then the exercise's hints that the
    submission's facts call for (spec.toml `hints` of the check, each with its `when`/`unless`);
    generic checks know no exercise, so a hint for another cause is never shown."""
    parts = []
    if evidence.common:
        parts.append(evidence.common)
    if evidence.elements:
        parts.append("Where: " + "; ".join(e.text() for e in evidence.elements) + ".")
    # The grader's own generic hint is given only where no hint of the exercise is: the exercise's words win.
    hints = (evidence.hints(conf, "ragged") if evidence.has("ragged") else []) + evidence.hints(conf, "fails")
    hints = list(dict.fromkeys(hints))
    if hints:
        parts.append("Hint: " + " ".join(hints))
    elif not evidence.causes and (evidence.has("written_wrong") or evidence.has("never_written")):
        # only for wrong values: a launch that failed or ran out of time has its own message
        parts.append("Hint: run a failing size yourself and compare element by element.")
    return "\n".join(parts)
