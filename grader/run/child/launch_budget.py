"""How long one launch of a submission may run: a multiple of the reference solution's own cost at
that size, so a kernel that never finishes is stopped in seconds rather than at the run limit.

Child side: the runner (grader.run.child.runner) and the hidden tests' plugin (grader.run.child.hidden_tests) ask a
Budgets for each launch of the submission. The cost of the reference kernel at those sizes is
measured once, in this process, before any submission launch at that size:

  - on the emulator, its step count (grader.emu counts grid-wide steps; a step costs about the same
    whatever the kernel, so steps are time): the launch may take STEP_SLACK times as many, at least
    STEP_FLOOR, never more than the spec's limits.step_limit;
  - on the GPU, its wall-clock time from launch to completion (the best of TIME_REPEATS): the launch
    may take TIME_SLACK times as long, at least TIME_FLOOR_S.

The slack is generous on purpose: a correct but slow kernel (a naive one, one with 30 times the
phases of the reference) is never cut short. Without a reference (it did not compile, or the
exercise has none) or where its launch failed, the spec's own limits apply, as they always did.
The reference's inputs come from a fixed seed, never the graded ones, and its buffers are freed
(zeroed on the emulator) before the submission runs.
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

STEP_SLACK = 50
STEP_FLOOR = 1_000
TIME_SLACK = 50
TIME_FLOOR_S = 2.0
TIME_REPEATS = 3
REFERENCE_SEED = 0x5EED  # the reference's own inputs: never a graded launch's


@dataclass(frozen=True)
class Budget:
    """The limits of one launch: emulator steps, GPU seconds (None: no wall-clock limit inside the
    child), and the words that explain them when they stop the kernel."""

    step_limit: int
    seconds: float | None = None
    basis: str = ""   # e.g. "50 times the reference solution's work at this size"
    detail: str = ""  # e.g. "stopped after 8,350 steps; the reference takes 167"

    def explain(self, outcome: LaunchOutcome) -> LaunchOutcome:
        """The launch's outcome, its error worded by this budget when the budget is what stopped it."""
        status = outcome.findings.get("status") if outcome.findings else None
        if status in ("step-limit", "time-limit") and self.basis:
            return dataclasses.replace(outcome, error=f"the kernel did not finish within {self.basis} ({self.detail}){HANG_GUESS}")
        return outcome


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
        self.hung: dict[tuple, dict[str, Any]] = {}  # sizes -> the record of a launch stopped at its step budget

    def fixed(self) -> Budget:
        """The spec's own limits: for the reference's launches, and where no reference cost is known."""
        return Budget(self.ceiling)

    def for_sizes(self, sizes: Mapping[str, int]) -> Budget:
        """The budget of a submission launch at `sizes`."""
        cost = self.reference_cost(sizes)
        if cost is None:
            return self.fixed()
        if self.backend == "emu":
            steps = min(self.ceiling, max(STEP_FLOOR, int(STEP_SLACK * cost)))
            if steps >= self.ceiling:
                return self.fixed()
            return Budget(steps, basis=f"{STEP_SLACK} times the reference solution's work at this size",
                          detail=f"stopped after {steps:,} steps; the reference takes {int(cost):,}")
        seconds = max(TIME_FLOOR_S, TIME_SLACK * cost)
        basis = f"its time limit at this size, {TIME_SLACK} times the reference solution's time"
        detail = f"stopped after {seconds:.1f} s; the reference takes {cost * 1e3:.2f} ms, the limit is at least {TIME_FLOOR_S:g} s"
        return Budget(self.ceiling, seconds=seconds, basis=basis, detail=detail)

    def reference_cost(self, sizes: Mapping[str, int]) -> float | None:
        """The reference's steps (emulator) or seconds (GPU) at `sizes`; None where it cannot be measured."""
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

            # A step count is a fact about the reference, its inputs and the grader: kept on disk, a batch
            # (or a class's resubmissions) measures it once per size.
            key = self._steps_key(sizes)
            known = _load_steps(key)
            if known is not None:
                return known
            inputs = self.harness.make_inputs(sizes, np.random.default_rng(REFERENCE_SEED))
            device = EmuDevice()  # its own emulator: nothing of it is shared with the submission's
            kernel = load_chain(device, self.reference, self.spec)
            launched = launch_kernel(self.spec, device, kernel, sizes, inputs, step_limit=self.ceiling)
            device.free(list(launched.buffers.values()))
            if launched.outcome.error:
                return None
            _store_steps(key, float(device.last_steps))
            return float(device.last_steps)
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


def _load_steps(key: str) -> float | None:
    path = _steps_file(key)
    try:
        return float(json.loads(path.read_text())["steps"]) if path else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _store_steps(key: str, steps: float) -> None:
    """Written whole or not at all; a cache that cannot be written is simply not used."""
    path = _steps_file(key)
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f".{path.name}.{os.getpid()}")
        part.write_text(json.dumps({"steps": steps}))
        os.replace(part, path)
    except OSError:
        return
