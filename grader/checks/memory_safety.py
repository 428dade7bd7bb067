"""Memory safety: canaries around every buffer and untouched inputs (GPU), exact out-of-bounds and
uninitialised-shared-memory findings (emulator), compute-sanitizer memcheck where present."""
from __future__ import annotations

from typing import Sequence

from ..results import TestResult
from ..spec import CheckSpec
from ..run.tasks import Task
from .base import Context, failed_task_text, gate, not_graded, sizes_text, unfinished_task_text, verdict
from .by_line import memory_findings
from .findings import bullet, emu_findings_task, memory_messages, sanitizer_messages, start_sanitizers, unfinished_verdict

NAME = "Memory safety"
SANITIZERS = ("memcheck",)


class MemorySafetyCheck:
    category = "memory-safety"

    def plan(self, ctx: Context, conf: CheckSpec) -> Sequence[Task]:
        tasks = []
        if ctx.backend == "gpu":
            tasks.append(Task(id="memory:canary", kind="run", backend="gpu", sizes=conf.size,
                              seeds=(ctx.seed_for("memory:canary"),), compare=False))
        if ctx.emu_available:
            tasks.append(emu_findings_task(ctx, conf.emu_size or conf.size))
            if ctx.backend == "gpu":
                # The emulator's small correctness sizes too, as on the emu backend: a bug of the ragged
                # edge (threads that return early and leave shared memory unwritten, a read past a
                # one-element array) often shows only at a size smaller than one block.
                tasks.extend(emu_findings_task(ctx, case) for case in ctx.spec.emu_cases)
        start_sanitizers(ctx, conf, SANITIZERS, conf.emu_size or conf.size)
        return tasks

    def judge(self, ctx: Context, conf: CheckSpec) -> Sequence[TestResult]:
        # The gate withholds a pass from a kernel that is right nowhere (it would earn these points for
        # doing nothing); a definite finding fails the check either way, and says so plainly.
        gated = gate(ctx, NAME, conf, need_all=False)
        problems: list[str] = []
        if not gated:
            problems += _launch_problems(ctx, conf)
        if ctx.emu_available:
            problems += memory_messages(ctx)
        small = conf.emu_size or conf.size
        problems += sanitizer_messages(ctx, conf, SANITIZERS, small, self.category)
        if gated and not problems:
            return [gated]
        if problems:
            found = memory_findings(ctx) if ctx.emu_available else []  # by source line, for the HTML report
            return [verdict(NAME, conf, False, "Unsafe memory accesses:\n" + bullet(problems),
                            extra={"findings": found} if found else None)]
        stopped = unfinished_verdict(ctx, NAME, conf, small, "memory safety")
        if stopped:
            return [stopped]
        canary = ctx.planned.get("memory:canary")
        unfinished = canary and unfinished_task_text(ctx.results.get(canary.id), canary.sizes)
        if unfinished:
            return [not_graded(NAME, conf, unfinished, "memory safety")]
        return [verdict(NAME, conf, True, "No out-of-bounds access, no write outside the outputs, no read of unwritten shared memory.")]


def _launch_problems(ctx: Context, conf: CheckSpec) -> list[str]:
    """Canary damage, modified inputs and faulting launches from every launch of this grading."""
    out, seen = [], set()
    for task_id, task in ctx.planned.items():
        result = ctx.results.get(task_id)
        if task.kind != "run" or result is None:
            continue
        # A canary launch that never completed found nothing either way: judge() says it was not graded.
        if task_id == "memory:canary" and not unfinished_task_text(result, task.sizes):
            lost = failed_task_text(result, task.sizes)
            if lost:
                out.append(lost)
        for launch in result.launches:
            for name, sides in launch.get("canary", {}).items():
                for side, count in sides.items():
                    key = ("canary", name, side)
                    if key not in seen:
                        seen.add(key)
                        out.append(f"{sizes_text(task.sizes)}: the kernel wrote outside every array: {count} element(s) "
                                   f"landed just {side} the buffer {name}. Check the guard on every store.")
            for name in launch.get("inputs_modified", []):
                if ("input", name) not in seen:
                    seen.add(("input", name))
                    out.append(f"{sizes_text(task.sizes)}: the kernel wrote into the input {name}, which must stay unchanged.")
            error = launch.get("error", "")
            if "illegal address" in error or "misaligned" in error:
                if ("fault", error) not in seen:
                    seen.add(("fault", error))
                    out.append(f"{sizes_text(task.sizes)}: {error}")
    return out
