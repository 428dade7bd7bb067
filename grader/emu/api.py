"""The emulator's public API: `Emulator`, `LaunchReport` and the finding dataclasses.

Outcomes of a launch are values (`LaunchReport.status`, the finding tuples); an exception out of
`launch` means the emulator itself is broken, or the caller passed arguments that do not fit the
kernel (a usage error, raised as ValueError).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from . import memory, ptx
from .global_hazards import GlobalShadow
from .hazards import Hazard, SharedShadow, UninitRead
from .machine import KernelCode, Machine, Recorder, Stop, decode_kernel
from .operands import Unsupported
from .ops_memory import COUNTER_KEYS
from .printf import PrintfLog
from .ptx import ParamInfo

__all__ = ["Emulator", "LaunchReport", "BarrierError", "MemoryFault", "Hazard", "UninitRead", "ParamInfo"]

MAX_LANES_PER_CHUNK = 1 << 18  # lanes resident at once; larger grids run in block chunks
MAX_SHADOW_BYTES = 1 << 24  # shared bytes of the hazard shadow (16 B of shadow per byte)
MAX_GLOBAL_SHADOW_BYTES = 1 << 22  # global bytes of the global-race shadow (32 B of shadow per byte)


@dataclass(frozen=True)
class BarrierError:
    """A barrier misuse: "divergent-block", "divergent-warp" or "deadlock"."""

    kind: str
    line: int
    block: tuple[int, int, int]
    detail: str


@dataclass(frozen=True)
class MemoryFault:
    """An out-of-bounds or misaligned access (recorded and suppressed)."""

    space: str  # "global", "shared", "local"
    kind: str  # "out-of-bounds-read", "out-of-bounds-write", "misaligned"
    line: int
    block: tuple[int, int, int]
    thread: tuple[int, int, int]
    address: int
    detail: str


@dataclass(frozen=True)
class OutputRead:
    """Elements of an output buffer that a source line read before the kernel had written them."""

    buffer: str
    line: int
    count: int


@dataclass(frozen=True)
class LaunchReport:
    """Everything one launch produced besides the memory it wrote."""

    status: str  # "ok", "step-limit", "deadlock", "trap", "unsupported", "launch-bounds"
    message: str
    counters: dict
    per_line: dict
    hazards: tuple
    barrier_errors: tuple
    memory_errors: tuple
    uninit_reads: tuple
    steps: int
    warp_instructions: int
    output_reads: tuple = ()  # OutputRead: an output element read before the kernel wrote it
    unwritten: dict = field(default_factory=dict)  # watched output -> elements never written
    work_ns: float = 0.0  # the launch's modelled work (machine.Recorder.work_ns)
    stopped_by: str = ""  # status "step-limit": the limit that stopped it, "steps", "work" or "cpu"


def _dim3(v) -> tuple[int, int, int]:
    if isinstance(v, (int, np.integer)):
        return (int(v), 1, 1)
    t = tuple(int(a) for a in v)
    return (t + (1, 1, 1))[:3]


class Emulator:
    """A parsed PTX module with its own device memory; launch its kernels on the CPU."""

    def __init__(self, ptx_text: str, source_name: str = "submission.cu") -> None:
        """Parse the module and allocate (and initialise) its module-scope `.global` variables."""
        self.source_name = source_name
        self.module = ptx.parse(ptx_text)
        self.heap = memory.GlobalHeap()
        self._symbols: dict[str, int] = {}
        for v in self.module.variables:
            addr = self.heap.alloc(max(v.size, 1), name=v.name, align=v.align)
            if v.init:
                self.heap.write(addr, v.init)
            self._symbols[v.name] = addr
        self._code: dict[str, KernelCode] = {}

    # ------------------------------------------------------------------ module
    @property
    def kernel_names(self) -> tuple[str, ...]:
        """Names of the module's `.entry` kernels."""
        return tuple(self.module.kernels)

    def kernel_params(self, name: str) -> tuple[ParamInfo, ...]:
        """The kernel's parameters, in order."""
        return self._kernel(name).params

    def symbol(self, name: str) -> int:
        """Device address of a module-scope variable (for cudaMemcpyToSymbol-like setup)."""
        return self._symbols[name]

    def _kernel(self, name: str) -> ptx.Kernel:
        if name not in self.module.kernels:
            raise ValueError(f"no kernel named {name!r}; the module has {', '.join(self.kernel_names)}")
        return self.module.kernels[name]

    # ------------------------------------------------------------------ memory
    def alloc(self, nbytes: int, name: str = "", page_offset: int | None = None) -> int:
        """Allocate zero-filled device memory; 256-byte aligned, followed by an unmapped gap. With
        `page_offset`, the address is that many bytes past a 4 KiB boundary (memory.GlobalHeap.alloc)."""
        return self.heap.alloc(int(nbytes), name=name, page_offset=page_offset)

    def free(self, addr: int) -> None:
        """Release an allocation made by `alloc`, as `cudaFree` does: it is zeroed and unmapped, so a
        later launch that reaches it faults. ValueError for an address `alloc` did not return (or
        one already freed, or a module variable's)."""
        addr = int(addr)
        if addr in self._symbols.values():
            raise ValueError(f"{addr:#x} is a module variable, not an allocation")
        self.heap.free(addr)

    def write(self, addr: int, data) -> None:
        """Copy the bytes of a host array (or bytes) to device memory."""
        self.heap.write(int(addr), data)

    def read(self, addr: int, dtype, count: int) -> np.ndarray:
        """Copy `count` elements of `dtype` from device memory into a new host array."""
        return self.heap.read(int(addr), dtype, int(count))

    def _global_shadow(self, code: KernelCode, num_blocks: int, block, grid) -> GlobalShadow | None:
        """The launch's global-race shadow over the live buffers, or None for a kernel with a fence
        (see global_hazards.py) or no buffer."""
        if _has_fence(code) or not self.heap.starts:
            return None
        return GlobalShadow(self.heap.starts, self.heap.ends, self.heap.names, num_blocks, block, grid,
                            max_bytes=MAX_GLOBAL_SHADOW_BYTES)

    def watch_output(self, addr: int, esize: int) -> None:
        """Treat the allocation at `addr` as an output whose contents on entry are undefined: the
        launch reports which elements were never written and which lines read one before it was."""
        self.heap.watch_output(int(addr), int(esize))

    # ------------------------------------------------------------------ launch
    def launch(self, kernel: str, grid=(1, 1, 1), block=(1, 1, 1), shared_bytes: int = 0,
               args=(), step_limit: int = 2_000_000, track_hazards: bool = True, work_limit: float | None = None,
               cpu_seconds: float | None = None) -> LaunchReport:
        """Run a kernel over the grid and report status, counters and findings. The launch stops (status
        "step-limit") at step_limit grid-wide steps, at work_limit modelled nanoseconds of work
        (machine.Recorder.work_ns) or after cpu_seconds of this process's CPU time, whichever comes first."""
        k = self._kernel(kernel)
        grid, block = _dim3(grid), _dim3(block)
        tpb = block[0] * block[1] * block[2]
        if tpb < 1 or tpb > 1024 or min(grid) < 1:
            raise ValueError(f"invalid launch configuration grid={grid} block={block}")
        params = memory.pack_params(k.params, list(args))
        code = self._code.get(kernel)
        if code is None:
            code = self._code[kernel] = decode_kernel(self.module, k, self._symbols)
        num_blocks = grid[0] * grid[1] * grid[2]
        shared_total = code.static_shared + int(shared_bytes)
        rec = Recorder()
        rec.printf = PrintfLog()
        if self.heap.outputs is not None:
            self.heap.outputs.early_reads = {}  # per launch
        shadow = None
        shadow_blocks = 0
        if track_hazards and shared_total > 0:
            shadow_blocks = min(num_blocks, max(1, MAX_SHADOW_BYTES // shared_total))
            shadow = SharedShadow(shadow_blocks, shared_total, block, grid)
        gshadow = self._global_shadow(code, num_blocks, block, grid) if track_hazards else None
        wpb = (tpb + 31) // 32
        per_chunk = max(1, MAX_LANES_PER_CHUNK // (wpb * 32))
        status, message, stopped_by = "ok", "", ""
        cpu_deadline = None if cpu_seconds is None else time.process_time() + cpu_seconds
        with np.errstate(all="ignore"):
            try:
                for b0 in range(0, num_blocks, per_chunk):
                    b1 = min(num_blocks, b0 + per_chunk)
                    m = Machine(code, self.heap, params, grid, block, shared_bytes, (b0, b1), rec,
                                shadow if b0 < shadow_blocks else None)
                    m.shadow_blocks = shadow_blocks
                    m.gshadow = gshadow
                    try:
                        m.run(step_limit, work_limit, cpu_deadline)
                    finally:
                        # what the chunk printed, even if it trapped (that output helps most then)
                        rec.printf.flush(m)
            except Stop as e:
                status, message, stopped_by = e.status, e.message, e.limit
            except Unsupported as e:
                status, message = "unsupported", f"the emulator does not support {e}"
            finally:
                rec.printf.finish()
        counters = {key: 0 for key in COUNTER_KEYS}
        counters.update({key: int(v) for key, v in rec.counters.items()})
        per_line = {int(line): {key: int(v) for key, v in d.items()} for line, d in sorted(rec.per_line.items())}
        hazards = shadow.hazards() if shadow is not None else ()
        if gshadow is not None:
            hazards = tuple(hazards) + gshadow.hazards()
        uninit = shadow.uninit_reads() if shadow is not None else ()
        barrier_errors = tuple(BarrierError(**d) for d in rec.barrier_errors)
        memory_errors = tuple(MemoryFault(**d) for d in rec.memory_errors)
        if status == "ok":
            message = _summary(rec, hazards, barrier_errors, memory_errors, uninit)
        watch = self.heap.outputs
        output_reads = tuple(OutputRead(buffer, line, count) for (buffer, line), count in sorted(watch.early_reads.items())) if watch else ()
        unwritten = watch.unwritten() if watch else {}
        return LaunchReport(status, message, counters, per_line, tuple(hazards), barrier_errors,
                            memory_errors, tuple(uninit), rec.steps, rec.warp_instructions, output_reads, unwritten,
                            rec.work_ns, stopped_by)


def _has_fence(code: KernelCode) -> bool:
    """Whether the kernel has a memory fence (`__threadfence()`), which may order its blocks."""
    return any(ins.opcode in ("membar", "fence") for ins in code.kernel.instrs)


def _summary(rec, hazards, barrier_errors, memory_errors, uninit) -> str:
    parts = []
    if memory_errors:
        e = memory_errors[0]
        parts.append(f"{e.kind} of {e.space} memory at line {e.line}: {e.detail}")
    if barrier_errors:
        e = barrier_errors[0]
        parts.append(f"{e.kind} barrier at line {e.line}: {e.detail}")
    if hazards:
        h = hazards[0]
        parts.append(f"{h.kind} hazard between lines {h.first_line} and {h.second_line}")
    if uninit:
        u = uninit[0]
        parts.append(f"uninitialised shared read at line {u.line}")
    if not parts:
        return f"ok: {rec.steps} steps, {rec.warp_instructions} warp instructions"
    return "; ".join(parts)
