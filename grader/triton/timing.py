"""The performance check of a Triton exercise: on a GPU only, the student's launcher timed at the
spec's `[performance]` size against the reference solution (and the library, shown for information).

Two GPU children, one after the other, never at once: the student's (its launcher, compiled by
Triton) and one of staff code only (reference/<id>/solution.py and harness.py's library()), which the
student's code never shares. In each, child.py's _time: two untimed calls (the first compiles), then
`repeats` calls each timed by CUDA events, its outputs filled with the poison pattern, the L2
flushed and the stream held in torch.cuda._sleep() before it so that the launcher's Python is over
before the start event fires. The fastest call counts, as in the CUDA kind's check
(grader/checks/performance.py): another process's work on the GPU only ever adds time. Points come
in that check's steps of a quarter, by the fraction of the reference's speed reached over
`full_marks`.

Every checked call of the student's (the first untimed one and each timed one) reports how many
output elements still hold NaN and its values at sampled indices; the grader compares them with the
float64 reference of the timing's inputs. A launch that skips work once it is timed leaves the
poison, which no tolerance admits: no points. The times are measured inside the student's process
(its clock taken before the submission loads), so they are evidence, as the CPU path's watch is.
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..checks.performance import STEPS, step_fraction
from ..exercise import Exercise
from ..results import NotRun, TestResult
from .sandbox import TimingOutcome, TritonWorker
from .spec import Performance, TritonSpec, sizes_label

TITLE = "Performance (timed on the GPU against the reference)"
CATEGORY = "performance"
WARMUP = 2
# torch.cuda._sleep's argument is in GPU clock cycles: 2,000,000 is about 1 ms at an H200's 1.98 GHz,
# longer than a launcher's Python and Triton's launch path (tens of microseconds), so the timed kernel
# is already queued when the start event fires.
SLEEP_CYCLES = 2_000_000
# Sampled output elements per checked call (and the first and last): the whole output is counted for
# NaN in the child, and the sample's values are compared with the reference here.
SAMPLES = 4096

ParamsOf = Callable[[TritonSpec, Mapping[str, np.ndarray], Mapping[str, int]], list]


def not_run_on_cpu(spec: TritonSpec) -> NotRun:
    """The check on the CPU path: not run (its points leave the denominator), not the grader's fault."""
    return NotRun(TITLE, CATEGORY, "needs a GPU (Triton's interpreter runs the kernel, it does not time it)",
                  spec.points["performance"], "exclude", False)


def gated(spec: TritonSpec) -> TestResult:
    """The check behind correctness, as traffic is: no points until every public case is right."""
    return TestResult(TITLE, CATEGORY, 0.0, spec.points["performance"], False,
                      "Not judged: the kernel is not correct at every public size.", extra={"gated": True})


def performance(exercise: Exercise, spec: TritonSpec, source: str, module: ModuleType, seed: int, *,
                gpu: int | None, gate: bool, params_of: ParamsOf, hide: Sequence[Path] = ()) -> TestResult | NotRun:
    """The performance check's verdict (a TestResult), or why it did not run (a NotRun). `gpu`: the GPU
    the compiled cases ran on, None where they did not (the CPU path alone); `gate`: every public case
    was right (on the CPU and on the GPU)."""
    conf = spec.performance
    if conf is None or not spec.points.get("performance"):
        raise ValueError("performance() is for a spec with performance points and a [performance] table")
    if gpu is None:
        return not_run_on_cpu(spec)
    if not gate:
        return gated(spec)
    if not exercise.solution_path.is_file():
        return NotRun(TITLE, CATEGORY, "no reference solution to time against", spec.points["performance"], "exclude", False)
    sizes = dict(conf.size)
    rng = np.random.default_rng(seed)
    inputs = {k: np.asarray(v) for k, v in module.make_inputs(dict(sizes), rng).items()}
    expected = module.reference({k: v.copy() for k, v in inputs.items()}, dict(sizes))
    params = params_of(spec, inputs, sizes)
    sample = sample_indices(spec, sizes, rng)
    library = exercise.root.joinpath("harness.py").read_text(encoding="utf-8") if conf.baseline == "torch" else None
    # The staff child starts (torch's CUDA import, the context, the probe kernel: seconds) while the
    # student's is timed; it times nothing until the student's child has closed. It is used inside the
    # pool's block: the jail's launcher dies with the thread that started it (bubblewrap's
    # --die-with-parent is the parent thread's death signal), and the pool's thread ends with the block.
    with ThreadPoolExecutor(max_workers=1) as pool:
        starting = pool.submit(TritonWorker, exercise.solution_path.read_text(encoding="utf-8"), launcher=spec.launcher,
                               limits=spec.limits, hide=hide, gpu=gpu, library=library)
        try:
            with TritonWorker(source, launcher=spec.launcher, limits=spec.limits, hide=hide, gpu=gpu) as worker:
                fault = worker.fault
                mine = TimingOutcome(False) if fault else worker.time_call(
                    params, repeats=conf.repeats, warmup=WARMUP, sleep_cycles=SLEEP_CYCLES, sample=sample, check=True)
        except BaseException:
            starting.result().close()
            raise
        staff = starting.result()
        # The staff child's time limit starts when it starts timing: however long the student's timing
        # took, the reference gets its whole limit (a slow submission is not a reference that failed).
        staff.deadline = time.monotonic() + spec.limits.run_seconds
        with staff:
            if fault:  # the GPU child could not start Triton (before the submission loaded): the grader's environment
                return NotRun(TITLE, CATEGORY, f"the GPU child could not be started for timing ({fault[:200]})",
                              spec.points["performance"], "exclude", True)
            if not mine.ok:
                return TestResult(TITLE, CATEGORY, 0.0, spec.points["performance"], False,
                                  f"Timing {spec.launcher}() at {sizes_label(sizes)} failed: {mine.error}")
            wrong = answer_problem(spec, conf, expected, mine.calls, sample)
            if wrong:
                return TestResult(TITLE, CATEGORY, 0.0, spec.points["performance"], False,
                                  f"No performance points: at {sizes_label(sizes)}, {wrong}. Each timed launch's outputs are "
                                  "filled with NaN before it runs and checked after it; speed counts only for launches that "
                                  "compute the whole answer.", extra={"wrong": True})
            if staff.fault:
                ref, lib = TimingOutcome(False, error=staff.fault), None
            else:
                ref = staff.time_call(params, repeats=conf.repeats, warmup=WARMUP, sleep_cycles=SLEEP_CYCLES)
                lib = (staff.time_call(params, fn="library", repeats=conf.repeats, warmup=WARMUP, sleep_cycles=SLEEP_CYCLES)
                       if library is not None and ref.ok else None)
    if not ref.ok:
        return NotRun(TITLE, CATEGORY, f"the reference solution could not be timed ({ref.error[:200]})",
                      spec.points["performance"], "exclude", True)
    return judge(conf, spec.points["performance"], sizes, mine.ms, ref.ms, lib.ms if lib is not None and lib.ok else None,
                 library_error=lib.error if lib is not None and not lib.ok else "")


def judge(conf: Performance, points: float, sizes: Mapping[str, int], mine_ms: Sequence[float], ref_ms: Sequence[float],
          lib_ms: Sequence[float] | None = None, library_error: str = "") -> TestResult:
    """The verdict from the timed calls' milliseconds: the fastest of the student's against the fastest
    of the reference's, scored by the CUDA kind's rule (step_fraction of speed / full_marks)."""
    mine, ref = min(mine_ms), min(ref_ms)
    speed = ref / mine if mine > 0 else 0.0
    fraction = step_fraction(speed / conf.full_marks)
    text = (f"At {sizes_label(sizes)}, the fastest of {len(mine_ms)} timed launches took {mine * 1000:,.1f} µs against "
            f"{ref * 1000:,.1f} µs for the reference solution: {speed:.0%} of its speed (full marks from "
            f"{conf.full_marks:.0%}; {fraction:.0%} of the points, in steps of {1 / STEPS:.0%}).")
    extra: dict[str, Any] = {"min_us": {"submission": round(mine * 1000, 3), "reference": round(ref * 1000, 3)},
                             "fraction_of_reference": round(speed, 4)}
    if lib_ms:
        lib = min(lib_ms)
        text += (f" For information, the library (torch) took {lib * 1000:,.1f} µs: you reach {lib / mine:.0%} of its "
                 "speed.")
        extra["min_us"]["library"] = round(lib * 1000, 3)
    elif library_error:
        text += f" The library (torch) could not be timed here: {library_error[:160]}"
    return TestResult(TITLE, CATEGORY, points * fraction, points, speed >= conf.full_marks, text, extra=extra)


def sample_indices(spec: TritonSpec, sizes: Mapping[str, int], rng: np.random.Generator) -> list[int]:
    """The flat indices whose values each checked call reports: random ones and the first and last of
    the largest output (the child wraps them to each output's size)."""
    numel = max(int(np.prod(p.shape_for(sizes))) for p in spec.outputs)
    picked = rng.integers(0, numel, size=min(SAMPLES, numel))
    return sorted({0, numel - 1, *map(int, picked)})


def answer_problem(spec: TritonSpec, conf: Performance, expected: Mapping[str, np.ndarray],
                   calls: Sequence[Mapping[str, Any]], sample: Sequence[int]) -> str:
    """What was wrong with the first checked call whose outputs were wrong ("" when all were right):
    elements left NaN (never written, or computed) where the reference has none, or a sampled value
    outside the tolerance (the [performance] table's, else the spec's)."""
    rtol = spec.rtol if conf.rtol is None else conf.rtol
    atol = spec.atol if conf.atol is None else conf.atol
    for call, facts in enumerate(calls):
        which = "the untimed call before the timed ones" if call == 0 else f"timed launch {call} of {len(calls) - 1}"
        for p in spec.outputs:
            want = np.asarray(expected[p.name], dtype=np.float64).ravel()
            nans = int(np.isnan(want).sum())
            left = facts["unwritten"].get(p.name)
            if left is None:
                return f"{which} did not report {p.name}"
            if left != nans:
                return (f"{which} left {left:,} of {want.size:,} elements of {p.name} NaN (never written, or computed "
                        "as NaN)")
            idx = np.asarray(sample, dtype=np.int64) % want.size
            try:  # what the student's process sent: read defensively
                got = np.asarray(facts["sample"].get(p.name), dtype=np.float64).ravel()
            except (TypeError, ValueError):
                got = np.zeros(0)
            if got.size != idx.size:
                return f"{which} reported a damaged sample of {p.name}"
            exp = want[idx]
            bad = ~(np.abs(got - exp) <= atol + rtol * np.abs(exp)) & ~(np.isnan(got) & np.isnan(exp))
            if bad.any():
                first = int(np.nonzero(bad)[0][0])
                return (f"{which} computed a wrong {p.name}: element [{int(idx[first])}] is {got[first]:.6g}, expected "
                        f"{exp[first]:.6g} (rtol {rtol:g}, atol {atol:g})")
    return ""

