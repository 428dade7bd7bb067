"""CUDA-event timing in the child: warm-up, an L2 flush before every repeat, the median of repeats.

Everything a timing needs (inputs, device buffers, the loaded kernels, the flush buffer) is made
while holding an ordinary share of the GPU; the GPU is held alone only for the warm-up and the timed
launches, so other gradings on the same GPU wait milliseconds for it, not the time it takes to build
a large input on the CPU."""
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
    memory = _ScrubbedMemory(cp)
    with cp.cuda.using_allocator(memory.malloc):
        try:
            return _time(task, exercise, harness, device, modules, sizes, inputs, cp)
        finally:
            memory.scrub(device)


def _time(task: Task, exercise: Exercise, harness: Harness, device: Device, modules: Mapping[str, str],
          sizes: dict[str, int], inputs: Mapping[str, Any], cp: Any) -> dict[str, Any]:
    with device.using():
        prepared = _prepare(task, exercise, harness, device, modules, sizes, inputs, cp)
    if isinstance(prepared, dict):
        return prepared  # skipped, or an error while preparing
    run, flush = prepared
    alone = device.take_exclusive()  # other gradings sharing this GPU finish their launches first
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
    finally:
        device.leave()
    data: dict[str, Any] = {"median_ms": statistics.median(times), "min_ms": min(times), "repeats": len(times)}
    if not alone:
        data["shared_gpu"] = True
    return {"id": task.id, "status": "ok", "data": data}


def _prepare(task: Task, exercise: Exercise, harness: Harness, device: Device, modules: Mapping[str, str],
             sizes: dict[str, int], inputs: Mapping[str, Any], cp: Any) -> tuple[Callable[[], None], Any] | dict[str, Any]:
    """The timed call (every kernel of the chain on device copies of the inputs, or the baseline) and
    a buffer whose writing evicts the L2; a result dict instead when there is nothing to time."""
    spec = exercise.spec
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
    cp.cuda.Device().synchronize()  # the uploads are done before the share is given back
    return run, flush


class _ScrubbedMemory:
    """The timing's own memory pool: every block it handed out (inputs, outputs, the flush buffer,
    whatever the vendor library allocated for its results) is zeroed, then given back to the driver,
    when the timing ends. In a warm worker the next submission's kernel may scan device memory, and
    the reference's and the library's outputs were here."""

    def __init__(self, cp: Any) -> None:
        self.cp = cp
        self.pool = cp.cuda.MemoryPool()
        self.blocks: dict[int, int] = {}  # device address -> bytes

    def malloc(self, size: int) -> Any:
        pointer = self.pool.malloc(size)
        self.blocks[int(pointer.ptr)] = max(self.blocks.get(int(pointer.ptr), 0), int(pointer.mem.size))
        return pointer

    def scrub(self, device: Device) -> None:
        try:
            with device.using():
                for address, size in self.blocks.items():
                    self.cp.cuda.runtime.memset(address, 0, size)
                self.cp.cuda.Device().synchronize()
            self.pool.free_all_blocks()
        except Exception:  # noqa: BLE001 - a context a failed launch broke: the process exits, the memory with it
            pass
