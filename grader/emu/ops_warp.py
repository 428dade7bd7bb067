"""Warp and block synchronisation: bar/barrier (sync, red), bar.warp.sync, shfl.sync, vote.sync,
activemask, redux.sync, match.sync.

Warp collectives operate on the [W, 32] view of the batch. A collective executes with the lanes that
are active at it; reading a source lane that is inactive returns whatever that lane's register holds
(PTX leaves it undefined). Lanes of `membermask` that sit on another path are not waited for (the
Volta rendezvous of collectives on divergent paths is not modelled).
"""

from __future__ import annotations

import numpy as np

from .machine import WARP, pack
from .operands import DTYPES, Unsupported, reader, type_mods, writer
from .ptx import Instr, Pair

_LANE = np.arange(WARP, dtype=np.int64)


def decode(ins: Instr, ctx, pc: int):
    """Handler for a synchronisation or warp-collective instruction, or None."""
    op = ins.opcode
    mods = ins.mods
    o = ins.operands
    if op in ("bar", "barrier"):
        if "warp" in mods:
            return lambda x: None  # __syncwarp: lanes of a warp already execute together here
        if "arrive" in mods:
            raise Unsupported(f"opcode {ins.full}")
        if "red" in mods:
            # bar.red.popc.u32 d, id, {!}p  /  bar.red.and.pred d, id, {!}p
            if len(o) > 3:
                raise Unsupported(f"{ins.full} with a thread count")
            rp = reader(o[2], np.bool_)
            return lambda x: x.m.arrive(x, np.broadcast_to(rp(x), (x.n,)))
        if len(o) > 1:
            raise Unsupported(f"{ins.full} with a thread count")
        # named barriers other than 0 behave like barrier 0 when the whole block uses them
        return lambda x: x.m.arrive(x)
    if op == "activemask":
        wr = writer(o[0], np.uint32)
        return lambda x: wr(x, np.repeat(pack(x.mask.reshape(-1, WARP)), WARP))
    if op == "shfl":
        return _shfl(ins)
    if op == "vote":
        return _vote(ins)
    if op == "redux":
        return _redux(ins)
    if op == "match":
        return _match(ins)
    return None


def _shfl(ins: Instr):
    mode = next(m for m in ins.mods if m in ("up", "down", "bfly", "idx"))
    o = ins.operands
    dst = o[0]
    wd, wp = (writer(dst.first, np.uint32), writer(dst.second, np.bool_)) if isinstance(dst, Pair) \
        else (writer(dst, np.uint32), None)
    ra, rb, rc = reader(o[1], np.uint32), reader(o[2], np.uint32), reader(o[3], np.uint32)

    def h(x):
        shape = (x.n // WARP, WARP)
        a = np.broadcast_to(np.asarray(ra(x), dtype=np.uint32), (x.n,)).reshape(shape)
        b = np.broadcast_to(np.asarray(rb(x), dtype=np.int64), (x.n,)).reshape(shape) & 0x1F
        c = np.broadcast_to(np.asarray(rc(x), dtype=np.int64), (x.n,)).reshape(shape)
        cval = c & 0x1F
        seg = (c >> 8) & 0x1F
        lane = _LANE[None, :]
        max_lane = (lane & seg) | (cval & ~seg)
        min_lane = lane & seg
        if mode == "up":
            j = lane - b
            pval = j >= max_lane
        elif mode == "down":
            j = lane + b
            pval = j <= max_lane
        elif mode == "bfly":
            j = lane ^ b
            pval = j <= max_lane
        else:
            j = min_lane | (b & ~seg)
            pval = j <= max_lane
        j = np.where(pval, j, lane)
        d = np.take_along_axis(a, np.clip(j, 0, WARP - 1), axis=1)
        wd(x, d.ravel())
        if wp is not None:
            wp(x, pval.ravel())
    return h


def _vote(ins: Instr):
    mode = next(m for m in ins.mods if m in ("all", "any", "uni", "ballot"))
    o = ins.operands
    ra = reader(o[1], np.bool_)
    if mode == "ballot":
        wr = writer(o[0], np.uint32)
    else:
        wr = writer(o[0], np.bool_)

    def h(x):
        m2 = x.mask.reshape(-1, WARP)
        a = np.broadcast_to(np.asarray(ra(x), dtype=bool), (x.n,)).reshape(-1, WARP) & m2
        if mode == "ballot":
            wr(x, np.repeat(pack(a), WARP))
            return
        cnt = a.sum(axis=1)
        tot = m2.sum(axis=1)
        r = {"all": cnt == tot, "any": cnt > 0, "uni": (cnt == 0) | (cnt == tot)}[mode]
        wr(x, np.repeat(r, WARP))
    return h


def _redux(ins: Instr):
    op = next(m for m in ins.mods if m in ("add", "min", "max", "and", "or", "xor"))
    t = type_mods(ins)[-1]
    if t in ("f32",):
        raise Unsupported(f"opcode {ins.full}")
    dt = np.dtype(DTYPES[t])
    o = ins.operands
    ra, wr = reader(o[1], dt), writer(o[0], dt)

    def h(x):
        m2 = x.mask.reshape(-1, WARP)
        a = np.broadcast_to(np.asarray(ra(x), dtype=dt), (x.n,)).reshape(-1, WARP)
        if op == "add":
            r = np.where(m2, a, dt.type(0)).sum(axis=1, dtype=dt)
        elif op == "min":
            r = np.where(m2, a, np.iinfo(dt).max).min(axis=1)
        elif op == "max":
            r = np.where(m2, a, np.iinfo(dt).min).max(axis=1)
        elif op == "and":
            r = np.bitwise_and.reduce(np.where(m2, a, dt.type(np.iinfo(dt).max)), axis=1)
        elif op == "or":
            r = np.bitwise_or.reduce(np.where(m2, a, dt.type(0)), axis=1)
        else:
            r = np.bitwise_xor.reduce(np.where(m2, a, dt.type(0)), axis=1)
        wr(x, np.repeat(np.asarray(r, dtype=dt), WARP))
    return h


def _match(ins: Instr):
    mode = next(m for m in ins.mods if m in ("any", "all"))
    t = type_mods(ins)[-1]
    dt = np.dtype(DTYPES[t])
    o = ins.operands
    dst = o[0]
    wd, wp = (writer(dst.first, np.uint32), writer(dst.second, np.bool_)) if isinstance(dst, Pair) \
        else (writer(dst, np.uint32), None)
    ra = reader(o[1], dt)

    def h(x):
        m2 = x.mask.reshape(-1, WARP)
        a = np.broadcast_to(np.asarray(ra(x), dtype=dt), (x.n,)).reshape(-1, WARP)
        same = (a[:, :, None] == a[:, None, :]) & m2[:, None, :]
        bits = pack(same.reshape(-1, WARP)).reshape(-1, WARP)
        if mode == "any":
            wd(x, bits.ravel())
            return
        allm = pack(m2)
        eq = (bits == allm[:, None]).all(axis=1)
        wd(x, np.repeat(np.where(eq, allm, 0).astype(np.uint32), WARP))
        if wp is not None:
            wp(x, np.repeat(eq, WARP))
    return h
