"""The interface both backends implement for the runner."""
from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

import numpy as np

# A quiet-NaN bit pattern unlikely to be produced by arithmetic: written around every buffer
# (canaries) so a write past either end is seen even without a sanitizer.
CANARY_BITS = np.uint32(0x7FC0FFEE)
GUARD_ELEMENTS = 1024
# What every output element holds before the launch: a quiet NaN with a payload of the grader's own
# (for floats; the same bits for integers), so "never written" means "still these bits", not "NaN".
POISON_BITS = {2: np.uint16(0x7E5A), 4: np.uint32(0x7FC0DEAD), 8: np.uint64(0x7FF80000DEADDEAD)}


def poison_fill(count: int, dtype: np.dtype) -> np.ndarray:
    """`count` elements of `dtype`, each the grader's poison pattern (POISON_BITS)."""
    dt = np.dtype(dtype)
    bits = POISON_BITS.get(dt.itemsize)
    if bits is None:
        return np.zeros(count, dt)
    return np.full(count, bits, dtype=bits.dtype).view(dt)


def untouched(values: np.ndarray) -> np.ndarray:
    """Which elements still hold the poison pattern (a bit test: a NaN the kernel computed is not)."""
    bits = POISON_BITS.get(values.dtype.itemsize)
    if bits is None:
        return np.zeros(values.shape, dtype=bool)
    return np.ascontiguousarray(values).view(bits.dtype) == bits


@dataclass
class Buffer:
    """A device buffer for one kernel parameter; `arg` is what the launch passes for it."""

    name: str
    dtype: np.dtype
    count: int
    arg: Any
    handle: Any = None


@dataclass(frozen=True)
class LaunchOutcome:
    """How one launch ended. error is None on success; fatal means the device is unusable afterwards."""

    error: str | None = None
    fatal: bool = False
    findings: dict[str, Any] = field(default_factory=dict)  # emulator findings, JSON-ready


class Device(Protocol):
    name: str

    def load(self, artifact: str, kernel: str) -> Any: ...
    def upload(self, name: str, data: np.ndarray) -> Buffer: ...
    def empty(self, name: str, dtype: np.dtype, count: int, fill_nan: bool) -> Buffer: ...
    def download(self, buf: Buffer) -> np.ndarray: ...
    def canary_damage(self, buf: Buffer) -> dict[str, int]: ...
    def launch(self, kernel: Any, grid: tuple[int, int, int], block: tuple[int, int, int], shared: int,
               args: Sequence[Any], *, step_limit: int, seconds: float | None = None,
               work: float | None = None) -> LaunchOutcome: ...
    # step_limit and work (modelled nanoseconds, grader.emu.machine.STEP_NS) stop an emulated launch, and
    # seconds its CPU time; on the GPU seconds stops waiting for the launch, which then is fatal
    def free(self, bufs: Sequence[Buffer]) -> None: ...
    def set_constant(self, kernel: Any, name: str, data: np.ndarray) -> str | None: ...  # problem, or None
    def using(self) -> AbstractContextManager[None]: ...   # hold a share of the device for one task
    def take_exclusive(self) -> bool: ...                  # alone on the device for a timing
    def leave(self) -> None: ...                           # after a timing
