"""Ampere's asynchronous copies: cp.async (global to shared), commit_group, wait_group, wait_all.

`cp.async.{ca,cg}.shared.global [dst], [src], cp-size{, src-size}` starts a copy of cp-size bytes
(4, 8 or 16); with src-size (0 or cp-size here) the bytes past src-size are zero-filled, which is
how a predicated tile load is written. The copies a thread starts belong to its current group;
`cp.async.commit_group` closes that group; `cp.async.wait_group N` waits until at most N of the
thread's committed groups are still pending; `cp.async.wait_all` waits for everything.

The emulator reads the source when the copy starts (a fault is reported at the cp.async's line)
and writes shared memory when the thread waits for the copy's group: a thread that reads the tile
before its wait reads the old contents, as on the hardware, and the hazard shadow sees the write at
the wait (a barrier must still follow it before other warps read). The global side is counted as
Nsight Compute counts LDGSTS: `l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum` and
`l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum`; the shared side is not counted (ncu files it
under the ldgsts wavefronts, which no check reads). Copies still pending when a warp exits are
dropped, as the PTX ISA leaves them undefined.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import memory, traffic
from .operands import Unsupported, reader
from .ptx import Instr

WARP = 32
K_SECT_LDGSTS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum"
K_REQ_LDGSTS = "l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum"


@dataclass
class _Pending:
    """One batched cp.async: what to write into shared memory when the warps wait for it."""

    pc: int
    W: np.ndarray  # int64 [w] warps
    mask: np.ndarray  # bool [w * 32] lanes that copy
    dst: np.ndarray  # uint32 [w * 32] shared offsets
    words: list  # cp-size / 4 uint32 arrays [w * 32]
    size: int
    group: np.ndarray  # int64 [w]: the group each warp's copy belongs to
    done: np.ndarray  # bool [w]


def decode(ins: Instr, ctx, pc: int):
    """Handler for cp.async and its group instructions, or None."""
    if ins.opcode != "cp" or "async" not in ins.mods:
        return None
    mods = ins.mods
    if "commit_group" in mods:
        return lambda x: _commit(x)
    if "wait_group" in mods:
        n = reader(ins.operands[0], np.int64)
        return lambda x: _wait(x, int(np.asarray(n(x)).max()))
    if "wait_all" in mods:
        return lambda x: _wait(x, None)
    if "bulk" in mods or "mbarrier" in mods or "shared" not in mods or "global" not in mods:
        raise Unsupported(f"opcode {ins.full}")
    o = ins.operands
    size_op = o[2]
    from .ptx import Imm

    if not isinstance(size_op, Imm) or size_op.value not in (4, 8, 16):
        raise Unsupported(f"{ins.full} with a cp-size other than 4, 8 or 16")
    size = size_op.value
    from .ops_memory import _address_reader

    dst_of = _address_reader(o[0], ctx, 32)
    src_of = _address_reader(o[1], ctx, 64)
    src_size = reader(o[3], np.uint32) if len(o) > 3 and not _is_policy(o[3]) else None
    return lambda x: _start(x, pc, dst_of, src_of, size, src_size)


def _is_policy(op) -> bool:
    from .ptx import Reg

    # the optional cache-policy operand is a 64-bit register; src-size is 32-bit or an immediate
    return isinstance(op, Reg) and op.name.startswith("%rd")


def _state(m):
    st = getattr(m, "_cp_async", None)
    if st is None:
        st = m._cp_async = {"pending": [], "group": np.zeros(m.NW, dtype=np.int64)}
    return st


def _start(x, pc, dst_of, src_of, size, src_size) -> None:
    from .ops_memory import _record_faults, _shadow_global

    m = x.m
    mask = x.mask.copy()
    src = np.broadcast_to(np.asarray(src_of(x), dtype=np.uint64), (x.n,))
    dst = np.broadcast_to(np.asarray(dst_of(x), dtype=np.uint32), (x.n,)).copy()
    fill = mask.copy()  # lanes whose source is read (src-size == cp-size)
    if src_size is not None:
        ss = np.broadcast_to(np.asarray(src_size(x), dtype=np.uint32), (x.n,))
        if (mask & (ss != 0) & (ss != size)).any():
            raise Unsupported(f"cp.async with a src-size other than 0 or {size}")
        fill &= ss == size
    code = m.heap.check(src, size)
    bad = fill & (code != memory.OK)
    if bad.any():
        _record_faults(x, "global", src, code, bad, size, False, x.line)
    ok = fill & (code == memory.OK)
    words = []
    bidx = m.heap.byte_index(src)
    for k in range(size // 4):
        w = np.zeros(x.n, dtype=np.uint32)
        if ok.any():
            w[ok] = memory.gather(m.heap.data, bidx[ok] + 4 * k, 4)
        words.append(w)
    if m.gshadow is not None and ok.any():
        _shadow_global(x, src, ok, size, False, x.line, False)
    mask2 = fill.reshape(-1, WARP)
    sect = traffic.global_sectors(src.reshape(-1, WARP), size, mask2)
    m.rec.add(x.line, K_SECT_LDGSTS, sect.sum())
    m.rec.add(x.line, K_REQ_LDGSTS, np.count_nonzero(mask2.any(axis=1)))
    st = _state(m)
    st["pending"].append(_Pending(pc, x.W.copy(), mask, dst, words, size, st["group"][x.W].copy(),
                                  np.zeros(x.W.size, dtype=bool)))


def _commit(x) -> None:
    _state(x.m)["group"][x.W] += 1


def _wait(x, allowed: int | None) -> None:
    """Complete, for the warps of x, every copy of a group older than the `allowed` newest
    committed ones (all of them, uncommitted included, for wait_all)."""
    m = x.m
    st = _state(m)
    if not st["pending"]:
        return
    keep = []
    for p in st["pending"]:
        here = np.isin(p.W, x.W) & ~p.done
        if here.any():
            if allowed is not None:
                here &= p.group < st["group"][p.W] - allowed
            if here.any():
                _complete(m, p, here)
                p.done |= here
        if not p.done.all():
            keep.append(p)
    st["pending"] = keep


def _complete(m, p: _Pending, rows: np.ndarray) -> None:
    """Write the shared-memory side of the rows' copies, as a store of the cp.async's line (into the
    hazard shadow too), without counting it as a shared store."""
    W = p.W[rows]
    lane_rows = (np.flatnonzero(rows)[:, None] * WARP + np.arange(WARP)).ravel()
    mask = p.mask[lane_rows]
    dst = p.dst[lane_rows]
    lim = m.shared.nbytes - p.size
    ok = mask & (dst.astype(np.int64) <= lim) & ((dst % np.uint32(p.size)) == 0)
    if (mask & ~ok).any():
        from .machine import Stop

        raise Stop("unsupported", "a cp.async into shared memory out of bounds or misaligned")
    if not ok.any():
        return
    lanes = (W[:, None] * WARP + np.arange(WARP)).ravel()
    bidx = m.lane_shared_base[lanes] + dst.astype(np.int64)
    for k, word in enumerate(p.words):
        memory.scatter(m.shared.data, bidx[ok] + 4 * k, 4, word[lane_rows][ok])
    if m.shadow is not None:
        gb = m.block_ids[m.warp_block[W]]
        keep = gb < m.shadow_blocks
        if keep.any():
            line = m.instrs[p.pc].line
            m.shadow.access(gb[keep], m.warp_in_block[W][keep], dst.reshape(-1, WARP)[keep], p.size,
                            ok.reshape(-1, WARP)[keep], True, line, m.warp_sync[W][keep], False)
