"""The GPU side of a Triton grading: the student's launcher and kernel JIT-compiled by Triton and run
on CUDA tensors, in a jailed child given one GPU (grader/triton/sandbox.py, `gpu=`).

On a machine with a GPU the compiled run is added to the CPU path, never put in its place: the
interpreter's watch is what sees every load and store (a masked-off lane, a read past a tensor
inside the same allocation, the sectors per line), and compiled Triton is what the course's GPU runs
(TF32 in tl.dot, the compiler's rejections, a fault at an illegal address). Each case of the
exercise runs on both; a problem either one finds fails the check, named for where it was found.
What the GPU cannot see (reads outside a tensor that stay inside the allocation; compute-sanitizer
does not see them either: PyTorch's allocator hands out sub-allocations) the CPU's watch reports.

Which GPU: the first of CUDA_VISIBLE_DEVICES when it names one by index (a batch slot's), else 0.
A GPU child that cannot compile and run the grader's own kernel (tritonprobe) is the grader's
fault: the report says so in a note, and the CPU path's verdicts stand alone.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ..run.parent.device_probe import probe
from ..pyexercise.sandbox import LoadOutcome
from .sandbox import CaseOutcome, TritonWorker
from .spec import TritonSpec

PREFIX = "compiled on the GPU, "
# What a failed launch's error says when the kernel itself touched memory it must not (CUDA's words).
FAULT_WORDS = ("illegal memory access", "misaligned address", "illegal address", "out of bounds", "unspecified launch failure")


def gpu_index(requested: str) -> tuple[int | None, str]:
    """(the GPU to use, or None; a note for the report when one was asked for and cannot be had)."""
    if requested == "emu":
        return None, ""
    info = probe()
    if not info.available:
        return None, (f"A GPU was asked for, but none is usable ({info.reason}); graded on the CPU path only."
                      if requested == "gpu" else "")
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
    return (int(first) if first.isdigit() else 0), ""


@dataclass
class GpuRun:
    """What the GPU child did: one outcome per case run (in the cases' order), or why it did not run."""

    outcomes: list[tuple[int, CaseOutcome]] = field(default_factory=list)  # (index into prepared, outcome)
    # What loading the submission in the GPU child gave: the verdict on loading where the CPU path's
    # interpreter cannot run at all (the grader's fault there), None if the child did not start.
    loaded: LoadOutcome | None = None
    fault: str = ""
    output: str = ""
    isolation: str = ""
    seconds: float = 0.0


def run_cases(source: str, spec: TritonSpec, prepared: Sequence[tuple], params_of, index: int,
              hide: Sequence[Path]) -> GpuRun:
    """Every prepared case in one GPU child (a fresh one after a case that broke its CUDA context)."""
    started = time.monotonic()
    run = GpuRun()
    worker = TritonWorker(source, launcher=spec.launcher, limits=spec.limits, hide=hide, gpu=index)
    try:
        run.isolation = worker.isolation
        if worker.fault:
            run.fault = worker.fault
            return run
        run.loaded = worker.loaded
        if not (worker.loaded.ok and worker.loaded.defined.get(spec.launcher)):
            return run  # the CPU path says why it does not load; nothing new to say here
        for i, (check, sizes, inputs, _expected) in enumerate(prepared):
            if check == "hidden" and not spec.points.get("hidden"):
                continue
            run.outcomes.append((i, worker.run_case(params_of(spec, inputs, sizes), guard=spec.guard, repeat=spec.repeat)))
            if worker.dead:
                worker.restart()
                if worker.fault:
                    run.fault = worker.fault
                    return run
    finally:
        worker.close()
        run.output = worker.output
        run.seconds = time.monotonic() - started
    return run


def fault_finding(outcome: CaseOutcome) -> bool:
    """Whether a failed GPU launch's error is the kernel touching memory it must not."""
    text = outcome.error.lower()
    return not outcome.ok and any(w in text for w in FAULT_WORDS)
