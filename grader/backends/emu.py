"""The emulator backend: the same kernel, interpreted from PTX by grader.emu, with exact findings."""
from __future__ import annotations

import dataclasses
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .base import Buffer, LaunchOutcome, poison_fill
from .gpu import guard_layout

# Statuses of an emulated launch that mean the student's kernel did not complete.
_STATUS_MESSAGES = {
    "step-limit": "the kernel did not finish (stopped after {steps:,} steps): it loops without end (an endless loop), "
                  "or does far more work than it needs to",
    "deadlock": "the kernel deadlocked at a barrier",
    "trap": "the kernel stopped with a trap or failed assert",
    "unsupported": "the emulator cannot run this kernel",
    "launch-bounds": "the launch breaks the kernel's __launch_bounds__",
}


# CuPy's memory pool rounds every allocation up to a multiple of this (its allocation unit).
CUPY_POOL_UNIT = 512


class GpuBufferPlacement:
    """Where the GPU backend puts each buffer's data, as a byte offset from a 2 MiB boundary, in a
    fresh process. It mirrors grader/backends/gpu.py: GpuDevice.empty (and upload, through it) makes
    every buffer one `cp.empty` of guard_layout(dtype, count)'s total elements, with the data `guard`
    elements (4 KiB) into it. CuPy's default pool rounds that to 512 bytes; with no free block that
    fits it calls cudaMalloc, which in a fresh process packs such allocations one after another from
    a 2 MiB boundary. A freed buffer's block goes back to the pool: the smallest free block that fits
    is reused (the latest freed on a tie), split when larger, and free neighbours from one cudaMalloc
    merge again.

    Why: the sectors Nsight Compute counts for a global atomic depend on address bits 7..11
    (grader.emu.traffic.atomic_sectors), so for the emulator to count as ncu does, its buffers must
    sit where the GPU's do, modulo 4 KiB. Checked against ncu: the histogram golden (bins at 512 mod
    4096, 3,434 sectors) and bench/atomic_probe.py's buffer (the first allocation, 2 MiB aligned).
    Not modelled: device memory the process allocated otherwise (ncu, CuPy's own kernels), where the
    driver puts large allocations, blocks given back to the driver (free_all_blocks) and CuPy's
    exact choice among equal free blocks. Load and store sector counts depend only on the address
    modulo 128, so they do not change with the placement.
    """

    def __init__(self) -> None:
        self._end = 0  # end of the last cudaMalloc, from the 2 MiB boundary
        self._mallocs = 0
        self._free: list[tuple[int, int, int]] = []  # free pool blocks: (offset, bytes, cudaMalloc number)
        self._used: dict[int, tuple[int, int, int]] = {}  # data offset -> its block

    def place(self, dtype: np.dtype, count: int) -> int:
        """The data offset of the next buffer of `count` elements of `dtype` (a multiple of 512)."""
        dtype = np.dtype(dtype)
        guard, total = guard_layout(dtype, count)
        size = -(-total * dtype.itemsize // CUPY_POOL_UNIT) * CUPY_POOL_UNIT
        fits = [b for b in reversed(self._free) if b[1] >= size]
        if fits:
            block = min(fits, key=lambda b: b[1])
            self._free.remove(block)
            if block[1] > size:  # the pool splits the block: the rest stays free
                self._free.append((block[0] + size, block[1] - size, block[2]))
            block = (block[0], size, block[2])
        else:
            block = (self._end, size, self._mallocs)
            self._end += size
            self._mallocs += 1
        data = block[0] + guard * dtype.itemsize
        self._used[data] = block
        return data

    def release(self, data: int) -> None:
        """The buffer at data offset `data` is freed: its block goes back to the pool."""
        off, size, malloc = self._used.pop(data)
        for b in list(self._free):
            if b[2] == malloc and (b[0] + b[1] == off or off + size == b[0]):
                self._free.remove(b)
                off, size = min(off, b[0]), size + b[1]
        self._free.append((off, size, malloc))


class EmuDevice:
    """Runs kernels in the PTX emulator. Buffers live in the emulator of the kernel loaded last."""

    name = "emu"

    def __init__(self) -> None:
        self._emulators: dict[str, Any] = {}
        self._current: Any = None
        self.last_steps = 0  # steps the last launch took
        self.last_warp_instructions = 0
        self.last_work = 0.0  # the last launch's modelled work in nanoseconds (grader.emu.machine.STEP_NS)
        # Buffers sit where the GPU backend's would, modulo 4 KiB (one CuPy pool per process).
        self._placement = GpuBufferPlacement()
        self._placed: dict[tuple[int, int], int] = {}  # (id of the emulator, address) -> data offset

    def load(self, artifact: str, kernel: str) -> Any:
        from ..emu import Emulator

        emu = self._emulators.get(artifact)
        if emu is None:
            emu = self._emulators[artifact] = Emulator(Path(artifact).read_text(), source_name=Path(artifact).stem)
        self._current = emu
        return (emu, kernel)

    def upload(self, name: str, data: np.ndarray) -> Buffer:
        from ..emu.memory import PAGE_BYTES

        data = np.ascontiguousarray(data)
        offset = self._placement.place(data.dtype, data.size)
        addr = self._current.alloc(max(data.nbytes, 1), name=name, page_offset=offset % PAGE_BYTES)
        self._placed[(id(self._current), addr)] = offset
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
               seconds: float | None = None, work: float | None = None) -> LaunchOutcome:
        """Emulate one launch; it stops at step_limit steps, at `work` modelled nanoseconds (None: no
        such limit) or after `seconds` of this process's CPU time (None: no such limit)."""
        emu, name = kernel
        self.last_steps, self.last_warp_instructions, self.last_work = 0, 0, 0.0
        try:
            report = emu.launch(name, grid=tuple(grid), block=tuple(block), shared_bytes=shared,
                                args=[_plain(a) for a in args], step_limit=step_limit, track_hazards=True,
                                work_limit=work, cpu_seconds=seconds)
        except MemoryError:
            # The child's address-space limit (spec limits.memory_bytes) stopped an allocation: the
            # kernel's per-thread local or shared arrays times the threads emulated at once.
            return LaunchOutcome(error="the kernel needs more memory than the emulator may use (a huge local or shared "
                                       "array?); keep per-thread arrays small", findings={"status": "out-of-memory"})
        except RecursionError:
            return LaunchOutcome(error="the emulator cannot run this kernel: it nests too deeply (recursion?)",
                                 findings={"status": "unsupported"})
        # the launch's cost, for grader.run.child.launch_budget
        self.last_steps, self.last_warp_instructions = int(report.steps), int(report.warp_instructions)
        self.last_work = float(report.work_ns)
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
                continue  # already released: freeing twice must not fail a grading
            offset = self._placed.pop((id(buf.handle), buf.arg), None)
            if offset is not None:
                self._placement.release(offset)

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
        **({"stopped_by": report.stopped_by} if getattr(report, "stopped_by", "") else {}),
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
