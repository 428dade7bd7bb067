"""CUDA-event timing in the child: the submission and its rivals (the reference solution, the vendor
library) in turns, in one window alone on the GPU; warm-up, an L2 flush before every timed call, the
median and the fastest of the repeats (the performance check scores the fastest).

Timing them in turns rather than one after another is what keeps a score steady in a batch: the
speed a score is given for is a ratio of two times, and anything that drifts between two separate
windows (the clocks, the GPU's warmth after other gradings' kernels) would move one time and not the
other. In turns, a drift moves both alike and the ratio stays.

Everything a timing needs (inputs, device buffers, the loaded kernels, the flush buffer) is made
while holding an ordinary share of the GPU; the GPU is held alone only for the warm-up and the timed
launches, so other gradings on the same GPU wait milliseconds for it, not the time it takes to build
a large input on the CPU.

Every answer of the submission is checked too, outside the timed events (_Answers): one untimed
call before the window is compared in full with the float64 reference of the timing's inputs, and
each timed call's outputs are filled with the grader's poison pattern before it and compared with
that call's bits after it. A kernel that computes the answer in the correctness launches and then
skips work once it has been launched a few times (a launch counter in a `__device__` variable) would
otherwise be timed doing nothing."""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ... import bfloat16, expressions
from ...backends import Device
from ...backends.base import POISON_BITS
from ...exercise import Exercise, Harness
from .cases import Case, CaseSource
from .comparison import compared, output_digest
from .launch import load_chain
from ..tasks import MODULE_NAMES, Task, timed_call_name

WARMUP = 3


@dataclass(frozen=True)
class _Timed:
    """One module ready to time: the call (every kernel of its chain, or the library), the device
    arrays that must survive between its calls, and, for a rival, its device copies of the inputs by
    name (each must still equal the input when the timing ends) and the copies to make before each
    of its calls (its inout buffers, from pristine copies: it always starts from the inputs)."""

    name: str
    run: Callable[[], None]
    kept: tuple[Any, ...]
    originals: Mapping[str, Any]
    restore: tuple[tuple[Any, Any], ...] = ()
    poisoned: tuple[Any, ...] = ()  # the submission's outputs: the poison pattern before each call
    outputs: Mapping[str, Any] | None = None  # the submission's outputs (and inout buffers) by name


def time_task(task: Task, exercise: Exercise, harness: Harness, device: Device, modules: Mapping[str, str],
              cases: CaseSource) -> dict[str, Any]:
    """Time the task's module (the submission) and its rivals (task.rivals: the reference solution, the
    vendor baseline) at one size, in turns. Data: median and minimum milliseconds by module. A call of
    the submission that computed a wrong answer ends the timing: status "error", data["wrong"]."""
    if device.name != "gpu":
        return {"id": task.id, "status": "skipped", "message": "timing needs a GPU"}
    import cupy as cp

    sizes = dict(task.sizes)
    memory = _ScrubbedMemory(cp)
    with cp.cuda.using_allocator(memory.malloc):
        try:
            case, where = _checked_case(cases.case(task.seeds[0], sizes, reference=False), harness, device, sizes, memory, cp)
            result = _time(task, exercise, harness, device, modules, sizes, case, memory, cp)
            result.setdefault("data", {})["reference_on"] = where
            return result
        finally:
            memory.scrub(device)


def _checked_case(case: Case, harness: Harness, device: Device, sizes: dict[str, int], memory: "_ScrubbedMemory",
                  cp: Any) -> tuple[Case, str]:
    """The timing's case with its float64 reference and magnitude, and where they were computed: on the
    GPU where the harness's NumPy code runs on CuPy arrays ("gpu"), else on the CPU ("cpu"). For a
    2048 x 2048 matmul the CPU took about 5 CPU-seconds a timing in a batch of 16 gradings at once on
    an H200 host. The answer is downloaded and every block the computation used is zeroed before any
    submission call: it never lies in device memory while student code runs."""
    if case.expected is not None:
        return case, "cpu"
    try:
        with device.using():
            try:
                expected, magnitude = harness.reference_on_device(cp, case.inputs, sizes)
                where = "gpu"
            finally:
                memory.zero(())
                cp.cuda.Device().synchronize()
    except Exception:  # noqa: BLE001 - the harness's code does not run on CuPy arrays: compute on the CPU
        expected = harness.reference(case.inputs, sizes)
        magnitude, where = harness.magnitude(case.inputs, sizes, expected), "cpu"
    return Case(case.inputs, expected, magnitude), where


def _time(task: Task, exercise: Exercise, harness: Harness, device: Device, modules: Mapping[str, str],
          sizes: dict[str, int], case: Case, memory: "_ScrubbedMemory", cp: Any) -> dict[str, Any]:
    uploaded = _as_uploaded(exercise, case.inputs)
    timed: list[_Timed] = []
    with device.using():
        for name in (task.module, *task.rivals):
            prepared = _prepare(name, name == task.module, exercise, harness, device, modules, sizes, uploaded, cp)
            if isinstance(prepared, str):
                return {"id": task.id, "status": "error", "message": prepared, "data": {"module": name}}
            if prepared is not None:  # None: an exercise without a library baseline
                timed.append(prepared)
        l2 = cp.cuda.Device().attributes.get("L2CacheSize", 50 * 1024**2)
        flush = cp.empty(max(2 * l2 // 4, 1), dtype=cp.float32)  # writing 2x L2 evicts the inputs
        own = next(t for t in timed if t.name == task.module)
        answers = _Answers(case, exercise, sizes, own, cp)
        try:  # one untimed call first: its answer is checked in full, outside the window below
            _ready(own, cp)
            own.run()
            answer = answers.keep()
        except Exception as exc:  # a failing launch is an outcome, not a grader crash
            return _failed(task, own.name, exc)
        cp.cuda.Device().synchronize()  # the uploads are done before the share is given back
    wrong = answers.compare(answer)
    if wrong is not None:
        return _wrong(task, 0, wrong)
    # The rivals' outputs (the reference's answer, the library's) are zeroed after each of their calls:
    # what the submission's kernel can find in device memory while it runs stays what it was before
    # the rivals ran. Inputs and the flush buffer are kept; zeroing happens outside the timed events.
    arrays = [flush, *answers.kept] + [a for t in timed for a in t.kept]
    kept = address_ranges(arrays)
    times: dict[str, list[float]] = {t.name: [] for t in timed}
    alone = device.take_exclusive()  # other gradings sharing this GPU finish their launches first
    current = task.module
    try:
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        for round_ in range(WARMUP + task.repeats):
            for t in timed:
                current = t.name
                _ready(t, cp)
                flush.fill(0)
                start.record()
                t.run()
                stop.record()
                stop.synchronize()
                if round_ >= WARMUP:
                    times[t.name].append(cp.cuda.get_elapsed_time(start, stop))
                if t.name != task.module:
                    memory.zero(kept)
                else:
                    answers.note(round_ + 1)  # microseconds: compared with the checked answer on the device
    except Exception as exc:  # a failing launch during timing is an outcome, not a grader crash
        return _failed(task, current, exc)
    finally:
        device.leave()
    for call, answer in answers.differing:  # answers with other bits than the checked one: compared now
        wrong = answers.compare(answer)
        if wrong is not None:
            return _wrong(task, call, wrong)
    changed = _changed_inputs(timed, uploaded, device, cp)
    if changed:
        return {"id": task.id, "status": "error", "data": {"module": task.module},
                "message": f"the {changed} changed while the submission was timed beside it: the kernel wrote "
                           "outside its own buffers"}
    data: dict[str, Any] = {"median_ms": {k: statistics.median(v) for k, v in times.items()},
                            "min_ms": {k: min(v) for k, v in times.items()}, "repeats": task.repeats}
    if not alone:
        data["shared_gpu"] = True
    return {"id": task.id, "status": "ok", "data": data}


def _as_uploaded(exercise: Exercise, inputs: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The inputs as their device copies hold them: bfloat16 buffers as their 16-bit patterns."""
    bf16 = {p.name for p in exercise.spec.kernel.buffers if p.is_bfloat16}
    return {k: bfloat16.to_bits(arr) if k in bf16 else np.asarray(arr) for k, arr in inputs.items()}


def _changed_inputs(timed: list[_Timed], uploaded: Mapping[str, np.ndarray], device: Device, cp: Any) -> str:
    """Which rival's input no longer equals what was uploaded ("reference's input A"), or "". Rivals'
    times count only if what they computed on was the inputs: a kernel that found their buffers and
    wrote into them could otherwise slow them down."""
    with device.using():
        for t in timed:
            for name, arr in t.originals.items():
                got = cp.asnumpy(arr)
                if got.tobytes() != np.ascontiguousarray(uploaded[name]).tobytes():
                    return f"{MODULE_NAMES.get(t.name, t.name)}'s input {name}"
    return ""


def _prepare(name: str, own: bool, exercise: Exercise, harness: Harness, device: Device, modules: Mapping[str, str],
             sizes: dict[str, int], uploaded: Mapping[str, np.ndarray], cp: Any) -> _Timed | str | None:
    """Module `name` ready to time, on device copies of its own of the inputs (`uploaded`: _as_uploaded);
    `own`: the task's own module, whose every array is kept between calls. None for a baseline the exercise does not
    define; an error message when the module cannot be set up."""
    spec = exercise.spec
    fn = harness.baseline() if name == "baseline" else None
    if name == "baseline" and fn is None:
        return None
    dev = {k: cp.asarray(arr) for k, arr in uploaded.items()}
    originals = dict(dev)
    # Every module writes its inout buffers: each call starts from a pristine copy of them.
    inout = {p.name for p in spec.kernel.buffers if p.role == "inout"} & set(dev)
    pristine = {k: dev[k].copy() for k in inout}
    restore = tuple((dev[k], pristine[k]) for k in sorted(inout))
    if not own:
        originals.update(pristine)
    if fn is not None:
        return _Timed(name, lambda: fn(cp, dev, sizes), tuple(originals.values()), originals, restore)
    kernels = load_chain(device, modules[name], spec)
    for constant in spec.kernel.constants:
        problem = device.set_constant(kernels[0], constant, np.ascontiguousarray(uploaded[constant]))
        if problem:
            return problem
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
    if own:  # the submission's own arrays all stay between its calls; none of its inputs is checked
        return _Timed(name, run, tuple(dev.values()) + tuple(pristine.values()), {}, restore,
                      poisoned=tuple(dev[p.name] for p in spec.kernel.buffers if p.role == "out"),
                      outputs={p.name: dev[p.name] for p in spec.kernel.outputs})
    return _Timed(name, run, tuple(originals.values()), originals, restore)


def _poison(array: Any, cp: Any) -> None:
    """Fill a device array with the grader's poison pattern (grader.backends.base.POISON_BITS): an
    element the call does not write is then caught, whatever the previous call left there."""
    bits = POISON_BITS.get(array.dtype.itemsize)
    if bits is None:
        array.fill(0)
    else:
        array.view(cp.dtype(bits.dtype)).fill(bits)


def _ready(t: _Timed, cp: Any) -> None:
    """Before a call: inout buffers from their pristine copies, the submission's outputs poisoned."""
    for working, pristine in t.restore:
        working[...] = pristine
    for output in t.poisoned:
        _poison(output, cp)


def address_ranges(arrays: Sequence[Any]) -> list[tuple[int, int]]:
    """The device addresses [start, end) the CuPy arrays occupy."""
    return [(int(a.data.ptr), int(a.data.ptr) + int(a.nbytes)) for a in arrays]


def _failed(task: Task, module: str, exc: Exception) -> dict[str, Any]:
    """The timing's result when a call of `module` raised (a launch that failed)."""
    return {"id": task.id, "status": "error", "message": f"{type(exc).__name__}: {exc}", "data": {"module": module}}


def _wrong(task: Task, call: int, compare: dict[str, Any]) -> dict[str, Any]:
    """The timing's result when call `call` of the submission computed a wrong answer (0: the untimed
    call before the timed ones)."""
    calls = WARMUP + task.repeats
    return {"id": task.id, "status": "error", "message": f"{timed_call_name(call, calls)} computed a wrong answer",
            "data": {"module": task.module, "wrong": {"call": call, "calls": calls, "compare": compare}}}


class _Answers:
    """The submission's answers at the timing's size. The untimed call's answer is downloaded, kept on
    the device (in `kept`) and compared in full with the float64 reference; each timed call's answer is
    compared with those bits on the device, in microseconds, inside the timed window. An answer with
    other bits (float atomics add in another order; a call that skipped work) is downloaded there and
    compared in full once the window is over: a full comparison takes CPU-tenths of a second, and the
    window keeps every other grading's kernels off the GPU."""

    def __init__(self, case: Case, exercise: Exercise, sizes: dict[str, int], own: _Timed, cp: Any) -> None:
        spec = exercise.spec
        self.case, self.spec, self.sizes, self.cp = case, spec, sizes, cp
        self.outputs = dict(own.outputs or {})
        self.bf16 = {p.name for p in spec.kernel.outputs if p.is_bfloat16}
        self.first = {name: cp.empty_like(a) for name, a in self.outputs.items()}
        self.kept = tuple(self.first.values())
        self.differing: list[tuple[int, dict[str, np.ndarray]]] = []

    def keep(self) -> dict[str, np.ndarray]:
        """The outputs the last call left, downloaded; their bits become the ones later calls must give."""
        for name, array in self.outputs.items():
            self.first[name][...] = array
        return self._download()

    def note(self, call: int) -> None:
        """After timed call `call`: outputs with other bits than the kept ones are downloaded for later."""
        cp = self.cp
        if not all(cp.array_equal(a.view(cp.uint8), self.first[n].view(cp.uint8)) for n, a in self.outputs.items()):
            self.differing.append((call, self._download()))

    def compare(self, answer: dict[str, np.ndarray]) -> dict[str, Any] | None:
        """None if the answer is right; else the comparison that says how it is not."""
        result = compared(self.case, self.spec, self.sizes, answer, output_digest(answer))
        return None if result["ok"] else result

    def _download(self) -> dict[str, np.ndarray]:
        host = {}
        for name, array in self.outputs.items():
            got = self.cp.asnumpy(array)
            host[name] = bfloat16.to_values(got) if name in self.bf16 else got
        return host


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

    def zero(self, kept: Sequence[tuple[int, int]]) -> None:
        """Zero every block handed out so far, in use or freed, but those that overlap a kept range of
        device addresses [start, end)."""
        stream = self.cp.cuda.get_current_stream().ptr
        for address, size in self.blocks.items():
            if not any(start < address + size and address < end for start, end in kept):
                self.cp.cuda.runtime.memsetAsync(address, 0, size, stream)

    def scrub(self, device: Device) -> None:
        try:
            with device.using():
                for address, size in self.blocks.items():
                    self.cp.cuda.runtime.memset(address, 0, size)
                self.cp.cuda.Device().synchronize()
            self.pool.free_all_blocks()
        except Exception:  # noqa: BLE001 - a context a failed launch broke: the process exits, the memory with it
            pass
