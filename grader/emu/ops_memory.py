"""Memory instructions: ld/ldu/st on param/global/const/shared/local/generic, atom and red.

Every access is bounds- and alignment-checked per lane. A faulting lane is recorded (once per
space, kind and source line) and suppressed: a bad store writes nothing, a bad load returns an
all-ones bit pattern (NaN for floats). Global accesses are charged to the sector/request counters,
shared ones to the wavefront counters and the hazard shadow.
"""

from __future__ import annotations

import numpy as np

from . import memory, traffic
from .memory import LOCAL_WINDOW, SHARED_WINDOW, WINDOW_SIZE
from .operands import DTYPES, UINT, Unsupported, reader, type_mods, writer
from .ptx import Addr, Group, Instr, Not, Pair, Reg, Sink, Sym, Vec

WARP = 32
_SPACES = ("param", "global", "const", "shared", "local")
_ATOM_OPS = ("add", "min", "max", "inc", "dec", "exch", "cas", "and", "or", "xor")

K_SECT_LD = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
K_SECT_ST = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
K_REQ_LD = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
K_REQ_ST = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
K_SH_LD = "smsp__sass_inst_executed_op_shared_ld.sum"
K_SH_ST = "smsp__sass_inst_executed_op_shared_st.sum"
K_WF_LD = "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"
K_WF_ST = "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum"
K_BC_LD = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
K_BC_ST = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"
# Global atomics: `atom` (the old value comes back) is ncu's op_atom, `red` (nothing comes back) its
# op_red. PTX level: ptxas may turn an `atom` whose result is unused into a RED.
K_SECT_ATOM = "l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum"
K_SECT_RED = "l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum"
K_REQ_ATOM = "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum"
K_REQ_RED = "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum"
# Shared atomics (atom and red alike): warp instructions and wavefronts.
K_SH_ATOM = "smsp__inst_executed_op_shared_atom.sum"
K_WF_ATOM = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum"
# cp.async's global side (ops_async.py), as ncu counts LDGSTS
K_SECT_LDGSTS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum"
K_REQ_LDGSTS = "l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum"
COUNTER_KEYS = (K_SECT_LD, K_SECT_ST, K_REQ_LD, K_REQ_ST, K_SH_LD, K_SH_ST, K_WF_LD, K_WF_ST,
                K_BC_LD, K_BC_ST, K_SECT_ATOM, K_SECT_RED, K_REQ_ATOM, K_REQ_RED, K_SH_ATOM, K_WF_ATOM,
                K_SECT_LDGSTS, K_REQ_LDGSTS)


def _address_reader(op: Addr, ctx, bits: int = 64):
    """Closure x -> address array (or scalar) of a memory operand, in its space.

    Shared and local addresses are 32-bit window offsets (PTX truncates wider registers), so they
    are read as uint32 and wrap there.
    """
    if bits == 32:
        off32 = np.uint32(op.offset & 0xFFFFFFFF)
        if isinstance(op.base, Reg):
            r = reader(op.base, np.uint32)
            return lambda x: np.asarray(r(x), dtype=np.uint32) + off32
        a = _address_reader(op, ctx, 64)
        return lambda x: np.asarray(a(x), dtype=np.uint64).astype(np.uint32)
    off = np.uint64(op.offset & 0xFFFFFFFFFFFFFFFF)
    if isinstance(op.base, Reg):
        r = reader(op.base, np.uint64)
        return lambda x: np.asarray(r(x), dtype=np.uint64) + off
    if isinstance(op.base, Sym):
        if op.base.name not in ctx.symbols:
            raise Unsupported(f"address of {op.base.name}")
        a = np.uint64((ctx.symbols[op.base.name] + op.base.offset + op.offset) & 0xFFFFFFFFFFFFFFFF)
        return lambda x: a
    a = np.uint64(op.offset & 0xFFFFFFFFFFFFFFFF)
    return lambda x: a


def decode(ins: Instr, ctx, pc: int):
    """Handler for a memory instruction, or None."""
    op = ins.opcode
    if op not in ("ld", "ldu", "st", "atom", "red"):
        return None
    space = next((m for m in ins.mods if m in _SPACES), "generic")
    types = type_mods(ins)
    if not types:
        raise Unsupported(f"opcode {ins.full}")
    t = types[-1]
    if t in ("f16", "bf16", "f16x2", "bf16x2") and op in ("atom", "red") and "add" not in ins.mods:
        raise Unsupported(f"opcode {ins.full} (half precision)")
    if op in ("ld", "ldu", "st"):
        return _ldst(ins, ctx, space, t, op != "st")
    return _atom(ins, ctx, space, t, op == "atom")


# ---------------------------------------------------------------------------- ld / st

def _ldst(ins: Instr, ctx, space: str, t: str, is_load: bool):
    nvec = 1
    for m in ins.mods:
        if m in ("v2", "v4", "v8"):
            nvec = int(m[1])
    dt = np.dtype(DTYPES[t])
    esize = dt.itemsize
    o = ins.operands
    addr_op, val_op = (o[1], o[0]) if is_load else (o[0], o[1])
    items = val_op.items if isinstance(val_op, Vec) else (val_op,)
    if len(items) != nvec:
        raise Unsupported(f"operand shape of {ins.full}")
    if space == "param":
        return _param(ins, ctx, addr_op, items, dt, is_load)
    addr_of = _address_reader(addr_op, ctx, 32 if space in ("shared", "local") else 64)
    ut = UINT[esize]
    line = ins.line
    if is_load:
        writers = [None if isinstance(it, Sink) else writer(it, dt) for it in items]

        def h(x):
            vals = access(x, space, addr_of(x), esize, nvec, False, None, line)
            for w, v in zip(writers, vals):
                if w is not None:
                    w(x, v.view(dt))
        return h
    readers = [reader(it, dt) for it in items]

    def h(x):
        vals = [np.broadcast_to(np.asarray(r(x), dtype=dt), (x.n,)).view(ut) for r in readers]
        access(x, space, addr_of(x), esize, nvec, True, vals, line)
    return h


def _param(ins: Instr, ctx, addr_op: Addr, items, dt, is_load: bool):
    if not is_load:
        return lambda x: None  # call-frame parameters (printf/assert arguments): nothing to keep
    name = addr_op.base.name if isinstance(addr_op.base, Sym) else None
    p = ctx.params.get(name)
    writers = [None if isinstance(it, Sink) else writer(it, dt) for it in items]
    if p is None:
        # a call's return value (vprintf returns 0)
        zero = dt.type(0)
        return lambda x: [w(x, zero) for w in writers if w is not None] and None
    base = p.offset + addr_op.base.offset + addr_op.offset

    def h(x):
        raw = x.m.params
        for k, w in enumerate(writers):
            if w is None:
                continue
            start = base + k * dt.itemsize
            chunk = raw[start:start + dt.itemsize].ljust(dt.itemsize, b"\0")
            w(x, np.frombuffer(chunk, dtype=dt)[0])
    return h


def _lane_window(addr: np.ndarray, base: int) -> np.ndarray:
    return (addr >= np.uint64(base)) & (addr < np.uint64(base + WINDOW_SIZE))


def access(x, space: str, addr, esize: int, nvec: int, write: bool, vals, line: int):
    """Load (returns a list of nvec uint arrays) or store `vals` for the masked lanes of x."""
    mask = x.mask
    if space in ("shared", "local"):
        addr = np.broadcast_to(np.asarray(addr, dtype=np.uint32), (x.n,))
        return _window_access(x, space, addr, mask, esize, nvec, write, vals, line)
    addr = np.broadcast_to(np.asarray(addr, dtype=np.uint64), (x.n,))
    if space == "generic":
        sh = _lane_window(addr, SHARED_WINDOW)
        lo = _lane_window(addr, LOCAL_WINDOW)
        gl = ~(sh | lo)
        out = None
        for sp, sel, base in (("global", gl, 0), ("shared", sh, SHARED_WINDOW), ("local", lo, LOCAL_WINDOW)):
            m = mask & sel
            if not m.any() and not (sp == "global" and not (sh.any() or lo.any())):
                continue
            res = _space_access(x, sp, addr - np.uint64(base), m, esize, nvec, write, vals, line)
            if not write:
                out = res if out is None else [np.where(m, r, o) for r, o in zip(res, out)]
        return out
    if space == "const":
        space = "global"
    return _space_access(x, space, addr, mask, esize, nvec, write, vals, line)


def _space_access(x, space, addr, mask, esize, nvec, write, vals, line):
    if space != "global":
        return _window_access(x, space, addr, mask, esize, nvec, write, vals, line)
    m = x.m
    rec = m.rec
    total = esize * nvec
    ut = UINT[esize]
    code = m.heap.check(addr, total)
    bad = mask & (code != memory.OK)
    ok = mask & (code == memory.OK)
    if bad.any():
        _record_faults(x, space, addr, code, bad, total, write, line)
    # Out-of-bounds lanes still count: on the hardware their request goes out like any other.
    if m.gshadow is not None and ok.any():
        _shadow_global(x, addr, ok, total, write, line, False)
    sect = traffic.global_sectors(addr.reshape(-1, WARP), total, mask.reshape(-1, WARP))
    rec.add(line, K_SECT_ST if write else K_SECT_LD, sect.sum())
    rec.add(line, K_REQ_ST if write else K_REQ_LD, np.count_nonzero(mask.reshape(-1, WARP).any(axis=1)))
    bidx = m.heap.byte_index(addr)
    if m.heap.outputs is not None:
        m.heap.outputs.access(bidx[ok], total, write, line)
    return _move(m.heap.data, bidx, ok, x.n, esize, nvec, ut, write, vals)


def _shadow_global(x, addr, ok, nbytes, write, line, atomic, block_scope=False) -> None:
    """Hand the in-bounds lanes of a global access to the global-race shadow (global_hazards.py);
    `block_scope`: an atomic of scope `.cta`, atomic only among its own block's threads."""
    m = x.m
    if ok.all():
        block, tid = m.lane_block_id[x.idx], m.lane_tid[x.idx]
    else:
        lanes = x.lanes()[ok]
        block, tid, addr = m.lane_block_id[lanes], m.lane_tid[lanes], addr[ok]
    m.gshadow.access(addr, nbytes, block, tid, write, line, atomic, block_scope)


def _move(data, bidx, ok, n, esize, nvec, ut, write, vals):
    """Gather (load) or scatter (store) the ok lanes; a lane that is not ok reads all ones."""
    full = ok.all()
    sel = bidx if full else bidx[ok]
    if write:
        for k in range(nvec):
            memory.scatter(data, sel + k * esize if k else sel, esize, vals[k] if full else vals[k][ok])
        return None
    out = []
    for k in range(nvec):
        g = memory.gather(data, sel + k * esize if k else sel, esize)
        if full:
            out.append(g)
        else:
            v = np.full(n, np.iinfo(ut).max, dtype=ut)
            v[ok] = g
            out.append(v)
    return out


def _wavefronts(off2: np.ndarray, total: int, ok2: np.ndarray) -> tuple[int, int]:
    """Summed (wavefronts, ideal) over the batch's warps.

    Bank counts do not change when all of a warp's offsets move by a multiple of 4 bytes (banks
    rotate), so when every warp shows the same pattern up to such a shift (the usual case in a
    grid-wide batch) one warp is modelled and the result multiplied.
    """
    w = off2.shape[0]
    if w > 1 and ok2.all():
        # Row i is row 0 moved by a multiple of 4 bytes iff its offsets relative to its lane 0 are
        # row 0's and its lane 0 is a multiple of 4 away (in-bounds offsets: no wrap-around).
        base = off2[:, :1]
        if not ((base - base[0]) & np.uint32(3)).any() and ((off2 - base) == (off2[0] - base[0])).all():
            wf, ideal = _one_warp_wavefronts(off2[0], total)
            return wf * w, ideal * w
    wf, ideal = traffic.shared_wavefronts(np.where(ok2, off2, 0).astype(np.uint64), total, ok2)
    return int(wf.sum()), int(ideal.sum())


_ONE_WARP: dict[tuple[bytes, int], tuple[int, int]] = {}  # a pattern's (wavefronts, ideal), by its shape
_ONE_WARP_MAX = 4096


def _one_warp_wavefronts(off: np.ndarray, total: int) -> tuple[int, int]:
    """(wavefronts, ideal) of one warp whose 32 lanes are all active, at uint32 offsets `off`.

    The count depends only on the offsets relative to the 4-byte word of lane 0 (moving every
    offset by a multiple of 4 bytes rotates the banks; see _wavefronts), so the pattern a loop
    repeats at shifting addresses is counted once and looked up after."""
    key = ((off.astype(np.int64) - int(off[0] & ~np.uint32(3))).tobytes(), total)
    found = _ONE_WARP.get(key)
    if found is None:
        wf, ideal = traffic.shared_wavefronts(off[None, :].astype(np.uint64), total, np.ones((1, WARP), dtype=bool))
        found = (int(wf[0]), int(ideal[0]))
        if len(_ONE_WARP) >= _ONE_WARP_MAX:
            _ONE_WARP.clear()
        _ONE_WARP[key] = found
    return found


def _window_access(x, space, addr, mask, esize, nvec, write, vals, line):
    """Shared (per block) or local (per thread) access; the address is truncated to 32 bits."""
    m = x.m
    rec = m.rec
    total = esize * nvec
    ut = UINT[esize]
    off = addr if addr.dtype == np.uint32 else addr.astype(np.uint32)
    sp = m.shared if space == "shared" else m.local
    lim = sp.nbytes - total
    bad_lane = (off > np.uint32(lim)) if lim >= 0 else np.ones(off.shape, dtype=bool)
    if total & (total - 1) == 0:
        bad_lane = bad_lane | ((off & np.uint32(total - 1)) != 0)
    else:
        bad_lane = bad_lane | ((off % np.uint32(esize)) != 0)
    bad = mask & bad_lane
    if bad.any():
        code = np.where(off.astype(np.int64) + total > sp.nbytes, memory.OUT_OF_BOUNDS, memory.MISALIGNED)
        _record_faults(x, space, off.astype(np.uint64), code.astype(np.int8), bad, total, write, line)
        ok = mask & ~bad_lane
    else:
        ok = mask
    if space == "shared":
        bidx = m.lane_shared_base[x.idx] + off
        ok2 = ok.reshape(-1, WARP)
        off2 = off.reshape(-1, WARP)
        wf, ideal = _wavefronts(off2, total, ok2)
        rec.add(line, K_SH_ST if write else K_SH_LD, x.W.size)
        rec.add(line, K_WF_ST if write else K_WF_LD, wf)
        rec.add(line, K_BC_ST if write else K_BC_LD, wf - ideal)
        if m.shadow is not None and ok.any():
            gb = m.block_ids[m.warp_block[x.W]]
            keep = gb < m.shadow_blocks
            vol = "volatile" in x.instr.mods
            sync = m.warp_sync[x.W]
            if keep.all():
                m.shadow.access(gb, m.warp_in_block[x.W], off2, total, ok2, write, line, sync, vol)
            elif keep.any():
                m.shadow.access(gb[keep], m.warp_in_block[x.W][keep], off2[keep], total, ok2[keep],
                                write, line, sync[keep], vol)
    else:
        bidx = m.lane_local_base[x.idx] + off
    return _move(sp.data, bidx, ok, x.n, esize, nvec, ut, write, vals)


def _record_faults(x, space, addr, code, bad, total, write, line):
    m = x.m
    for kind_code in (memory.OUT_OF_BOUNDS, memory.MISALIGNED):
        sel = np.flatnonzero(bad & (code == kind_code))
        if sel.size == 0:
            continue
        kind = "misaligned" if kind_code == memory.MISALIGNED else (
            "out-of-bounds-write" if write else "out-of-bounds-read")
        key = ("memory", space, kind, line)
        if key in m.rec.seen:
            continue
        i = int(sel[0])
        lane = int(x.lanes()[i])
        a = int(addr[i])
        blk = m.block_coords(int(m.lane_block[lane]))
        thread = (int(m.special("%tid.x")[lane]), int(m.special("%tid.y")[lane]), int(m.special("%tid.z")[lane]))
        if space == "global":
            detail = m.heap.describe(a, total)
        else:
            size = m.shared.nbytes if space == "shared" else m.local.nbytes
            off = a & 0xFFFFFFFF
            what = "shared memory of the block" if space == "shared" else "local memory of the thread"
            if kind == "misaligned":
                detail = f"offset {off} is not aligned to {total} bytes"
            elif off >= size:
                detail = f"{off + total - size} bytes past the end of the {size}-byte {what}"
            else:
                detail = f"offset {off} (+{total}) is outside the {size}-byte {what}"
        if sel.size > 1:
            detail += f" ({sel.size} threads in this batch)"
        m.rec.finding("memory", key, dict(space=space, kind=kind, line=line, block=blk, thread=thread,
                                          address=a, detail=detail))


# ---------------------------------------------------------------------------- atomics

def _atom(ins: Instr, ctx, space: str, t: str, returns: bool):
    aop = next((mo for mo in ins.mods if mo in _ATOM_OPS), None)
    if aop is None:
        raise Unsupported(f"opcode {ins.full}")
    if t in ("f16", "bf16", "f16x2", "bf16x2"):
        aop = "hadd:" + t  # a half-precision add on raw bits (ops_half.add_bits)
    dt = np.dtype(DTYPES[t])
    o = ins.operands
    if returns:
        wr, addr_op, srcs = writer(o[0], dt), o[1], o[2:]
    else:
        wr, addr_op, srcs = None, o[0], o[1:]
    addr_of = _address_reader(addr_op, ctx)
    rb = reader(srcs[0], dt)
    rc = reader(srcs[1], dt) if aop == "cas" else None
    # ptxas emits a RED for an `atom` whose old value nobody reads (NVRTC writes `atom` for every
    # atomicAdd); count it as ncu will see it.
    counts_as_atom = returns and not _result_unused(o[0], ctx)
    esize = dt.itemsize
    ut = UINT[esize]
    line = ins.line
    # atomicAdd_block and friends (`.cta`) are atomic only among the threads of one block: two blocks
    # using them on one global address race (global_hazards.py). Shared memory is per block anyway.
    # `.cluster` is left as wide as the device: which blocks share a cluster depends on how the
    # kernel is launched, and a false race would cost a correct kernel its points.
    block_scope = "cta" in ins.mods
    if space == "const" or space == "param" or space == "local":
        raise Unsupported(f"opcode {ins.full}")

    def h(x):
        addr = np.broadcast_to(np.asarray(addr_of(x), dtype=np.uint64), (x.n,))
        b = np.broadcast_to(np.asarray(rb(x), dtype=dt), (x.n,))
        c = np.broadcast_to(np.asarray(rc(x), dtype=dt), (x.n,)) if rc is not None else None
        old = np.full(x.n, np.iinfo(ut).max, dtype=ut).view(dt)
        sp = space
        a = addr
        if sp == "generic":
            sh = _lane_window(addr, SHARED_WINDOW)
            if (sh & x.mask).any() and not (~sh & x.mask).any():
                sp, a = "shared", addr - np.uint64(SHARED_WINDOW)
            elif (sh & x.mask).any():
                raise Unsupported("a generic atomic mixing shared and global addresses")
            else:
                sp = "global"
        data, bidx, ok = _atom_target(x, sp, a, esize, line)
        _count_atomic(x, sp, a, esize, counts_as_atom, ok, line)
        if sp == "global" and x.m.gshadow is not None and ok.any():
            _shadow_global(x, a, ok, esize, True, line, True, block_scope)
        lanes_ok = np.flatnonzero(ok)
        if lanes_ok.size:
            _apply_atomic(data, bidx[lanes_ok], esize, dt, aop, b[lanes_ok],
                          None if c is None else c[lanes_ok], old, lanes_ok, ins)
        if wr is not None:
            wr(x, old)
    return h


def _regs_in(operand):
    """Register names an operand mentions (an address's base, a vector's items, a negation's inner)."""
    if isinstance(operand, Reg):
        yield operand.name
    elif isinstance(operand, Addr):
        if isinstance(operand.base, Reg):
            yield operand.base.name
    elif isinstance(operand, (Vec, Group)):
        for item in operand.items:
            yield from _regs_in(item)
    elif isinstance(operand, Pair):
        yield from _regs_in(operand.first)
        yield from _regs_in(operand.second)
    elif isinstance(operand, Not):
        yield from _regs_in(operand.inner)


def _result_unused(dest, ctx) -> bool:
    """Whether an atomic's destination register is never mentioned by another instruction of the
    kernel (a dead result), or is `_`."""
    if isinstance(dest, Sink):
        return True
    if not isinstance(dest, Reg):
        return False
    used = getattr(ctx, "_regs_mentioned", None)
    if used is None:
        used = {}
        for ins in ctx.kernel.instrs:
            for operand in ins.operands:
                for name in _regs_in(operand):
                    used[name] = used.get(name, 0) + 1
            if ins.guard is not None:
                used[ins.guard[0]] = used.get(ins.guard[0], 0) + 1
        ctx._regs_mentioned = used
    return used.get(dest.name, 0) <= 1


def _count_atomic(x, space, addr, esize, returns, ok, line):
    """Charge one batched atomic to the counters: sectors and requests for global memory (op_atom for
    `atom`, op_red for `red`), instructions and wavefronts for shared memory.

    Global: per sector the warp touches, the most lanes on one address in it, or for a 4-byte atomic
    whose lanes of different lines share a staging slot, the rule fitted to ncu (traffic.atomic_sectors).
    Shared: wavefronts by the store model (distinct words per bank; lanes on one word count once),
    which ncu agrees with for integer atomics (bench/atomic_probe.py).
    """
    m = x.m
    mask2 = x.mask.reshape(-1, WARP)
    if space == "global":
        sect = traffic.atomic_sectors(addr.reshape(-1, WARP), mask2, esize)
        m.rec.add(line, K_SECT_ATOM if returns else K_SECT_RED, sect.sum())
        m.rec.add(line, K_REQ_ATOM if returns else K_REQ_RED, np.count_nonzero(mask2.any(axis=1)))
        return
    ok2 = ok.reshape(-1, WARP)
    off2 = (addr & np.uint64(0xFFFFFFFF)).astype(np.uint32).reshape(-1, WARP)
    wf, _ = _wavefronts(off2, esize, ok2)
    m.rec.add(line, K_SH_ATOM, x.W.size)  # as for shared loads and stores: every warp at the instruction
    m.rec.add(line, K_WF_ATOM, wf)
    _shadow_atomic(x, off2, esize, ok2, line)


def _shadow_atomic(x, off2, esize, ok2, line):
    """A shared atomic in the hazard shadow: a write that races with plain accesses of other warps
    (and other lanes, by the intra-warp rule) but never with other atomics."""
    m = x.m
    if m.shadow is None or not ok2.any():
        return
    gb = m.block_ids[m.warp_block[x.W]]
    keep = gb < m.shadow_blocks
    if keep.any():
        m.shadow.access(gb[keep], m.warp_in_block[x.W][keep], off2[keep], esize, ok2[keep], True, line,
                        m.warp_sync[x.W][keep], False, atomic=True)


def _atom_target(x, space, addr, esize, line):
    m = x.m
    mask = x.mask
    if space == "global":
        code = m.heap.check(addr, esize)
        bidx = m.heap.byte_index(addr)
        data = m.heap.data
    else:
        off = (addr & np.uint64(0xFFFFFFFF)).astype(np.int64)
        code = m.shared.check(off, esize)
        bidx = m.shared.byte_index(m.lane_block[x.lanes()], np.where(code == memory.OK, off, 0))
        data = m.shared.data
    bad = mask & (code != memory.OK)
    if bad.any():
        _record_faults(x, space, addr, code, bad, esize, True, line)
    ok = mask & (code == memory.OK)
    if space == "global" and m.heap.outputs is not None:  # an atomic reads, then writes
        m.heap.outputs.access(bidx[ok], esize, False, line)
        m.heap.outputs.access(bidx[ok], esize, True, line)
    return data, bidx, ok


def _combine(aop, cur, b, c, dt):
    if aop.startswith("hadd:"):
        from .ops_half import add_bits

        return add_bits(cur, b, aop[len("hadd:"):]).astype(dt)
    if aop == "add":
        if dt.kind == "f":
            return (cur + b).astype(dt)
        return np.add(cur, b, dtype=dt)
    if aop == "min":
        return np.fmin(cur, b) if dt.kind == "f" else np.minimum(cur, b)
    if aop == "max":
        return np.fmax(cur, b) if dt.kind == "f" else np.maximum(cur, b)
    if aop == "exch":
        return b
    if aop == "cas":
        return np.where(cur == b, c, cur).astype(dt)
    if aop == "inc":
        return np.where(cur >= b, dt.type(0), cur + dt.type(1)).astype(dt)
    if aop == "dec":
        return np.where((cur == 0) | (cur > b), b, cur - dt.type(1)).astype(dt)
    fn = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[aop]
    return fn(cur, b)


def _apply_atomic(data, bidx, esize, dt, aop, b, c, old, lanes, ins):
    """Apply the atomic in lane order (deterministic; any serial order is legal)."""
    ut = UINT[esize]
    view = data.view(ut)
    word = bidx // esize
    order = np.argsort(word, kind="stable")
    ws = word[order]
    starts = np.flatnonzero(np.r_[True, ws[1:] != ws[:-1]])
    counts = np.diff(np.r_[starts, ws.size])
    if aop == "add" and dt.kind in "iu":
        # exclusive prefix sums per address: exact for integer addition in any order
        bv = b[order].astype(dt)
        cs = np.cumsum(bv, dtype=dt)
        seg_base = np.repeat(cs[starts] - bv[starts], counts)
        excl = (cs - bv - seg_base).astype(dt)
        cur = np.repeat(view[ws[starts]].view(dt), counts)
        old[lanes[order]] = np.add(cur, excl, dtype=dt)
        tot = np.add.reduceat(bv, starts, dtype=dt)
        view[ws[starts]] = np.add(view[ws[starts]].view(dt), tot, dtype=dt).view(ut)
        return
    acc_fn = {"add": np.add, "min": np.fmin if dt.kind == "f" else np.minimum,
              "max": np.fmax if dt.kind == "f" else np.maximum}.get(aop)
    if acc_fn is not None and starts.size <= 256 and counts.max() > 8:
        # few hot addresses: one sequential accumulate per address, in lane order
        bo = b[order].astype(dt)
        lo = lanes[order]
        for s0, n in zip(starts, counts):
            w = ws[s0]
            seq = np.concatenate([view[w:w + 1].view(dt), bo[s0:s0 + n]])
            acc = acc_fn.accumulate(seq, dtype=dt)
            old[lo[s0:s0 + n]] = acc[:-1]
            view[w] = acc[-1:].view(ut)[0]
        return
    rank = np.arange(ws.size) - np.repeat(starts, counts)
    rank_of = np.empty_like(rank)
    rank_of[order] = rank
    by_rank = np.argsort(rank_of, kind="stable")
    bounds = np.searchsorted(rank_of[by_rank], np.arange(int(counts.max()) + 1))
    for r in range(int(counts.max())):
        sel = by_rank[bounds[r]:bounds[r + 1]]
        cur = view[word[sel]].view(dt)
        new = _combine(aop, cur, b[sel], None if c is None else c[sel], dt)
        old[lanes[sel]] = cur
        view[word[sel]] = np.asarray(new, dtype=dt).view(ut)
