"""One launch of an exercise's kernel on a device: buffers from inputs, NaN-filled outputs, read back.

Used by the runner (the graded launches) and by the hidden-test fixtures; it runs in the child.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from ... import bfloat16, expressions
from ...backends import Buffer, Device, LaunchOutcome
from ...spec import Spec


@dataclass
class Launched:
    """A finished launch: how it ended, the buffers it used, and every buffer's contents afterwards."""

    outcome: LaunchOutcome
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    buffers: dict[str, Buffer]
    contents: dict[str, np.ndarray]


class KernelChain(tuple):
    """The loaded kernels of an exercise's chain, in launch order (load_chain)."""


def load_chain(device: Device, artifact: str, spec: Spec) -> KernelChain:
    """Load every kernel of the spec's chain (the kernel, then `kernel.then` in order) from one module."""
    return KernelChain(device.load(artifact, k.name) for k in spec.kernel.chain)


def launch_kernel(spec: Spec, device: Device, kernel: Any, sizes: Mapping[str, int], inputs: Mapping[str, np.ndarray],
                  *, step_limit: int, seconds: float | None = None, work: float | None = None) -> Launched:
    """Upload inputs, pre-fill outputs with NaN (an unwritten element is then caught), launch, read back.

    `kernel` is a loaded kernel, or the tuple load_chain gives for an exercise of several kernels:
    they run in order on the same buffers, and the first that fails ends the chain. After a fatal
    launch error the device is unusable, so nothing is read back. step_limit and work (modelled
    nanoseconds, None: no limit) stop an emulated launch, seconds (None: no limit) a GPU one or an
    emulated launch's CPU time, each kernel of a chain on its own (grader.run.child.launch_budget
    decides them).
    """
    handles = tuple(kernel) if isinstance(kernel, KernelChain) else (kernel,)
    if len(handles) != len(spec.kernel.chain):
        raise ValueError(f"{len(spec.kernel.chain)} kernels to launch, {len(handles)} loaded (use load_chain)")
    grid, block, shared = spec.kernel.launch_for(sizes)
    for name in spec.kernel.constants:
        # __constant__ arrays first: the harness gives their contents like any input
        if name not in inputs:
            raise KeyError(f"the inputs give no contents for the __constant__ array {name} (make_inputs returns it)")
        problem = device.set_constant(handles[0], name, np.ascontiguousarray(inputs[name]))
        if problem:
            return Launched(LaunchOutcome(error=problem), grid, block, {}, {})
    buffers = {}
    for p in spec.kernel.buffers:
        count = int(np.prod(p.shape_for(sizes)))
        if p.role in ("in", "inout"):
            data = np.ascontiguousarray(inputs[p.name], dtype=p.dtype)
            buffers[p.name] = device.upload(p.name, bfloat16.to_bits(data) if p.is_bfloat16 else data)
        else:  # out and temp
            buffers[p.name] = device.empty(p.name, np.dtype(p.device_dtype), count, fill_nan=True)
    outcomes = []
    heaviest = (0.0, 0, 0)  # the emulator's (work, steps, warp instructions) of the chain's costliest kernel
    for k, handle in zip(spec.kernel.chain, handles):
        args = [buffers[p.name].arg if p.is_pointer else np.dtype(p.dtype).type(expressions.evaluate(p.value, sizes))
                for p in k.params]
        kgrid, kblock, kshared = k.launch_for(sizes)
        limits = {"step_limit": step_limit, "seconds": seconds}
        if work is not None:  # only the emulator knows a work limit
            limits["work"] = work
        outcome = device.launch(handle, kgrid, kblock, kshared, args, **limits)
        if len(handles) > 1 and outcome.error:
            outcome = dataclasses.replace(outcome, error=f"{k.name}: {outcome.error}")
        outcomes.append(outcome)
        heaviest = max(heaviest, (float(getattr(device, "last_work", 0) or 0), int(getattr(device, "last_steps", 0) or 0),
                                  int(getattr(device, "last_warp_instructions", 0) or 0)))
        if outcome.error:
            break
    if len(handles) > 1 and hasattr(device, "last_steps"):
        # each kernel of a chain gets the limits on its own: the costliest one's counts stand for the chain
        device.last_work, device.last_steps, device.last_warp_instructions = heaviest
    outcome = outcomes[0] if len(outcomes) == 1 else _merge(outcomes)
    contents = {} if outcome.fatal else {name: device.download(buf) for name, buf in buffers.items()}
    for p in spec.kernel.buffers:
        if p.is_bfloat16 and p.name in contents:
            contents[p.name] = bfloat16.to_values(contents[p.name])
    return Launched(outcome, grid, block, buffers, contents)


def _merge(outcomes: list[LaunchOutcome]) -> LaunchOutcome:
    """One outcome for a chain of launches: the failing one's error; the emulator's findings of all of
    them (counters and per-line counts summed, findings listed together, the first bad status)."""
    last = outcomes[-1]
    found = [o.findings for o in outcomes if o.findings]
    if not found:
        return last
    merged: dict[str, Any] = {"status": next((f["status"] for f in found if f.get("status") != "ok"), "ok"),
                              "message": "; ".join(f.get("message", "") for f in found), "counters": {}, "per_line": {}}
    for f in found:
        for key, value in f.get("counters", {}).items():
            merged["counters"][key] = merged["counters"].get(key, 0) + value
        for line, counts in f.get("per_line", {}).items():
            row = merged["per_line"].setdefault(line, {})
            for key, value in counts.items():
                row[key] = row.get(key, 0) + value
        for key, value in f.items():
            if isinstance(value, list):  # hazards, barrier and memory errors, reads: all of them
                merged.setdefault(key, []).extend(value)
            elif key not in merged:
                merged[key] = value
    if "unwritten" in found[-1]:
        merged["unwritten"] = found[-1]["unwritten"]  # what is still unwritten after the last kernel
    return dataclasses.replace(last, findings=merged)
