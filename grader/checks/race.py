"""Races: repeated launches compared bitwise (GPU), exact shared-memory hazards and divergent
barriers (emulator), and compute-sanitizer racecheck and synccheck where present."""
from __future__ import annotations

from typing import Sequence

from ..results import TestResult
from ..spec import CheckSpec
from ..run.tasks import Task
from .base import Context, failed_task_text, gate, not_graded, sizes_text, unfinished_task_text, verdict
from .by_line import launch_per_line, race_findings
from .findings import (bullet, emu_findings_task, emu_problems, gpu_stands_in, memory_messages, race_messages,
                       race_notes, sanitizer_messages, start_sanitizers, unfinished_verdict)

NAME = "Races and barriers"
SANITIZERS = ("racecheck", "synccheck")


class RaceCheck:
    category = "race"

    def plan(self, ctx: Context, conf: CheckSpec) -> Sequence[Task]:
        tasks = []
        if ctx.backend == "gpu":
            label = "race:repeat"
            seed = ctx.seed_for(label)
            tasks.append(Task(id=label, kind="run", backend="gpu", sizes=conf.size, seeds=(seed,) * conf.launches))
        if ctx.emu_available:
            tasks.append(emu_findings_task(ctx, conf.emu_size or conf.size))
        start_sanitizers(ctx, conf, SANITIZERS, conf.emu_size or conf.size)
        return tasks

    def judge(self, ctx: Context, conf: CheckSpec) -> Sequence[TestResult]:
        # The gate withholds a pass from a kernel that is right nowhere (it would earn these points for
        # doing nothing); a hazard the emulator or a sanitizer saw fails the check either way. Repeated
        # launches that disagree say nothing about races in a kernel that is wrong everywhere.
        gated = gate(ctx, NAME, conf, need_all=False)
        problems: list[str] = []
        extra: dict = {}
        if ctx.backend == "gpu" and not gated:
            problems += _repeat_problems(ctx, conf, extra)
        if ctx.emu_available:
            problems += race_messages(ctx)
            extra["emulator"] = emu_problems(ctx) or "ran"
        small = conf.emu_size or conf.size
        _add_line_data(ctx, small, extra)
        problems += sanitizer_messages(ctx, conf, SANITIZERS, small, self.category)
        if gated and not problems:
            return [gated]
        # the legacy warp-synchronous idiom where this exercise allows it: named, never failed
        notes = race_notes(ctx) if ctx.emu_available else []
        if notes:
            extra["warp_synchronous"] = "allowed"  # the text (student source quoted) is in the output only
        if problems:
            return [verdict(NAME, conf, False, "Races or barrier errors found:\n" + bullet(problems)
                            + ("\n" + bullet(notes) if notes else ""), extra=extra)]
        stopped = unfinished_verdict(ctx, NAME, conf, small, "races", extra)
        if stopped:
            return [stopped]
        if extra.get("unfinished"):
            return [not_graded(NAME, conf, extra.pop("unfinished"), "races", extra)]
        how = []
        if ctx.backend == "gpu" and extra.get("distinct_results") == 1:
            how.append(f"{conf.launches} launches at {sizes_text(conf.size)} gave bitwise-identical results")
        elif ctx.backend == "gpu" and conf.compare == "tolerance" and extra.get("distinct_results", 0) > 1:
            how.append(f"{conf.launches} launches at {sizes_text(conf.size)} all agreed with the reference within the "
                       "tolerance (they differ only in the order float atomics added)")
        if ctx.emu_available and not gpu_stands_in(ctx, small):
            other = "other " if notes else ""
            how.append(f"the emulator found no {other}hazard in shared or global memory (between warps, lanes of a "
                       f"warp, or blocks) and no divergent barrier at {sizes_text(small)}")
        elif ctx.backend == "gpu" and ctx.tools.sanitizer and conf.sanitizer != "never":
            how.append(f"compute-sanitizer racecheck and synccheck found nothing at {sizes_text(small)}")
        how = how or ["no launch disagreed and no hazard was seen"]
        text = "No race found: " + "; ".join(how) + "."
        if notes:
            text += "\n" + bullet(notes)
        return [verdict(NAME, conf, True, text, extra=extra)]


def _add_line_data(ctx: Context, small, extra: dict) -> None:
    """The findings by source line (extra_data.findings) and the emulated launch's counters per line
    (extra_data.per_line), for the HTML report: the only per-line counts on a GPU (ncu gives
    totals), and on the emulator when the traffic check is not graded (a race gates it)."""
    if not ctx.emu_available:
        return
    found = race_findings(ctx)
    if found:
        extra["findings"] = found
    counts = launch_per_line(ctx, "emu:" + sizes_text(small))
    if counts:
        extra["per_line"] = counts


def _repeat_problems(ctx: Context, conf: CheckSpec, extra: dict) -> list[str]:
    result = ctx.results.get("race:repeat")
    if result is not None and result.status == "crashed":
        # The kernel broke the process (a fault): a memory-safety or correctness verdict, graded
        # there; it says nothing of races. The hazard checks below still judge those.
        extra["launch_error"] = result.message[:300]
        return []
    unfinished = unfinished_task_text(result, conf.size)
    if unfinished:  # the repeated launches never completed: they say nothing of races either way
        extra["unfinished"] = unfinished
        return []
    lost = failed_task_text(result, conf.size)
    if lost:
        return [lost]
    errors = [l["error"] for l in result.launches if l.get("error")]
    if errors:
        # A failing launch is a memory-safety or correctness verdict, graded there; it says nothing of races.
        extra["launch_error"] = errors[0]
    differ = _launches_differ(ctx, conf, result, extra)
    return [differ] if differ else []


def _launches_differ(ctx: Context, conf: CheckSpec, result, extra: dict) -> str | None:
    """The message when launches with identical inputs gave different results, and nothing else
    (memory outside the arrays) explains it; None otherwise."""
    if result is None or result.status != "ok":
        return None
    digests = [l.get("digest") for l in result.launches if not l.get("error")]
    distinct = len(set(digests))
    extra["distinct_results"] = distinct
    if distinct < 2:
        return None
    # Reads or writes outside the arrays make launches differ too (they see or change memory the
    # grader does not control). That is a memory-safety bug, graded there; the race verdict then
    # rests on the hazard checks (the emulator's and racecheck), which see races directly.
    corrupting = any(l.get("canary") or l.get("inputs_modified") for l in result.launches)
    if corrupting or (ctx.emu_available and memory_messages(ctx)):
        extra["note"] = "launches differed, but the kernel also accesses memory outside its arrays (see Memory safety)"
        return None
    wrong = sum(1 for l in result.launches if l.get("compare") and not l["compare"]["ok"])
    if conf.compare == "tolerance" and not wrong:
        # Float atomics add in a different order each launch: results that differ in their last
        # bits but all lie within the tolerance are not a race under this spec.
        extra["note"] = (f"{distinct} bitwise-different results, all within the tolerance of the reference "
                         "(float atomics add in a different order each launch)")
        return None
    return (f"{len(digests)} launches at {sizes_text(conf.size)} with identical inputs gave {distinct} different results "
            f"({wrong} of them wrong): threads race (a missing __syncthreads(), or a plain read-modify-write where an "
            "atomic is needed?).")


def proven_race(ctx: Context) -> list[str]:
    """Evidence that the kernel races, for any check that scores by it: the hazards and barrier
    errors the emulator saw (exact and deterministic) and, on a GPU, launches with identical
    inputs that gave different results."""
    found = race_messages(ctx) if ctx.emu_available else []
    conf = ctx.spec.checks.get("race")
    if ctx.backend == "gpu" and conf is not None:
        differ = _launches_differ(ctx, conf, ctx.results.get("race:repeat"), {})
        if differ:
            found.append(differ)
    return found
