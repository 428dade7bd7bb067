"""Performance: CUDA-event timing of the submission against the reference solution and the vendor
library in the same run; points by the fraction of the reference's speed."""
from __future__ import annotations

from typing import Sequence

from ..results import TestResult
from ..spec import CheckSpec
from ..run.tasks import MODULE_NAMES, Task, timed_call_name
from .base import Context, gate, not_run, sizes_text, verdict
from .correctness import describe_mismatch, task_ids as correctness_task_ids

NAME = "Performance"
TASK_ID = "time"


# The file the pipeline creates once nothing is left that could run beside a timed launch
# (api._release_gpu_when_idle).
GPU_FREE = "gpu-free"
# Points come in steps (a quarter of them each), not in proportion to the measured speed: timing
# noise of a few percent then changes no score unless it crosses a step's edge, and the same file
# graded twice keeps its grade.
STEPS = 4


def step_fraction(reached: float) -> float:
    """The fraction of the points for reaching `reached` of the full-marks speed: 1 at or above it,
    else the last whole step below it (0.25, 0.5, 0.75), 0 under the first step."""
    if reached >= 1.0:
        return 1.0
    return max(0.0, int(reached * STEPS) / STEPS)


class PerformanceCheck:
    category = "performance"

    def plan(self, ctx: Context, conf: CheckSpec) -> Sequence[Task]:
        """One timing task, last in the child that ran the correctness launches (no second CUDA
        start-up), after the pipeline says the GPU is free (the hidden tests done; ncu's launches each hold
        a share of the GPU lock, so they wait for the timed ones), and only if
        every correctness launch succeeded. It times the submission and, in turns with it, the
        reference solution (and the vendor library): a ratio of two times taken together holds still
        where two separate windows would drift apart. The reference's outputs are zeroed after each of
        its calls, so they never exist while student code runs."""
        if ctx.backend != "gpu" or not ctx.has_reference:
            return []
        rivals = ("reference",) + (("baseline",) if conf.baseline in ("cublas", "library") else ())
        return [Task(id=TASK_ID, kind="time", backend="gpu", module="submission", rivals=rivals, sizes=conf.size,
                     seeds=(ctx.seed_for("performance"),), repeats=conf.repeats, after=str(ctx.runner.workdir / GPU_FREE),
                     requires=tuple(correctness_task_ids(ctx)))]

    def judge(self, ctx: Context, conf: CheckSpec) -> Sequence[TestResult]:
        if ctx.backend != "gpu":
            not_run(ctx, NAME, conf, "needs a GPU (the emulator counts, it does not time)")
            return []
        gated = gate(ctx, NAME, conf, need_all=True)
        if gated:
            return [gated]
        if not ctx.has_reference:
            not_run(ctx, NAME, conf, "no reference solution is available to compare with")
            return []
        r = ctx.results.get(TASK_ID)
        wrong = r.data.get("wrong") if r is not None and r.status != "ok" else None
        if wrong:
            return [verdict(NAME, conf, False, wrong_answer_text(wrong, conf), extra={"wrong_call": wrong.get("call")})]
        if r is None or r.status != "ok":
            module = (r.data.get("module") if r else None) or "submission"
            return [verdict(NAME, conf, False, f"Timing the {MODULE_NAMES.get(module, module)} at {sizes_text(conf.size)} failed: "
                                               f"{r.message if r else 'no result'}")]
        # The speed is the ratio of the fastest calls, not of the medians: another process's work on
        # the GPU (time-sliced with the timed kernel) only ever adds time, and in a batch on an H200 it
        # moved one copy's median by 15% while the three copies' fastest calls stayed within 0.06%
        # (docs/benchmarks.md). The medians are shown and kept beside it.
        ms = dict(r.data["median_ms"])
        fastest = dict(r.data.get("min_ms") or ms)
        shared = bool(r.data.get("shared_gpu"))
        speed = fastest["reference"] / fastest["submission"] if fastest["submission"] > 0 else 0.0
        fraction = step_fraction(speed / conf.full_marks)
        score = conf.points * fraction
        text = (f"fastest of {r.data.get('repeats', conf.repeats)} timed calls {fastest['submission']:.3f} ms against "
                f"{fastest['reference']:.3f} ms for the reference solution at {sizes_text(conf.size)} (medians "
                f"{ms['submission']:.3f} and {ms['reference']:.3f} ms): {speed:.0%} of its speed (full marks from "
                f"{conf.full_marks:.0%}; {fraction:.0%} of the points, in steps of {1 / STEPS:.0%}).")
        if "baseline" in fastest:
            lib = "cuBLAS" if conf.baseline == "cublas" else "the library"
            text += (f" {lib}: {fastest['baseline']:.3f} ms, so you reach {fastest['baseline'] / fastest['submission']:.0%} "
                     f"of {lib}'s speed.")
        if shared:
            text += (" Another grading kept running on this GPU while it was timed (a batch sharing the GPU, with a "
                     "kernel that would not finish), so these times may be slower than the kernel really is.")
        extra = {"median_ms": ms, "min_ms": fastest, "fraction_of_reference": round(speed, 4), "shared_gpu": shared}
        return [verdict(NAME, conf, speed >= conf.full_marks, text, score=score, extra=extra)]


def wrong_answer_text(wrong: dict, conf: CheckSpec) -> str:
    """Why a timing that caught a wrong answer gives no points: which call, and what was wrong."""
    call, calls = wrong.get("call", "?"), wrong.get("calls", "?")
    text = (f"No performance points: at {sizes_text(conf.size)}, {timed_call_name(call, calls)} computed a wrong answer: "
            f"{describe_mismatch(wrong.get('compare') or {})}. The submission is called once before it is timed and "
            "each answer is checked, every timed call's too (its outputs are filled with NaN before it runs); speed "
            "counts only for calls that compute the whole answer.")
    if call == 0:
        return text + " The answer at this size was wrong from the first call."
    return text + (" The call before the timed calls was right: is something kept across launches (a __device__ or "
                   "static variable, a launch counter)?")
