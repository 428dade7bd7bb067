"""The GPU backend: CuPy loads the CUBIN NVRTC made and launches it; canaries guard every buffer."""
from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np

from .. import gpu_lock
from .base import CANARY_BITS, GUARD_ELEMENTS, Buffer, LaunchOutcome

# CUDA errors after which the context cannot be used again: the child must report and exit.
_FATAL = ("ILLEGAL_ADDRESS", "LAUNCH_FAILED", "ILLEGAL_INSTRUCTION", "MISALIGNED_ADDRESS", "ASSERT",
          "HARDWARE_STACK_ERROR", "INVALID_PC", "INVALID_ADDRESS_SPACE", "LAUNCH_TIMEOUT", "TRAP", "ECC")


class GpuDevice:
    """Runs kernels on the current CUDA device through CuPy."""

    name = "gpu"

    def __init__(self, pool: bool = True):
        import cupy as cp

        self.cp = cp
        if not pool:
            # Under memcheck the pool would hide overruns into neighbouring pool blocks.
            cp.cuda.set_allocator(None)
        self._modules: dict[str, Any] = {}
        # Other gradings may share this GPU (grade batch --per-gpu): use it shared, time it alone.
        try:
            gpu_id = cp.cuda.runtime.deviceGetPCIBusId(cp.cuda.Device().id)
        except Exception:  # an odd driver: fall back to what this process was given
            gpu_id = os.environ.get("CUDA_VISIBLE_DEVICES", "0")
        self.lock = gpu_lock.for_gpu(str(gpu_id))
        self.lock.share()

    def take_exclusive(self) -> None:
        """Before timing: wait until no other grading uses this GPU, and keep new ones off it."""
        self.lock.exclusive()

    def load(self, artifact: str, kernel: str) -> Any:
        module = self._modules.get(artifact)
        if module is None:
            module = self._modules[artifact] = self.cp.RawModule(path=artifact)
        return module.get_function(kernel)

    def upload(self, name: str, data: np.ndarray) -> Buffer:
        buf = self.empty(name, data.dtype, data.size, fill_nan=False)
        buf.handle[1].set(np.ascontiguousarray(data).ravel())
        return buf

    def empty(self, name: str, dtype: np.dtype, count: int, fill_nan: bool) -> Buffer:
        cp = self.cp
        raw = cp.empty(count + 2 * GUARD_ELEMENTS, dtype=dtype)
        raw.view(cp.uint32)[...] = CANARY_BITS
        data = raw[GUARD_ELEMENTS:GUARD_ELEMENTS + count]
        if not fill_nan:
            data.fill(0)
        return Buffer(name, np.dtype(dtype), count, arg=data, handle=(raw, data))

    def download(self, buf: Buffer) -> np.ndarray:
        return buf.handle[1].get()

    def canary_damage(self, buf: Buffer) -> dict[str, int]:
        raw = buf.handle[0].view(self.cp.uint32).get()
        before = int(np.count_nonzero(raw[:GUARD_ELEMENTS] != CANARY_BITS))
        after = int(np.count_nonzero(raw[GUARD_ELEMENTS + buf.count:] != CANARY_BITS))
        return {k: v for k, v in (("before", before), ("after", after)) if v}

    def launch(self, kernel: Any, grid, block, shared: int, args: Sequence[Any], *, step_limit: int) -> LaunchOutcome:
        cp = self.cp
        try:
            kernel(tuple(grid), tuple(block), tuple(args), shared_mem=shared)
            cp.cuda.Device().synchronize()
        except Exception as exc:  # CuPy raises driver/runtime errors as exceptions: they are outcomes here
            text = f"{type(exc).__name__}: {exc}"
            return LaunchOutcome(error=_explain(text), fatal=any(tag in text for tag in _FATAL))
        return LaunchOutcome()

    def free(self, bufs: Sequence[Buffer]) -> None:
        for b in bufs:
            b.handle = None
            b.arg = None


def _explain(text: str) -> str:
    if "ILLEGAL_ADDRESS" in text:
        return "the kernel accessed memory it does not own (an illegal address): check every index against its bound"
    if "LAUNCH_FAILED" in text or "TRAP" in text or "ASSERT" in text:
        return "the kernel stopped with a trap or failed assert"
    if "MISALIGNED" in text:
        return "the kernel made a misaligned access (e.g. a float4 at an address not a multiple of 16)"
    if "OUT_OF_RESOURCES" in text:
        return ("the launch was refused: the kernel needs more registers per thread than this block size allows "
                "(add __launch_bounds__(threads per block) before the kernel's name, or use fewer local variables)")
    if "INVALID_VALUE" in text:
        return f"the launch was refused: {text} (too much shared memory for this block size?)"
    return text
