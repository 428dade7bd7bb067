"""The emulator backend: the same kernel, interpreted from PTX by grader.emu, with exact findings."""
from __future__ import annotations

import dataclasses
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .base import Buffer, LaunchOutcome, poison_fill

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
        self.last_steps = 0  # steps the last launch took

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
        buf = self.upload(name, poison_fill(count, dtype) if fill_nan else np.zeros(count, dtype))
        if fill_nan:  # an output: the emulator tells exactly what the kernel never wrote, or read first
            self._current.watch_output(buf.arg, np.dtype(dtype).itemsize)
        return buf

    def download(self, buf: Buffer) -> np.ndarray:
        return buf.handle.read(buf.arg, buf.dtype, buf.count)

    def canary_damage(self, buf: Buffer) -> dict[str, int]:
        return {}  # the emulator reports every out-of-bounds access itself, exactly

    def launch(self, kernel: Any, grid, block, shared: int, args: Sequence[Any], *, step_limit: int,
               seconds: float | None = None) -> LaunchOutcome:
        """Emulate one launch; it stops at step_limit (seconds is the GPU's limit, unused here)."""
        emu, name = kernel
        self.last_steps = 0
        try:
            report = emu.launch(name, grid=tuple(grid), block=tuple(block), shared_bytes=shared,
                                args=[_plain(a) for a in args], step_limit=step_limit, track_hazards=True)
        except MemoryError:
            # The child's address-space limit (spec limits.memory_bytes) stopped an allocation: the
            # kernel's per-thread local or shared arrays times the threads emulated at once.
            return LaunchOutcome(error="the kernel needs more memory than the emulator may use (a huge local or shared "
                                       "array?); keep per-thread arrays small", findings={"status": "out-of-memory"})
        except RecursionError:
            return LaunchOutcome(error="the emulator cannot run this kernel: it nests too deeply (recursion?)",
                                 findings={"status": "unsupported"})
        self.last_steps = int(report.steps)  # the launch's cost, for grader.run.child.launch_budget
        findings = findings_dict(report)
        if report.status != "ok":
            base = _STATUS_MESSAGES.get(report.status, report.status).format(steps=getattr(report, "steps", 0))
            # The step-limit message already says everything; the others add where it happened.
            detail = report.message if report.message and report.status != "step-limit" else ""
            return LaunchOutcome(error=f"{base}: {detail}" if detail else base, findings=findings)
        return LaunchOutcome(findings=findings)

    def set_constant(self, kernel: Any, name: str, data: np.ndarray) -> str | None:
        """Copy `data` into the kernel module's __constant__ array `name` (cudaMemcpyToSymbol)."""
        emu, _ = kernel
        var = next((v for v in emu.module.variables if v.name == name), None)
        if var is None:
            return f"the kernel declares no __constant__ array named {name} (the exercise fills it)"
        if data.nbytes > var.size:
            return f"__constant__ {name} holds {var.size} bytes; the exercise fills {data.nbytes}: declare it as the README says"
        emu.write(emu.symbol(name), data.ravel())
        return None

    def free(self, bufs: Sequence[Buffer]) -> None:
        """Unmap and zero the buffers, as cudaFree would: a later launch that reaches past its own
        buffers then faults, instead of finding an earlier launch's inputs or outputs."""
        for buf in bufs:
            try:
                buf.handle.free(buf.arg)
            except ValueError:
                pass  # already released: freeing twice must not fail a grading

    # Nothing is shared between gradings on the CPU: no share to take, nothing to time alone.
    def using(self) -> nullcontext:
        return nullcontext()

    def take_exclusive(self) -> bool:
        return True

    def leave(self) -> None:
        pass


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
        "output_reads": items(report.output_reads),
        "unwritten": dict(report.unwritten),
    }


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return value
