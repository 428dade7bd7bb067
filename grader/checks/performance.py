"""Performance: CUDA-event timing of the submission against the reference solution and the vendor
library in the same run; points by the fraction of the reference's speed."""
from __future__ import annotations

from concurrent.futures import wait
from typing import Sequence

from ..results import NotRun, TestResult
from ..spec import CheckSpec
from ..tasks import Task
from .base import Context, gate, sizes_text, verdict

NAME = "Performance"


class PerformanceCheck:
    category = "performance"

    def plan(self, ctx: Context, conf: CheckSpec) -> Sequence[Task]:
        return []  # timed in its own child after everything else, so nothing else shares the GPU

    def judge(self, ctx: Context, conf: CheckSpec) -> Sequence[TestResult]:
        if ctx.backend != "gpu":
            ctx.not_run.append(NotRun(NAME, self.category, "timing needs a GPU (the emulator counts, it does not time)"))
            return []
        gated = gate(ctx, NAME, conf, need_all=True)
        if gated:
            return [gated]
        if not ctx.has_reference:
            ctx.not_run.append(NotRun(NAME, self.category, "no reference solution is available to compare with"))
            return []
        wait(list(ctx.background.values()))  # nothing else may share the GPU while it is timed
        seed = ctx.seed_for("performance")
        # The submission runs first: the reference's output never exists while student code runs.
        modules = ["submission", "reference"] + (["baseline"] if conf.baseline == "cublas" else [])
        tasks = [Task(id=f"time:{m}", kind="time", backend="gpu", module=m, sizes=conf.size, seeds=(seed,),
                      repeats=conf.repeats) for m in modules]
        stage = ctx.runner.run(tasks, backend="gpu", label="timing")
        ms = {}
        for t in tasks:
            r = stage.results.get(t.id)
            if r is None or r.status != "ok":
                return [verdict(NAME, conf, False, f"Timing the {t.module} at {sizes_text(conf.size)} failed: "
                                                   f"{r.message if r else 'no result'}")]
            ms[t.module] = r.data["median_ms"]
        speed = ms["reference"] / ms["submission"] if ms["submission"] > 0 else 0.0
        score = conf.points * min(1.0, speed / conf.full_marks)
        text = (f"median {ms['submission']:.3f} ms against {ms['reference']:.3f} ms for the reference solution at "
                f"{sizes_text(conf.size)}: {speed:.0%} of its speed (full marks from {conf.full_marks:.0%}).")
        if "baseline" in ms:
            text += f" cuBLAS: {ms['baseline']:.3f} ms, so you reach {ms['baseline'] / ms['submission']:.0%} of cuBLAS."
        extra = {"median_ms": ms, "fraction_of_reference": round(speed, 4)}
        return [verdict(NAME, conf, speed >= conf.full_marks, text, score=score, extra=extra)]
