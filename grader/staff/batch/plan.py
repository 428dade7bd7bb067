"""How a batch is to run: its options, the slots of a local batch (one environment per grading at
once, with the GPU it may use and its share of the cores' BLAS threads), and the time limit of one
submission.
"""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from typing import Sequence

from ...errors import UsageError
from ...exercise import Exercise
from ...run.parent import math_threads

GPU_SLOT_THREADS = 4  # BLAS threads a GPU slot gets at least (plan_slots)


@dataclass(frozen=True)
class Options:
    """How to run a batch; the CLI fills it, defaults live here."""

    backend: str = "auto"
    workers: int | None = None     # default: the number of usable cores
    per_gpu: int = 8  # gradings sharing one GPU; grader.run.gpu_lock keeps timings exclusive
    timeout: float | None = None   # per submission; default from the exercise's [limits]
    seed: int | None = None
    regrade: bool = False          # ignore existing results
    ray: str | None = None         # grade on a Ray cluster: its address, or "" for ray.init()'s default; None: here
    profile_group: int = 8         # on a GPU, ncu profiles up to this many gradings per run (grader.run.parent.profile_broker); 0: each its own
    fork_server: bool = True       # fork each grading's Python children from a warm process (grader.run.parent.fork_server)


def visible_gpus() -> list[str]:
    """The GPUs a child may be pinned to, as CUDA_VISIBLE_DEVICES values (respecting the caller's own)."""
    preset = os.environ.get("CUDA_VISIBLE_DEVICES")
    if preset is not None:
        return [d.strip() for d in preset.split(",") if d.strip() and not d.strip().startswith("-")]
    try:
        run = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30)
        found = [line.strip() for line in run.stdout.splitlines() if line.strip().isdigit()]
        if run.returncode == 0 and found:
            return found
    except (OSError, subprocess.SubprocessError):
        pass
    return ["0"]  # CuPy saw a GPU but nvidia-smi cannot count them: use device 0 only


def plan_slots(backend: str, workers: int | None, per_gpu: int, gpus: Sequence[str] = (), cores: int | None = None) -> list[dict[str, str]]:
    """One environment per concurrent child: on a GPU, per_gpu children per GPU; else one per core."""
    cores = cores or math_threads.usable_cores()
    if workers is not None and workers < 1:
        raise UsageError("--workers must be at least 1")
    if per_gpu < 1:
        raise UsageError("--per-gpu must be at least 1")
    if backend == "gpu":
        slots = [{"CUDA_VISIBLE_DEVICES": g} for _ in range(per_gpu) for g in gpus]  # round-robin over GPUs
        slots = slots[: workers] if workers else slots
    else:
        slots = [{} for _ in range(min(workers or cores, cores))]
    threads = cores // len(slots)  # the cores shared out among the slots' BLAS
    if backend == "gpu":
        # A GPU slot's processes mostly wait on the GPU (under half the cores were busy in a batch of
        # 100 on one or two H200s), but its float64 references are its longest CPU work: on two GPUs,
        # 32 cores shared by 16 slots gave 2 threads each and the correctness launches took twice as long
        # as with 4 (0.53 s against 1.01 s a grading). A floor, then, where the cores allow it.
        threads = max(threads, min(GPU_SLOT_THREADS, cores))
    for slot in slots:
        slot.update(math_threads.limits(threads))
    return slots


def default_timeout(exercise: Exercise, backend: str) -> float:
    """Per-submission limit: the compile limit (submission and reference) and each run stage, plus a margin."""
    limits = exercise.spec.limits
    stages = 2 if backend == "gpu" else 1
    return 2 * limits.compile_seconds + stages * limits.run_seconds + 60.0
