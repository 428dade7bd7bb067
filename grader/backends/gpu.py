"""The GPU backend: CuPy loads the CUBIN NVRTC made and launches it; canaries guard every buffer."""
from __future__ import annotations

import os
import time
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import numpy as np

from ..run import gpu_lock
from .base import CANARY_BITS, GUARD_ELEMENTS, Buffer, LaunchOutcome, poison_fill

# CUDA errors after which the context cannot be used again: the child must report and exit. The
# driver says CUDA_ERROR_LAUNCH_FAILED, the runtime cudaErrorLaunchFailure: both are matched on a
# form without case or underscores (see _key).
_FATAL = ("illegaladdress", "launchfail", "illegalinstruction", "misalignedaddress", "assert",
          "hardwarestackerror", "invalidpc", "invalidaddressspace", "launchtimeout", "trap", "ecc")


def _key(text: str) -> str:
    """An error text folded for matching: CUDA_ERROR_ILLEGAL_ADDRESS and cudaErrorIllegalAddress alike."""
    return text.replace("_", "").lower()


class GpuDevice:
    """Runs kernels on the current CUDA device through CuPy."""

    name = "gpu"

    def __init__(self, pool: bool = True):
        import cupy as cp

        from ..run.child.cuda_context import set_schedule

        self.cp = cp
        # The context waits for the GPU by sleeping (grader.run.child.cuda_context says why); a child
        # whose context was made early has it already, any other gets it here, before its first use.
        try:
            set_schedule(cp.cuda.Device().id)
        except Exception:  # no usable driver: the first launch meets and reports it in its own words
            pass
        if not pool:
            # Under memcheck the pool would hide overruns into neighbouring pool blocks.
            cp.cuda.set_allocator(None)
        self._modules: dict[str, Any] = {}
        self._current: Any = None  # the module loaded last (its __constant__ arrays: set_constant)
        # Other gradings may share this GPU (grade batch --per-gpu): use it shared, time it alone.
        try:
            gpu_id = cp.cuda.runtime.deviceGetPCIBusId(cp.cuda.Device().id)
        except Exception:  # an odd driver: fall back to what this process was given
            gpu_id = os.environ.get("CUDA_VISIBLE_DEVICES", "0")
        # Held per launch (using()), not per task or for the process's life: a timing elsewhere then
        # waits only for kernels in flight, not for a task's CPU work or for processes starting up,
        # waiting for their job, or exiting (on an H200 a batch's timings drained the GPU of whole
        # processes, and later of whole tasks, stalling every other grading on that GPU meanwhile).
        self.lock = gpu_lock.for_gpu(str(gpu_id))

    @property
    def waited(self) -> float:
        """Seconds this process has waited for its share of the GPU or to have it alone, in all."""
        return self.lock.waited

    @contextmanager
    def using(self) -> Iterator[None]:
        """Hold a share of the GPU for the body (one launch's uploads, kernels and read-back)."""
        if self.lock.mode != "none":  # alone for a timing, or inside another using()
            yield
            return
        self.lock.share()
        try:
            yield
        finally:
            self.lock.release()

    def take_exclusive(self) -> bool:
        """Before timing: wait until no other grading uses this GPU, and keep new ones off it; False
        when another grading held on past the bounded wait (the timing then shares the GPU)."""
        return self.lock.exclusive()

    def leave(self) -> None:
        """After a timing: let the other gradings back onto the GPU."""
        self.lock.release()

    def load(self, artifact: str, kernel: str) -> Any:
        module = self._modules.get(artifact)
        if module is None:
            module = self._modules[artifact] = self.cp.RawModule(path=artifact)
        self._current = module
        return module.get_function(kernel)

    def healthy(self) -> bool:
        """Whether the CUDA context still works (a warm worker asks after each job: an error a kernel
        left behind must end the worker, not fail the next submission's launches)."""
        try:
            self.cp.cuda.Device().synchronize()
            return int(self.cp.ones(1, dtype=self.cp.int32).sum().get()) == 1
        except Exception:  # noqa: BLE001 - any CUDA error here means the context is gone
            return False

    def forget_modules(self) -> None:
        """Unload every module loaded so far, and give the memory pool's free blocks back to the driver
        (a warm worker, between two submissions' jobs). The next job then starts from the memory a
        fresh process would have: a stray write far past a buffer faults, or not, as it would in a
        child of its own, instead of landing in blocks an earlier job left in the pool."""
        self._modules.clear()
        self._current = None
        self.cp.get_default_memory_pool().free_all_blocks()
        self.cp.get_default_pinned_memory_pool().free_all_blocks()

    def set_constant(self, kernel: Any, name: str, data: np.ndarray) -> str | None:
        """Copy `data` into the loaded module's __constant__ array `name` (cudaMemcpyToSymbol)."""
        try:
            ptr = self._current.get_global(name)
        except Exception:  # CuPy raises the driver's "not found" as an exception: an outcome here
            return f"the kernel declares no __constant__ array named {name} (the exercise fills it)"
        size = getattr(getattr(ptr, "mem", None), "size", data.nbytes)
        if data.nbytes > size:
            return f"__constant__ {name} holds {size} bytes; the exercise fills {data.nbytes}: declare it as the README says"
        ptr.copy_from_host(data.ctypes.data, data.nbytes)
        return None

    def upload(self, name: str, data: np.ndarray) -> Buffer:
        buf = self.empty(name, data.dtype, data.size, fill_nan=False)
        buf.handle[1].set(np.ascontiguousarray(data).ravel())
        return buf

    def empty(self, name: str, dtype: np.dtype, count: int, fill_nan: bool) -> Buffer:
        cp = self.cp
        guard, total = guard_layout(np.dtype(dtype), count)
        raw = cp.empty(total, dtype=dtype)
        raw.view(cp.uint32)[...] = CANARY_BITS
        data = raw[guard:guard + count]
        if fill_nan:  # an output: the grader's poison pattern, so "never written" is a bit test
            data.set(poison_fill(count, dtype))
        else:
            data.fill(0)
        return Buffer(name, np.dtype(dtype), count, arg=data, handle=(raw, data))

    def download(self, buf: Buffer) -> np.ndarray:
        return buf.handle[1].get()

    def canary_damage(self, buf: Buffer) -> dict[str, int]:
        return canary_words_damaged(buf.handle[0].view(self.cp.uint32).get(), np.dtype(buf.dtype), buf.count)

    def launch(self, kernel: Any, grid, block, shared: int, args: Sequence[Any], *, step_limit: int,
               seconds: float | None = None, work: float | None = None) -> LaunchOutcome:
        """Launch and wait for the kernel; with `seconds`, wait no longer than that (step_limit and work
        are the emulator's limits, unused here). A kernel still running
        then is reported as a time-limit outcome, fatal: it keeps its CUDA context busy, so the process
        must exit (grader.run.child.runner does) for the driver to stop it."""
        cp = self.cp
        try:
            kernel(tuple(grid), tuple(block), tuple(args), shared_mem=shared)
            if seconds is None:
                cp.cuda.Device().synchronize()
            elif not _wait(cp, seconds):
                return LaunchOutcome(error=f"the kernel did not finish within the {seconds:.1f} s time limit",
                                     fatal=True, findings={"status": "time-limit", "seconds": round(seconds, 3)})
            else:
                cp.cuda.Device().synchronize()  # raises what the kernel's completion reported
        except Exception as exc:  # CuPy raises driver/runtime errors as exceptions: they are outcomes here
            text = f"{type(exc).__name__}: {exc}"
            return LaunchOutcome(error=_explain(text), fatal=any(tag in _key(text) for tag in _FATAL))
        return LaunchOutcome()

    def scrub(self, bufs: Sequence[Buffer]) -> None:
        """Zero and release buffers (the reference's, before any submission launch can look for them)."""
        for b in bufs:
            if b.handle is not None:
                b.handle[0].fill(0)
        self.cp.cuda.Device().synchronize()
        self.free(bufs)

    def free(self, bufs: Sequence[Buffer]) -> None:
        for b in bufs:
            b.handle = None
            b.arg = None


def guard_layout(dtype: np.dtype, count: int) -> tuple[int, int]:
    """(guard elements on each side, total elements) of a buffer of `count` elements of `dtype`:
    GUARD_ELEMENTS 4-byte canary words on each side whatever the element size, and the whole in
    whole 4-byte words (a 2-byte type with an odd count gets one element of padding)."""
    size = dtype.itemsize
    guard = GUARD_ELEMENTS * 4 // size  # 4 KiB of canaries on each side
    pad = (-count * size) % 4 // size
    return guard, 2 * guard + count + pad


def canary_words_damaged(words: np.ndarray, dtype: np.dtype, count: int) -> dict[str, int]:
    """Canary words changed before and after the data, in a buffer laid out by guard_layout and read
    back as uint32. A word the data shares with padding (a 2-byte type, odd count) is not checked."""
    guard, _ = guard_layout(dtype, count)
    first = guard * dtype.itemsize // 4
    end = -(-(guard + count) * dtype.itemsize // 4)  # first word past the data, rounded up
    before = int(np.count_nonzero(words[:first] != CANARY_BITS))
    after = int(np.count_nonzero(words[end:] != CANARY_BITS))
    return {k: v for k, v in (("before", before), ("after", after)) if v}


# cudaEventQuery's answer while the work before the event is still running (cudaErrorNotReady).
_NOT_READY = 600


def _wait(cp: Any, seconds: float) -> bool:
    """Poll an event recorded after the launch until it completes (True) or `seconds` pass (False).
    Polling, not a blocking synchronize: a kernel that never ends would block that forever.

    A kernel that faulted (an illegal or misaligned address, a trap) is finished too: the query then
    answers with that error, not "not ready", and the synchronize after this reports it as a crash.
    (CuPy's Event.done reads any answer but success as "not done": a fault looked like a hang.)"""
    done = cp.cuda.Event(disable_timing=True)
    done.record()
    deadline = time.monotonic() + seconds
    pause = 0.0001
    while _query(cp, done) == _NOT_READY:
        if time.monotonic() > deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 0.01)
    return True


def _query(cp: Any, event: Any) -> int:
    """cudaEventQuery's status for the event (0 done, _NOT_READY running, anything else an error)."""
    try:
        return int(cp.cuda.runtime.eventQuery(event.ptr))
    except Exception:  # a binding that raises on the error: the kernel is over, synchronize says how
        return -1


def _explain(text: str) -> str:
    key = _key(text)
    if "illegaladdress" in key:
        return "the kernel accessed memory it does not own (an illegal address): check every index against its bound"
    if "hardwarestackerror" in key:
        return "the kernel overflowed its stack (deep or endless recursion, or a huge local array?)"
    if "trap" in key or "assert" in key or "illegalinstruction" in key:
        return "the kernel stopped with a trap or failed assert"
    if "launchfail" in key:
        # "unspecified launch failure" names no cause: a __trap() ends a kernel so, and so does a
        # fault the driver does not name, or a profiler's replay that failed (counters.counts_from)
        return ("the launch failed with no named cause (unspecified launch failure: a __trap() in the kernel, "
                "or a fault the driver does not name)")
    if "misaligned" in key:
        return "the kernel made a misaligned access (e.g. a float4 at an address not a multiple of 16)"
    if "outofresources" in key:
        return ("the launch was refused: the kernel needs more registers per thread than this block size allows "
                "(add __launch_bounds__(threads per block) before the kernel's name, or use fewer local variables)")
    if "invalidvalue" in key:
        return f"the launch was refused: {text} (too much shared memory for this block size?)"
    return text
