"""CUDA-event timing in the child: warm-up, an L2 flush before every repeat, the median of repeats."""
from __future__ import annotations

import statistics
from typing import Any, Callable, Mapping

import numpy as np

from ... import bfloat16, expressions
from ...backends import Device
from ...exercise import Exercise, Harness
from .launch import load_chain
from ..tasks import Task

WARMUP = 3


def time_task(task: Task, exercise: Exercise, harness: Harness, device: Device, modules: Mapping[str, str]) -> dict[str, Any]:
    """Time the submission, the reference solution or the vendor baseline at one size."""
    if device.name != "gpu":
        return {"id": task.id, "status": "skipped", "message": "timing needs a GPU"}
    import cupy as cp

    spec = exercise.spec
    sizes = dict(task.sizes)
    inputs = harness.make_inputs(sizes, np.random.default_rng(task.seeds[0]))
    bf16 = {p.name for p in spec.kernel.buffers if p.is_bfloat16}
    dev = {name: cp.asarray(bfloat16.to_bits(arr) if name in bf16 else arr) for name, arr in inputs.items()}
    if task.module == "baseline":
        fn = harness.baseline()
        if fn is None:
            return {"id": task.id, "status": "skipped", "message": "the exercise defines no baseline"}
        run: Callable[[], None] = lambda: fn(cp, dev, sizes)
    else:
        kernels = load_chain(device, modules[task.module], spec)
        for name in spec.kernel.constants:
            problem = device.set_constant(kernels[0], name, np.ascontiguousarray(inputs[name]))
            if problem:
                return {"id": task.id, "status": "error", "message": problem}
        launches = []
        for k, kernel in zip(spec.kernel.chain, kernels):
            grid, block, shared = k.launch_for(sizes)
            args = []
            for p in k.params:
                if p.is_pointer:
                    if p.name not in dev:
                        dev[p.name] = cp.empty(int(np.prod(p.shape_for(sizes))), dtype=p.device_dtype)
                    args.append(dev[p.name])
                else:
                    args.append(np.dtype(p.dtype).type(expressions.evaluate(p.value, sizes)))
            launches.append((kernel, grid, block, tuple(args), shared))

        def run() -> None:  # every kernel of the chain, in order
            for kernel, grid, block, args, shared in launches:
                kernel(grid, block, args, shared_mem=shared)
    l2 = cp.cuda.Device().attributes.get("L2CacheSize", 50 * 1024**2)
    flush = cp.empty(max(2 * l2 // 4, 1), dtype=cp.float32)  # writing 2x L2 evicts the inputs
    try:
        for _ in range(WARMUP):
            run()
        cp.cuda.Device().synchronize()
        times = []
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        for _ in range(task.repeats):
            flush.fill(0)
            start.record()
            run()
            stop.record()
            stop.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, stop))
    except Exception as exc:  # a failing launch during timing is an outcome, not a grader crash
        return {"id": task.id, "status": "error", "message": f"{type(exc).__name__}: {exc}"}
    return {"id": task.id, "status": "ok", "data": {"median_ms": statistics.median(times), "min_ms": min(times), "repeats": len(times)}}
