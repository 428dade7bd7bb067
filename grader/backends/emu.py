"""The emulator backend: the same kernel, interpreted from PTX by grader.emu, with exact findings."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .base import Buffer, LaunchOutcome

# Statuses of an emulated launch that mean the student's kernel did not complete.
_STATUS_MESSAGES = {
    "step-limit": "the kernel did not finish (stopped after {steps:,} steps): an endless loop?",
    "deadlock": "the kernel deadlocked at a barrier",
    "trap": "the kernel stopped with a trap or failed assert",
    "unsupported": "the emulator cannot run this kernel",
}


class EmuDevice:
    """Runs kernels in the PTX emulator. Buffers live in the emulator of the kernel loaded last."""

    name = "emu"

    def __init__(self) -> None:
        self._emulators: dict[str, Any] = {}
        self._current: Any = None

    def load(self, artifact: str, kernel: str) -> Any:
        from ..emu import Emulator

        emu = self._emulators.get(artifact)
        if emu is None:
            emu = self._emulators[artifact] = Emulator(Path(artifact).read_text(), source_name=Path(artifact).stem)
        self._current = emu
        return (emu, kernel)

    def upload(self, name: str, data: np.ndarray) -> Buffer:
        data = np.ascontiguousarray(data)
        addr = self._current.alloc(max(data.nbytes, 1), name=name)
        self._current.write(addr, data.ravel())
        return Buffer(name, data.dtype, data.size, arg=addr, handle=self._current)

    def empty(self, name: str, dtype: np.dtype, count: int, fill_nan: bool) -> Buffer:
        fill = np.full(count, np.nan if fill_nan else 0, dtype=dtype) if np.dtype(dtype).kind == "f" else np.zeros(count, dtype)
        return self.upload(name, fill)

    def download(self, buf: Buffer) -> np.ndarray:
        return buf.handle.read(buf.arg, buf.dtype, buf.count)

    def canary_damage(self, buf: Buffer) -> dict[str, int]:
        return {}  # the emulator reports every out-of-bounds access itself, exactly

    def launch(self, kernel: Any, grid, block, shared: int, args: Sequence[Any], *, step_limit: int) -> LaunchOutcome:
        emu, name = kernel
        report = emu.launch(name, grid=tuple(grid), block=tuple(block), shared_bytes=shared,
                            args=[_plain(a) for a in args], step_limit=step_limit, track_hazards=True)
        findings = findings_dict(report)
        if report.status != "ok":
            base = _STATUS_MESSAGES.get(report.status, report.status).format(steps=getattr(report, "steps", 0))
            return LaunchOutcome(error=f"{base}: {report.message}" if report.message else base, findings=findings)
        return LaunchOutcome(findings=findings)

    def free(self, bufs: Sequence[Buffer]) -> None:
        pass  # each Emulator's heap lives as long as the child; sizes are small by design


def findings_dict(report: Any) -> dict[str, Any]:
    """An emulator LaunchReport as JSON-ready data."""
    def items(seq):
        return [dataclasses.asdict(x) for x in seq]

    return {
        "status": report.status,
        "message": report.message,
        "counters": {k: int(v) for k, v in report.counters.items()},
        "per_line": {str(line): {k: int(v) for k, v in c.items()} for line, c in report.per_line.items()},
        "hazards": items(report.hazards),
        "barrier_errors": items(report.barrier_errors),
        "memory_errors": items(report.memory_errors),
        "uninit_reads": items(report.uninit_reads),
    }


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return value
