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
               args: Sequence[Any], *, step_limit: int, seconds: float | None = None) -> LaunchOutcome: ...
    # step_limit stops an emulated launch; seconds (the GPU) stops waiting for one, which then is fatal
    def free(self, bufs: Sequence[Buffer]) -> None: ...
    def using(self) -> AbstractContextManager[None]: ...   # hold a share of the device for one task
    def take_exclusive(self) -> bool: ...                  # alone on the device for a timing
    def leave(self) -> None: ...                           # after a timing
