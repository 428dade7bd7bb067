"""The SIMT machine: warps, per-warp IPDOM reconvergence stacks, grid-wide batching, barriers.

Every warp owns a reconvergence stack of (pc, mask, reconvergence pc) entries. The scheduler picks
the lowest PC among the stack tops of runnable warps and executes that instruction once, as NumPy
operations over every warp of the launch that sits at that PC (each with its own mask). Because the
blocks of a grid run the same program and mostly stay in step between barriers, this turns
per-warp interpretation into a few thousand grid-wide vector steps.

Lowest-PC selection is only the batching heuristic; reconvergence is decided by the IPDOM stacks,
which are exact for any CFG.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from . import cfg as cfg_mod
from . import memory
from .operands import Unsupported, storage_dtype
from .ptx import Instr, Kernel, Module
from .refusals import refusal
from .rendezvous import Rendezvous

WARP = 32
_SH = np.arange(WARP, dtype=np.uint32)
_BIT = (np.uint32(1) << _SH).astype(np.uint32)
_NOPC = np.iinfo(np.int64).max
FULL = np.uint32(0xFFFFFFFF)
MAX_FINDINGS = 100
# The work model: what a launch costs the emulator, in modelled nanoseconds of CPU time. A grid-wide
# step costs about the same whatever it does (the scheduler, NumPy's per-call overhead), plus a
# little for each warp that takes part in it (the vector work). Fitted by bench/emu_step_cost.py on
# every exercise's reference and tests/data/slow_kernels (docs/benchmarks.md has the run).
STEP_NS = 50_000
WARP_INSTRUCTION_NS = 500
# How often (in steps) the CPU-time backstop reads the process clock: often enough to stop within a
# small fraction of a second, rarely enough to cost nothing.
CPU_CHECK_STEPS = 256


def work_ns(steps: int, warp_instructions: int) -> float:
    """The work model: modelled nanoseconds of CPU time for a launch's steps and warp instructions."""
    return float(STEP_NS * steps + WARP_INSTRUCTION_NS * warp_instructions)


class Stop(Exception):
    """Ends a launch with a status other than "ok" (trap, unsupported, deadlock)."""

    def __init__(self, status: str, message: str, limit: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.limit = limit  # for "step-limit": which limit stopped it, "steps", "work" or "cpu"


def unpack(bits: np.ndarray) -> np.ndarray:
    """uint32 masks [W] -> bool [W, 32]."""
    return ((bits[:, None] >> _SH) & 1).astype(bool)


def pack(lanes: np.ndarray) -> np.ndarray:
    """bool [W, 32] -> uint32 masks [W]."""
    return np.bitwise_or.reduce(np.where(lanes, _BIT, np.uint32(0)), axis=1).astype(np.uint32)


@dataclass
class Recorder:
    """Counters and findings of one launch (across all block chunks)."""

    counters: dict = field(default_factory=lambda: defaultdict(int))
    per_line: dict = field(default_factory=lambda: defaultdict(lambda: defaultdict(int)))
    barrier_errors: list = field(default_factory=list)
    memory_errors: list = field(default_factory=list)
    seen: set = field(default_factory=set)
    steps: int = 0
    warp_instructions: int = 0
    printf: object = None  # a printf.PrintfLog, or None to drop device printf

    @property
    def work_ns(self) -> float:
        """The launch's work so far in modelled nanoseconds (work_ns)."""
        return work_ns(self.steps, self.warp_instructions)

    def add(self, line: int, key: str, value: int) -> None:
        value = int(value)
        self.counters[key] += value
        if line:
            self.per_line[line][key] += value

    def finding(self, kind: str, key: tuple, payload: dict) -> None:
        """Record a finding once per key, keeping the first MAX_FINDINGS of each list."""
        if key in self.seen:
            return
        target = self.barrier_errors if kind == "barrier" else self.memory_errors
        if len(target) >= MAX_FINDINGS:
            return
        self.seen.add(key)
        target.append(payload)


class Exec:
    """What one handler sees: the batch of warps at this PC, its lanes and masks."""

    __slots__ = ("m", "W", "idx", "n", "active", "mask", "tbits", "pc", "line", "advanced", "instr")

    def mask2d(self) -> np.ndarray:
        return self.mask.reshape(-1, WARP)

    def lanes(self) -> np.ndarray:
        """Global lane indices of the batch (int64 [n])."""
        if isinstance(self.idx, slice):
            return np.arange(self.idx.start, self.idx.stop, dtype=np.int64)
        return self.idx


@dataclass
class KernelCode:
    """A kernel decoded once per Emulator: instructions, CFG, handlers, symbol layout."""

    kernel: Kernel
    cfg: cfg_mod.CFG
    handlers: list
    shared_offsets: dict[str, int]
    static_shared: int
    local_offsets: dict[str, int]
    local_bytes: int
    # per pc: the `.sync` collective there (an ops_warp.Collective), else None
    collectives: list = field(default_factory=list)


class DecodeContext:
    """Symbol addresses and layout that handler factories need."""

    def __init__(self, module: Module, kernel: Kernel, global_addrs: dict[str, int]) -> None:
        self.module = module
        self.kernel = kernel
        self.shared_offsets, self.static_shared = memory.layout_shared(kernel.shared, module.extern_shared, 0)
        self.local_offsets, self.local_bytes = memory.layout_local(kernel.local)
        self.params = {p.name: p for p in kernel.params}
        # `mov %r, sym` yields the address of the symbol in its own state space
        self.symbols: dict[str, int] = dict(global_addrs)
        self.symbols.update(self.shared_offsets)
        self.symbols.update(self.local_offsets)
        self.space_of: dict[str, str] = {n: "global" for n in global_addrs}
        self.space_of.update({n: "shared" for n in self.shared_offsets})
        self.space_of.update({n: "local" for n in self.local_offsets})
        self.labels = kernel.labels


def decode_instr(ins: Instr, ctx: DecodeContext, pc: int):
    """The handler of one instruction; raises Unsupported for a form the emulator does not run."""
    from . import ops_async, ops_control, ops_convert, ops_float, ops_half, ops_int, ops_memory, ops_warp

    for fam in (ops_control, ops_warp, ops_async, ops_memory, ops_half, ops_float, ops_int, ops_convert):
        h = fam.decode(ins, ctx, pc)
        if h is not None:
            return h
    raise Unsupported(f"opcode {ins.full}")


def decode_kernel(module: Module, kernel: Kernel, global_addrs: dict[str, int]) -> KernelCode:
    """Build the CFG and one handler per instruction."""
    graph = cfg_mod.build(kernel)
    ctx = DecodeContext(module, kernel, global_addrs)
    ctx.cfg = graph
    handlers = []
    for pc, ins in enumerate(kernel.instrs):
        try:
            h = decode_instr(ins, ctx, pc)
        except Unsupported as e:
            h = _unsupported(ins, refusal(ins) or str(e))
        except (KeyError, ValueError, IndexError) as e:
            h = _unsupported(ins, refusal(ins) or f"{ins.full} ({e})")
        handlers.append(h)
    collectives = [h if hasattr(h, "membermask") else None for h in handlers]
    return KernelCode(kernel, graph, handlers, ctx.shared_offsets, ctx.static_shared,
                      ctx.local_offsets, ctx.local_bytes, collectives)


def _unsupported(ins: Instr, what: str):
    def h(x):
        where = f" at line {ins.line}" if ins.line else ""
        raise Stop("unsupported", f"the emulator does not support {what}{where}: `{ins.text}`")

    return h


def _check_launch_bounds(kernel: Kernel, block: tuple[int, ...]) -> None:
    """Stop with status "launch-bounds" when the block breaks the kernel's `__launch_bounds__`
    (`.maxntid`) or required shape (`.reqntid`): on a GPU that launch fails and runs nothing."""
    threads = block[0] * block[1] * block[2]
    if kernel.maxntid:
        most = int(np.prod(kernel.maxntid))
        if threads > most:
            raise Stop("launch-bounds", f"the block has {threads} threads but the kernel's __launch_bounds__ allows "
                       f"at most {most}: on a GPU this launch fails (too many resources requested for launch)")
    if kernel.reqntid:
        want = (tuple(kernel.reqntid) + (1, 1))[:3]
        if tuple(block) != want:
            raise Stop("launch-bounds", f"the block is {block} but the kernel requires exactly {want} "
                       f"(.reqntid): on a GPU this launch fails")


class Machine(Rendezvous):
    """One launch over a contiguous range of blocks of the grid."""

    def __init__(self, code: KernelCode, heap: memory.GlobalHeap, params: bytes, grid, block,
                 dyn_shared: int, block_range: tuple[int, int], rec: Recorder, shadow) -> None:
        self.code = code
        self.instrs = code.kernel.instrs
        _check_launch_bounds(code.kernel, tuple(block))
        self.heap = heap
        self.params = params
        self.rec = rec
        self.shadow = shadow
        self.shadow_blocks = 0  # blocks with linear id below this are tracked by the shadow
        self.gshadow = None  # the launch's global-memory race shadow (global_hazards.py), if tracked
        self.grid = tuple(grid)
        self.block = tuple(block)
        self.dyn_shared = int(dyn_shared)
        b0, b1 = block_range
        self.nb = b1 - b0
        self.tpb = block[0] * block[1] * block[2]
        self.wpb = (self.tpb + WARP - 1) // WARP
        self.NW = self.nb * self.wpb
        self.L = self.NW * WARP
        L = self.L
        # lane geometry
        lane = np.arange(L, dtype=np.int64)
        self.lane_block = lane // (self.wpb * WARP)  # chunk-local block index
        t = lane % (self.wpb * WARP)
        self.lane_valid = t < self.tpb
        self.block_ids = np.arange(b0, b1, dtype=np.int64)  # global linear block id
        self.warp_block = np.arange(self.NW, dtype=np.int64) // self.wpb
        self.warp_in_block = np.arange(self.NW, dtype=np.int64) % self.wpb
        bx, by, _ = block
        gx, gy, _ = grid
        gb = self.block_ids[self.lane_block]
        # Per lane, its global linear block id and its thread id in the block (the global-race shadow's terms).
        self.lane_block_id, self.lane_tid = gb, t
        self._special_src = {
            "%tid.x": t % bx, "%tid.y": (t // bx) % by, "%tid.z": t // (bx * by),
            "%ctaid.x": gb % gx, "%ctaid.y": (gb // gx) % gy, "%ctaid.z": gb // (gx * gy),
            "%laneid": lane % WARP, "%warpid": (lane // WARP) % self.wpb,
        }
        self._special: dict[str, np.ndarray] = {}
        self._consts = {
            "%ntid.x": block[0], "%ntid.y": block[1], "%ntid.z": block[2],
            "%nctaid.x": grid[0], "%nctaid.y": grid[1], "%nctaid.z": grid[2],
            "%nwarpid": self.wpb, "%dynamic_smem_size": self.dyn_shared,
            "%total_smem_size": code.static_shared + self.dyn_shared,
            "%aggr_smem_size": code.static_shared + self.dyn_shared,
            "%smid": 0, "%nsmid": 132, "%gridid": 0,
        }
        # registers: raw bits over every lane
        self.regs = {name: np.zeros(L, dtype=storage_dtype(t)) for name, t in code.kernel.regs.items()}
        # memory spaces
        self.shared_bytes = code.static_shared + self.dyn_shared
        self.shared = memory.BlockedSpace(self.nb, self.shared_bytes, 0xFF)
        self.local = memory.BlockedSpace(L if code.local_bytes else 1, code.local_bytes, 0)
        self.bar_pred = np.zeros(L, dtype=bool)
        self.lane_shared_base = self.lane_block * self.shared.stride
        self.lane_local_base = lane * self.local.stride if code.local_bytes else np.zeros(L, dtype=np.int64)
        # SIMT stacks
        self.D = 16
        self.spc = np.zeros((self.NW, self.D), dtype=np.int64)
        self.smask = np.zeros((self.NW, self.D), dtype=np.uint32)
        self.srpc = np.full((self.NW, self.D), -1, dtype=np.int64)
        # entries parked at a `.sync` collective, and the membermask each waits for (see _park)
        self.spark = np.zeros((self.NW, self.D), dtype=bool)
        self.smm = np.zeros((self.NW, self.D), dtype=np.uint32)
        self.n_parked = 0
        self.alive = pack(self.lane_valid.reshape(self.NW, WARP))
        self.smask[:, 0] = self.alive
        self.depth = (self.alive != 0).astype(np.int64)
        self.waiting = np.zeros(self.NW, dtype=bool)
        self.wait_pc = np.zeros(self.NW, dtype=np.int64)
        # named barriers (bar.sync id, count): the id and thread count each waiting warp arrived
        # with; count 0 is the whole-block barrier
        self.wait_bar = np.zeros(self.NW, dtype=np.int64)
        self.wait_count = np.zeros(self.NW, dtype=np.int64)
        self.exit_pc = code.cfg.exit_pc
        self._ar = np.arange(self.NW)
        self._ret_cache: dict[int, bool] = {}
        # warp-level synchronisations (__syncwarp, shuffles, votes: any `.sync` collective) each warp
        # has executed: the hazard shadow's intra-warp rule compares them (hazards.py)
        self.warp_sync = np.zeros(self.NW, dtype=np.int64)

    # ------------------------------------------------------------------ special registers
    def special(self, name: str) -> np.ndarray:
        """Per-lane uint32 values of a special register."""
        arr = self._special.get(name)
        if arr is not None:
            return arr
        if name in self._special_src:
            arr = self._special_src[name].astype(np.uint32)
        elif name in self._consts:
            arr = np.full(self.L, self._consts[name], dtype=np.uint32)
        elif name.startswith("%lanemask_"):
            ln = (np.arange(self.L) % WARP).astype(np.uint64)
            one = np.uint64(1)
            kind = name[len("%lanemask_"):]
            eq = one << ln
            arr = {"eq": eq, "lt": eq - one, "le": (eq << one) - one,
                   "gt": ~((eq << one) - one), "ge": ~(eq - one)}[kind].astype(np.uint32)
        elif name.startswith(("%clock", "%globaltimer")):
            # deterministic clocks (same file, same score): the launch's step count so far
            t = np.uint64(self.rec.steps)
            return np.full(self.L, t >> np.uint64(32) if name.endswith("_hi") else t, dtype=np.uint64)
        else:
            raise Unsupported(f"special register {name}")
        self._special[name] = arr
        return arr

    # ------------------------------------------------------------------ running
    def run(self, step_limit: int, work_limit: float | None = None, cpu_deadline: float | None = None) -> None:
        """Run until every warp has exited; raises Stop for trap/unsupported/deadlock, and with status
        "step-limit" when the launch reaches step_limit steps, work_limit modelled nanoseconds
        (Recorder.work_ns) or the process CPU clock reaches cpu_deadline (time.process_time)."""
        rec = self.rec
        while True:
            live = self.depth > 0
            runnable = live & ~self.waiting
            if not runnable.any():
                if (live & self.waiting).any():
                    self._deadlock()
                return
            if rec.steps >= step_limit:
                raise Stop("step-limit", f"stopped after {rec.steps} steps (step_limit={step_limit}); "
                           f"an endless loop or a launch too large for the emulator", "steps")
            if work_limit is not None and rec.work_ns >= work_limit:
                raise Stop("step-limit", f"stopped after {rec.steps} steps, {rec.work_ns / 1e9:.2f} modelled seconds "
                           f"of work (the limit is {work_limit / 1e9:.2f})", "work")
            if cpu_deadline is not None and rec.steps % CPU_CHECK_STEPS == 0 and time.process_time() >= cpu_deadline:
                # The backstop for a launch whose real cost the work model underestimates badly.
                raise Stop("step-limit", f"stopped after {rec.steps} steps at its CPU-time limit", "cpu")
            d = np.maximum(self.depth - 1, 0)
            tp = np.where(runnable, self.spc[self._ar, d], _NOPC)
            pc = int(tp.min())
            W = np.flatnonzero(tp == pc)
            self._step(pc, W)

    def _step(self, pc: int, W: np.ndarray) -> None:
        rec = self.rec
        d = self.depth[W] - 1
        tbits = self.smask[W, d] & self.alive[W]
        if pc >= self.exit_pc:
            # a reconvergence point past the end: the lanes are done
            self.alive[W] &= ~tbits
            self._settle(W)
            return
        x = self._exec(pc, W, tbits)
        coll = self.code.collectives[pc]
        parked = None
        if coll is not None:
            mm, missing = self._members_missing(x, coll)
            if missing is not None:
                # some warps wait for lanes on another path: park those, run the rest now
                parked = (W[missing], mm[missing])
                W, d = W[~missing], d[~missing]
                x = self._exec(pc, W, tbits[~missing]) if W.size else None
        if x is not None:
            try:
                self.code.handlers[pc](x)
            except Unsupported as e:
                # a form found unsupported only when it runs: name it and its line all the same
                _unsupported(self.instrs[pc], str(e))(x)
            if coll is not None:
                self.warp_sync[W] += 1
            rec.steps += 1
            rec.warp_instructions += W.size
            if not x.advanced:
                self.spc[W, d] = pc + 1
                self._settle(W)
        if parked is not None:
            self._park(*parked)

    def _exec(self, pc: int, W: np.ndarray, tbits: np.ndarray) -> Exec:
        """The Exec for warps W at pc, whose current stack entries have lanes `tbits`."""
        n = W.size
        x = Exec()
        x.m = self
        x.W = W
        x.n = n * WARP
        if W[-1] - W[0] + 1 == n:
            x.idx = slice(int(W[0]) * WARP, (int(W[-1]) + 1) * WARP)
        else:
            x.idx = (W[:, None] * WARP + _SH.astype(np.int64)).ravel()
        x.tbits = tbits
        if (tbits == FULL).all():
            active = np.ones(x.n, dtype=bool)
        else:
            active = unpack(tbits).ravel()
        x.active = active
        ins = self.instrs[pc]
        if ins.guard is not None:
            g = self.regs[ins.guard[0]][x.idx]
            x.mask = active & (~g if ins.guard[1] else g)
        else:
            x.mask = active
        x.pc = pc
        x.line = ins.line
        x.instr = ins
        x.advanced = False
        return x

    # ------------------------------------------------------------------ stack operations
    def _settle(self, W: np.ndarray) -> None:
        """Pop entries that reached their reconvergence PC or have no live lanes left; a warp
        whose top entry is then a parked one goes on with its rendezvous."""
        self._pop(W)
        if self.n_parked:
            W = W[self.depth[W] > 0]
            top = self.spark[W, self.depth[W] - 1]
            for w in W[top]:
                self._resolve(int(w))

    def _pop(self, W: np.ndarray) -> None:
        while W.size:
            d = self.depth[W] - 1
            pop = (self.spc[W, d] == self.srpc[W, d]) | ((self.smask[W, d] & self.alive[W]) == 0)
            if not pop.any():
                return
            W = W[pop]
            if self.n_parked:
                # a parked entry whose lanes all exited leaves with them
                gone = self.spark[W, d[pop]]
                self.n_parked -= int(gone.sum())
                self.spark[W, d[pop]] = False
            self.depth[W] -= 1
            W = W[self.depth[W] > 0]

    def branch(self, x: Exec, target: int) -> None:
        """Branch the masked lanes of x to `target`; the rest fall through; diverge if needed."""
        W, pc = x.W, x.pc
        d = self.depth[W] - 1
        taken = x.tbits if x.instr.guard is None else pack(x.mask.reshape(-1, WARP))
        ab = x.tbits
        all_t = taken == ab
        none_t = taken == 0
        self.spc[W[all_t], d[all_t]] = target
        self.spc[W[none_t], d[none_t]] = pc + 1
        div = ~(all_t | none_t)
        if div.any():
            Wd, dd = W[div], d[div]
            tk, nt = taken[div], ab[div] & ~taken[div]
            if self._returns_at(target) or self._returns_at(pc + 1):
                # `if (...) return;`: the leaving lanes wait at the bottom of the stack and exit
                # when the warp has nothing else to do, so they stay live (not arrived) for any
                # barrier the others reach, and the others reconverge without them.
                leave_t = self._returns_at(target)
                gone = tk if leave_t else nt
                if int(self.depth[Wd].max()) + 2 >= self.D:
                    self._grow()
                self.smask[Wd, :] &= ~gone[:, None]
                for arr in (self.spc, self.smask, self.srpc, self.spark, self.smm):
                    arr[Wd, 1:] = arr[Wd, :-1]
                self.spark[Wd, 0] = False
                self.spc[Wd, 0] = target if leave_t else pc + 1
                self.smask[Wd, 0] = gone
                self.srpc[Wd, 0] = -1
                self.spc[Wd, dd + 1] = pc + 1 if leave_t else target
                self.depth[Wd] += 1
                x.advanced = True
                self._settle(W)
                return
            R = self.code.cfg.reconverge.get(pc, self.exit_pc)
            if int(self.depth[Wd].max()) + 2 >= self.D:
                self._grow()
            same = self.srpc[Wd, dd] == R
            # an entry already reconverging at R is replaced; otherwise it becomes the R entry
            self.spc[Wd[~same], dd[~same]] = R
            slot = np.where(same, dd, dd + 1)
            fall = pc + 1
            paths = sorted([(target, tk), (fall, nt)], key=lambda p: -p[0])  # lower PC on top
            for ppc, pm in paths:
                if ppc == R:
                    continue
                self.spc[Wd, slot] = ppc
                self.smask[Wd, slot] = pm
                self.srpc[Wd, slot] = R
                slot = slot + 1
            self.depth[Wd] = slot
        x.advanced = True
        self._settle(W)

    def _returns_at(self, pc: int) -> bool:
        """Whether the instruction at pc is an unconditional ret/exit (a `return` path)."""
        r = self._ret_cache.get(pc)
        if r is None:
            ins = self.instrs[pc] if pc < len(self.instrs) else None
            r = ins is not None and ins.opcode in ("ret", "exit") and ins.guard is None
            self._ret_cache[pc] = r
        return r

    def _grow(self) -> None:
        extra = self.D
        self.spc = np.pad(self.spc, ((0, 0), (0, extra)))
        self.smask = np.pad(self.smask, ((0, 0), (0, extra)))
        self.srpc = np.pad(self.srpc, ((0, 0), (0, extra)), constant_values=-1)
        self.spark = np.pad(self.spark, ((0, 0), (0, extra)))
        self.smm = np.pad(self.smm, ((0, 0), (0, extra)))
        self.D += extra

    def exit_lanes(self, x: Exec) -> None:
        """`exit`/`ret` from the kernel: the masked lanes are done."""
        W = x.W
        gone = pack(x.mask.reshape(-1, WARP))
        self.alive[W] &= ~gone
        d = self.depth[W] - 1
        self.spc[W, d] = x.pc + 1
        x.advanced = True
        self._settle(W)
        if self.waiting.any():
            self._try_release(np.unique(self.warp_block[W]))

    # ------------------------------------------------------------------ barriers
    def arrive(self, x: Exec, pred: np.ndarray | None = None, barrier: int = 0, count: int = 0) -> None:
        """The warps of x arrive at a CTA barrier (bar.sync / bar.red); `count` threads (a multiple of
        32) for a named barrier `bar.sync barrier, count`, 0 for the whole block."""
        W = x.W
        if count and count >= self.tpb:
            count = 0  # a count covering the block is the block barrier
        self.wait_bar[W] = barrier
        self.wait_count[W] = count
        arriving = pack(x.mask.reshape(-1, WARP))
        # Lanes that took a `return` only wait to exit: PTX's bar.sync waits for the non-exited
        # threads, and `exit` releases a barrier that only exiting threads hold up, so an early
        # `if (i >= n) return;` before __syncthreads() is well defined (compute-sanitizer's
        # synccheck agrees). Only lanes that will still run count as missing.
        partial = arriving != self.alive[W]
        for i in np.flatnonzero(partial):
            w = int(W[i])
            partial[i] = (int(self.alive[w]) & ~self._leaving(w) & ~int(arriving[i])) != 0
        if partial.any():
            for w in W[partial][:4]:
                blk = self.block_coords(int(self.warp_block[w]))
                key = ("barrier", "divergent-warp", x.line, blk)
                self.rec.finding("barrier", key, dict(
                    kind="divergent-warp", line=x.line, block=blk,
                    detail=(f"__syncthreads() reached by {bin(int(arriving[W == w][0])).count('1')} of "
                            f"the {bin(int(self.alive[w])).count('1')} live threads of warp "
                            f"{int(self.warp_in_block[w])}; the others took another path")))
        if pred is not None:
            dst = self.bar_pred
            if isinstance(x.idx, slice):
                np.copyto(dst[x.idx], pred & x.mask)
            else:
                dst[x.idx] = pred & x.mask
        self.waiting[W] = True
        self.wait_pc[W] = x.pc
        x.advanced = True
        self._try_release(np.unique(self.warp_block[W]))

    def block_coords(self, local_block: int) -> tuple[int, int, int]:
        gb = int(self.block_ids[local_block])
        gx, gy, _ = self.grid
        return (gb % gx, (gb // gx) % gy, gb // (gx * gy))

    def _release_named(self) -> None:
        """Release the warps at a named barrier (bar.sync id, count) once `count` threads, counted by
        whole warps as the hardware does, have arrived at that id in their block."""
        at = np.flatnonzero(self.waiting & (self.wait_count > 0) & (self.depth > 0))
        if at.size == 0:
            return
        key = self.warp_block[at] * 16 + self.wait_bar[at]
        for k in np.unique(key):
            ws = at[key == k]
            if ws.size * WARP >= int(self.wait_count[ws[0]]):
                self.waiting[ws] = False
                d = self.depth[ws] - 1
                self.spc[ws, d] = self.wait_pc[ws] + 1
                self._settle(ws)
                # the shadows order the whole block here: lenient for warps outside the barrier
                ids = self.block_ids[self.warp_block[ws[:1]]]
                if self.shadow is not None:
                    self.shadow.barrier(ids[ids < self.shadow_blocks])
                if self.gshadow is not None:
                    self.gshadow.barrier(ids)

    def _try_release(self, blocks: np.ndarray) -> None:
        if (self.wait_count > 0).any():
            self._release_named()
        live = self.depth > 0
        nb = self.nb
        n_live = np.bincount(self.warp_block[live], minlength=nb)
        n_wait = np.bincount(self.warp_block[live & self.waiting & (self.wait_count == 0)], minlength=nb)
        rel = (n_live == n_wait) & (n_wait > 0)
        if not rel.any():
            return
        Wr = np.flatnonzero(self.waiting & live & rel[self.warp_block] & (self.wait_count == 0))
        pcs = self.wait_pc[Wr]
        blk = self.warp_block[Wr]
        lo = np.full(nb, _NOPC, dtype=np.int64)
        hi = np.full(nb, -1, dtype=np.int64)
        np.minimum.at(lo, blk, pcs)
        np.maximum.at(hi, blk, pcs)
        for b in np.flatnonzero(rel & (lo != hi))[:MAX_FINDINGS]:
            bw = Wr[blk == b]
            lines = sorted({self.instrs[int(p)].line for p in self.wait_pc[bw]})
            coords = self.block_coords(int(b))
            first = self.instrs[int(lo[b])].line
            self.rec.finding("barrier", ("barrier", "divergent-block", first, coords), dict(
                kind="divergent-block", line=first, block=coords,
                detail=("warps of the block wait at different __syncthreads() (lines "
                        + ", ".join(str(v) for v in lines) + ")")))
        # bar.red: reduce the arrival predicates over the block and write each waiting lane
        for p in np.unique(pcs):
            ins = self.instrs[int(p)]
            if ins.opcode in ("bar", "barrier") and "red" in ins.mods:
                self._bar_red(ins, Wr[pcs == p])
        self.waiting[Wr] = False
        d = self.depth[Wr] - 1
        self.spc[Wr, d] = self.wait_pc[Wr] + 1
        self._settle(Wr)
        if self.shadow is not None:
            ids = self.block_ids[np.flatnonzero(rel)]
            self.shadow.barrier(ids[ids < self.shadow_blocks])
        if self.gshadow is not None:
            self.gshadow.barrier(self.block_ids[np.flatnonzero(rel)])

    def _bar_red(self, ins: Instr, W: np.ndarray) -> None:
        from .ptx import Reg

        op = next(m for m in ins.mods if m in ("popc", "and", "or"))
        lanes = (W[:, None] * WARP + _SH.astype(np.int64)).ravel()
        d = self.depth[W] - 1
        act = unpack(self.smask[W, d] & self.alive[W]).ravel()
        p = self.bar_pred[lanes] & act
        blk = self.warp_block[W].repeat(WARP)
        cnt = np.bincount(blk, weights=p, minlength=self.nb).astype(np.int64)
        tot = np.bincount(blk, weights=act, minlength=self.nb).astype(np.int64)
        if op == "popc":
            val = cnt[blk].astype(np.uint32)
        elif op == "and":
            val = cnt[blk] == tot[blk]
        else:
            val = cnt[blk] > 0
        dst = ins.operands[0]
        if isinstance(dst, Reg):
            reg = self.regs[dst.name]
            reg[lanes[act]] = val[act].astype(reg.dtype)

    def _deadlock(self) -> None:
        live = self.depth > 0
        Ww = np.flatnonzero(live & self.waiting)
        b = int(self.warp_block[Ww[0]])
        line = self.instrs[int(self.wait_pc[Ww[0]])].line
        coords = self.block_coords(b)
        self.rec.finding("barrier", ("barrier", "deadlock", line, coords), dict(
            kind="deadlock", line=line, block=coords,
            detail="threads wait at a barrier that the rest of the block can never reach"))
        raise Stop("deadlock", f"deadlock at the barrier on line {line} in block {coords}")
