"""One launch of an exercise's kernel on a device: buffers from inputs, NaN-filled outputs, read back.

Used by the runner (the graded launches) and by the hidden-test fixtures; it runs in the child.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from . import expressions
from .backends import Buffer, Device, LaunchOutcome
from .spec import Spec


@dataclass
class Launched:
    """A finished launch: how it ended, the buffers it used, and every buffer's contents afterwards."""

    outcome: LaunchOutcome
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    buffers: dict[str, Buffer]
    contents: dict[str, np.ndarray]


def launch_kernel(spec: Spec, device: Device, kernel: Any, sizes: Mapping[str, int], inputs: Mapping[str, np.ndarray],
                  *, step_limit: int, seconds: float | None = None) -> Launched:
    """Upload inputs, pre-fill outputs with NaN (an unwritten element is then caught), launch, read back.

    After a fatal launch error the device is unusable, so nothing is read back. step_limit stops an
    emulated launch, seconds (None: no limit) a GPU one (grader.launch_budget decides both).
    """
    grid, block, shared = spec.kernel.launch_for(sizes)
    buffers, args = {}, []
    for p in spec.kernel.params:
        if p.is_pointer:
            count = int(np.prod(p.shape_for(sizes)))
            if p.role in ("in", "inout"):
                buf = device.upload(p.name, np.ascontiguousarray(inputs[p.name], dtype=p.dtype))
            else:
                buf = device.empty(p.name, np.dtype(p.dtype), count, fill_nan=True)
            buffers[p.name] = buf
            args.append(buf.arg)
        else:
            args.append(np.dtype(p.dtype).type(expressions.evaluate(p.value, sizes)))
    outcome = device.launch(kernel, grid, block, shared, args, step_limit=step_limit, seconds=seconds)
    contents = {} if outcome.fatal else {name: device.download(buf) for name, buf in buffers.items()}
    return Launched(outcome, grid, block, buffers, contents)
