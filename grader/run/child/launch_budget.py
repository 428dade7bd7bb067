"""How long one launch of a submission may run: a multiple of the reference solution's own cost at
that size, so a kernel that never finishes is stopped in seconds rather than at the run limit.

Child side: the runner (grader.run.child.runner) and the hidden tests' plugin (grader.run.child.hidden_tests) ask a
Budgets for each launch of the submission. The cost of the reference kernel at those sizes is
measured once, in this process, before any submission launch at that size:

  - on the emulator, its work: modelled CPU nanoseconds, a cost per grid-wide step plus a cost per
    warp instruction (grader.emu.machine.STEP_NS, WARP_INSTRUCTION_NS, fitted by
    bench/emu_step_cost.py). The launch may do WORK_SLACK times as much, at least WORK_FLOOR_S and at
    most WORK_CEILING_S modelled seconds, never more than the spec's limits.step_limit steps; and
    EMU_CPU_SECONDS of real CPU time stops it where the model is wrong. The work, not the step count,
    is the measure: a kernel that keeps a few threads busy in long serial loops takes many more steps
    than the reference for a like amount of work, and a step is cheaper when fewer warps take it;
  - on the GPU, its wall-clock time from launch to completion (the best of TIME_REPEATS): the launch
    may take TIME_SLACK times as long, at least TIME_FLOOR_S and at most TIME_CEILING_S.

The floors are generous on purpose: a correct but slow kernel (one thread per row, 30 times the
phases of the reference; tests/data/slow_kernels) is never cut short at an exercise's sizes. The
ceilings bound what a true hang costs. Without a reference (it did not compile, or the exercise has
none) or where its launch failed, the spec's own limits apply, as they always did. The reference's
inputs come from a fixed seed, never the graded ones, and its buffers are freed (zeroed on the
emulator) before the submission runs.

A launch stopped at its budget stands for every later launch at the same sizes (Budgets.stopped_at:
reported as not finishing, without being run), and lowers the bounds of the launches after it
(AFTER_STOP_FLOOR_S, AFTER_STOP_CEILING_S), so a kernel that hangs at every size costs about one
floor. The emulator runs a grading's launches in one fixed order, so its verdicts stay the same
from one grading to the next.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ... import __version__
from ...backends.base import LaunchOutcome
from ...spec import Spec
from ..tasks import HANG_GUESS

WORK_SLACK = 50
WORK_FLOOR_S = 4.0     # modelled seconds (about CPU seconds on the machine bench/emu_step_cost.py ran on)
WORK_CEILING_S = 10.0
# Once a launch of this kernel did not finish within its budget, the floor has done its job (the
# kernel is not one that finishes slowly everywhere): later launches get the multiple of the
# reference's work between these bounds, so a hang at every size costs one floor, not one per size.
AFTER_STOP_FLOOR_S = 0.25
AFTER_STOP_CEILING_S = 1.0
EMU_CPU_SECONDS = 12.0  # the backstop: real CPU seconds of one emulated launch
TIME_SLACK = 50
TIME_FLOOR_S = 4.0
TIME_CEILING_S = 8.0
TIME_REPEATS = 3
REFERENCE_SEED = 0x5EED  # the reference's own inputs: never a graded launch's


@dataclass(frozen=True)
class Budget:
    """The limits of one launch: emulator steps and work (modelled nanoseconds, None: none), seconds (GPU:
    wall clock; emulator: CPU time; None: no limit inside the child), and the words that explain them
    when they stop the kernel."""

    step_limit: int
    seconds: float | None = None
    basis: str = ""   # e.g. "50 times the reference solution's work at this size"
    detail: str = ""  # e.g. "4.00 modelled CPU seconds, the reference's work there is 0.023; ..."
    work: float | None = None

    def explain(self, outcome: LaunchOutcome) -> LaunchOutcome:
        """The launch's outcome, its error worded by this budget when the budget is what stopped it."""
        status = outcome.findings.get("status") if outcome.findings else None
        if status not in ("step-limit", "time-limit") or not self.basis:
            return outcome
        by = outcome.findings.get("stopped_by")
        if by == "steps":  # the exercise's own step_limit came first: a cap below the work budget
            limit = f"the exercise's limit of {self.step_limit:,} emulated steps"
        elif by == "cpu":
            limit = f"{self.seconds:g} s of CPU time (its work limit: {self.basis}, {self.detail})"
        else:
            limit = f"{self.basis} ({self.detail})"
        return dataclasses.replace(outcome, error=f"the kernel did not finish within {limit}{HANG_GUESS}")


class Budgets:
    """Each launch's budget for one child, from the reference's cost at each size (measured lazily, once)."""

    def __init__(self, spec: Spec, harness: Any, backend: str, reference: str | None, *, step_limit: int,
                 device: Any = None) -> None:
        self.spec = spec
        self.harness = harness
        self.backend = backend
        self.reference = reference  # the reference's artifact (PTX on the emulator, CUBIN on the GPU), or None
        self.ceiling = int(step_limit)
        self.device = device  # the GPU device the submission runs on (the reference is timed on the same one)
        self._cost: dict[tuple, float | None] = {}
        self.hung: dict[tuple, dict[str, Any]] = {}  # sizes -> the record of a launch stopped at its budget

    def fixed(self) -> Budget:
        """The spec's own limits: for the reference's launches, and where no reference cost is known."""
        return Budget(self.ceiling)

    def for_sizes(self, sizes: Mapping[str, int]) -> Budget:
        """The budget of a submission launch at `sizes`."""
        cost = self.reference_cost(sizes)
        if cost is None:
            return self.fixed()
        where = ", ".join(f"{k} = {v}" for k, v in sizes.items())
        if self.backend == "emu":
            floor, ceiling = (AFTER_STOP_FLOOR_S, AFTER_STOP_CEILING_S) if self.hung else (WORK_FLOOR_S, WORK_CEILING_S)
            work = min(ceiling * 1e9, max(floor * 1e9, WORK_SLACK * cost))
            after = ", as an earlier launch of it did not finish" if self.hung else ""
            return Budget(self.ceiling, seconds=EMU_CPU_SECONDS, work=work,
                          basis=f"{work / cost:,.0f} times the reference solution's work at {where}",
                          detail=f"{work / 1e9:.2f} modelled CPU seconds, the reference's {cost / 1e9:.3f}; the limit is "
                                 f"{WORK_SLACK} times the reference's, at least {floor:g} s, at most {ceiling:g} s{after}")
        seconds = min(TIME_CEILING_S, max(TIME_FLOOR_S, TIME_SLACK * cost))
        basis = f"its time limit at {where}, {TIME_SLACK} times the reference solution's time"
        detail = (f"stopped after {seconds:.1f} s; the reference takes {cost * 1e3:.2f} ms, the limit is at least "
                  f"{TIME_FLOOR_S:g} s and at most {TIME_CEILING_S:g} s")
        return Budget(self.ceiling, seconds=seconds, basis=basis, detail=detail)

    def stopped_at(self, sizes: Mapping[str, int]) -> dict[str, Any] | None:
        """The record of an earlier launch stopped at its budget at these sizes, or None: a kernel that did
        not finish there is not run there again."""
        return self.hung.get(tuple(sorted(sizes.items())))

    def stopped(self, sizes: Mapping[str, int], record: Mapping[str, Any]) -> None:
        """Note a launch stopped at its budget at these sizes (its record stands for later launches there)."""
        self.hung[tuple(sorted(sizes.items()))] = dict(record)

    def reference_cost(self, sizes: Mapping[str, int]) -> float | None:
        """The reference's work (emulator, modelled nanoseconds) or seconds (GPU) at `sizes`; None where it
        cannot be measured."""
        key = tuple(sorted(sizes.items()))
        if key not in self._cost:
            try:
                self._cost[key] = self._measure(dict(sizes)) if self.reference else None
            except Exception:  # noqa: BLE001 - a failure of the grader's own measurement costs the student nothing
                self._cost[key] = None
        return self._cost[key]

    def _measure(self, sizes: dict[str, int]) -> float | None:
        from .launch import launch_kernel, load_chain

        if self.backend == "emu":
            from ...backends.emu import EmuDevice
            from ...emu.machine import work_ns

            # A step count is a fact about the reference, its inputs and the grader: kept on disk, a batch
            # (or a class's resubmissions) measures it once per size.
            key = self._steps_key(sizes)
            known = _load_steps(key)
            if known is not None:
                return work_ns(*known)
            inputs = self.harness.make_inputs(sizes, np.random.default_rng(REFERENCE_SEED))
            device = EmuDevice()  # its own emulator: nothing of it is shared with the submission's
            kernel = load_chain(device, self.reference, self.spec)
            launched = launch_kernel(self.spec, device, kernel, sizes, inputs, step_limit=self.ceiling)
            device.free(list(launched.buffers.values()))
            if launched.outcome.error:
                return None
            _store_steps(key, device.last_steps, device.last_warp_instructions)
            return work_ns(device.last_steps, device.last_warp_instructions)
        inputs = self.harness.make_inputs(sizes, np.random.default_rng(REFERENCE_SEED))
        device = self.device
        kernel = load_chain(device, self.reference, self.spec)
        best = None
        with device.using():
            for _ in range(TIME_REPEATS + 1):  # the first launch also loads the module: not counted
                start = time.perf_counter()
                launched = launch_kernel(self.spec, device, kernel, sizes, inputs, step_limit=self.ceiling)
                took = time.perf_counter() - start
                device.scrub(list(launched.buffers.values()))
                if launched.outcome.error:
                    return None
                if _ > 0:
                    best = took if best is None else min(best, took)
        return best


    def _steps_key(self, sizes: Mapping[str, int]) -> str:
        """Everything the reference's step count depends on: the grader, its PTX, the launch, its inputs."""
        harness = getattr(getattr(self.harness, "exercise", None), "harness_path", None)
        parts = [__version__, Path(self.reference).read_text(), self.spec.kernel.name,
                 json.dumps(sorted(sizes.items())), json.dumps(self.spec.kernel.launch_for(sizes)), str(REFERENCE_SEED),
                 str(self.ceiling), Path(harness).read_text() if harness else ""]
        return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


def _steps_file(key: str) -> Path | None:
    from ..parent.compile_cache import cache_root

    root = cache_root()
    return None if root is None else root.parent / "reference-steps" / f"{key}.json"


def _load_steps(key: str) -> tuple[int, int] | None:
    """(steps, warp instructions) of the reference, as stored; None when not stored (or stored by an
    older grader without the warp instructions)."""
    path = _steps_file(key)
    try:
        data = json.loads(path.read_text()) if path else None
        return None if data is None else (int(data["steps"]), int(data["warp_instructions"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _store_steps(key: str, steps: int, warp_instructions: int) -> None:
    """Written whole or not at all; a cache that cannot be written is simply not used."""
    path = _steps_file(key)
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f".{path.name}.{os.getpid()}")
        part.write_text(json.dumps({"steps": int(steps), "warp_instructions": int(warp_instructions)}))
        os.replace(part, path)
    except OSError:
        return
