"""Warp and block synchronisation: bar/barrier (sync, red), bar.warp.sync, shfl.sync, vote.sync,
activemask, redux.sync, match.sync.

The `.sync` collectives decode to `Collective` objects: operands are read, combined over the warp
and written back in three separate steps, so the machine can run one collective for lanes that
reached it on different paths (the Volta rendezvous, see `machine.Machine._park`). Called directly,
a Collective runs for the lanes that are active at it, which is the common, convergent case.
Reading a source lane that does not participate returns whatever that lane's register holds (PTX
leaves it undefined).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .machine import WARP, pack
from .operands import DTYPES, Unsupported, reader, type_mods, writer
from .ptx import Instr, Pair

_LANE = np.arange(WARP, dtype=np.int64)


class Collective:
    """A `.sync` warp collective split into read / compute / write.

    `read(x)` returns the per-lane source operands (arrays over x's lanes); `compute(vals, part)`
    combines them over the participating lanes `part` (bool [warps, 32]) and returns per-lane
    results; `write(x, results)` stores them for x's masked lanes. `membermask` reads the
    instruction's membermask operand and `signature` says which other collectives it may meet
    (same opcode and qualifiers).
    """

    def __init__(self, ins: Instr, mask_operand, read: Callable, compute: Callable, write: Callable,
                 per_member: bool = False) -> None:
        self.membermask = reader(mask_operand, np.uint32)
        self.signature = (ins.opcode, *ins.mods)
        self.read = read
        self.compute = compute
        self.write = write
        # votes, reductions and matches combine only the lanes of each lane's own membermask
        self.per_member = per_member

    def __call__(self, x) -> None:
        part = x.mask.reshape(-1, WARP)
        vals = self.read(x)
        if self.per_member:
            mm = np.broadcast_to(np.asarray(self.membermask(x), dtype=np.uint32), (x.n,)).reshape(-1, WARP)
            if not (mm == mm[:, :1]).all():
                self.write(x, self._by_group(vals, part, mm))
                return
        self.write(x, self.compute(vals, part))

    def _by_group(self, vals, part, mm):
        """Lanes of one warp that name different membermasks (the tiles of a `tiled_partition<16>`
        reducing at once): each lane's result covers the active lanes of its own membermask."""
        res = None
        bits = (np.uint32(1) << np.arange(WARP, dtype=np.uint32))
        for m in np.unique(mm[part]):
            mine = ((mm == m) & part).ravel()
            group = part & ((np.uint32(m) & bits) != 0)[None, :]
            r = self.compute(vals, group)
            if res is None:
                res = r
            else:
                res = tuple(None if new is None else np.where(mine, new, old) for new, old in zip(r, res))
        return res


def _lanes(r: Callable, dt) -> Callable:
    """A reader whose value is always an array over x's lanes (immediates are broadcast)."""
    dt = np.dtype(dt)
    return lambda x: np.broadcast_to(np.asarray(r(x), dtype=dt), (x.n,))


def decode(ins: Instr, ctx, pc: int):
    """Handler for a synchronisation or warp-collective instruction, or None."""
    op = ins.opcode
    mods = ins.mods
    o = ins.operands
    if op in ("bar", "barrier"):
        if "warp" in mods:
            # __syncwarp: lanes of a warp already execute together; the rendezvous is the machine's
            return Collective(ins, o[0], lambda x: (), lambda vals, part: (), lambda x, res: None)
        if "arrive" in mods:
            raise Unsupported(f"opcode {ins.full}")
        if "red" in mods:
            # bar.red.popc.u32 d, id, {!}p  /  bar.red.and.pred d, id, {!}p
            if len(o) > 3:
                raise Unsupported(f"{ins.full} with a thread count")
            rp = reader(o[2], np.bool_)
            return lambda x: x.m.arrive(x, np.broadcast_to(rp(x), (x.n,)))
        if len(o) > 1:
            # bar.sync id, count: a named barrier for `count` threads
            rid, rcount = reader(o[0], np.uint32), reader(o[1], np.uint32)

            def named(x):
                ids = np.unique(np.asarray(rid(x)))
                counts = np.unique(np.asarray(rcount(x)))
                if ids.size != 1 or counts.size != 1:
                    raise Unsupported(f"{ins.full} with an id or thread count that differs between warps")
                x.m.arrive(x, barrier=int(ids[0]) & 15, count=int(counts[0]))
            return named
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


def _pair_writers(dst) -> tuple[Callable, Callable | None]:
    if isinstance(dst, Pair):
        return writer(dst.first, np.uint32), writer(dst.second, np.bool_)
    return writer(dst, np.uint32), None


def _shfl(ins: Instr):
    mode = next(m for m in ins.mods if m in ("up", "down", "bfly", "idx"))
    o = ins.operands
    wd, wp = _pair_writers(o[0])
    ra, rb, rc = _lanes(reader(o[1], np.uint32), np.uint32), _lanes(reader(o[2], np.uint32), np.int64), \
        _lanes(reader(o[3], np.uint32), np.int64)

    def read(x):
        return ra(x), rb(x), rc(x)

    def compute(vals, part):
        # the PTX ISA's shfl.sync pseudo-code, for all lanes of all warps at once
        shape = part.shape
        a = vals[0].reshape(shape)
        b = vals[1].reshape(shape) & 0x1F
        c = vals[2].reshape(shape)
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
        return d.ravel(), pval.ravel()

    def write(x, res):
        wd(x, res[0])
        if wp is not None:
            wp(x, res[1])

    if len(o) < 5:  # pre-Volta shfl without a membermask: the active lanes take part
        return lambda x: write(x, compute(read(x), x.mask.reshape(-1, WARP)))
    return Collective(ins, o[4], read, compute, write)


def _vote(ins: Instr):
    mode = next(m for m in ins.mods if m in ("all", "any", "uni", "ballot"))
    o = ins.operands
    ra = _lanes(reader(o[1], np.bool_), np.bool_)
    wr = writer(o[0], np.uint32 if mode == "ballot" else np.bool_)

    def compute(vals, part):
        a = vals[0].reshape(part.shape) & part
        if mode == "ballot":
            return (np.repeat(pack(a), WARP),)
        cnt = a.sum(axis=1)
        tot = part.sum(axis=1)
        r = {"all": cnt == tot, "any": cnt > 0, "uni": (cnt == 0) | (cnt == tot)}[mode]
        return (np.repeat(r, WARP),)

    h = Collective(ins, o[2], lambda x: (ra(x),), compute, lambda x, res: wr(x, res[0]), per_member=True)
    if "sync" not in ins.mods or len(o) < 3:
        return lambda x: h.write(x, compute(h.read(x), x.mask.reshape(-1, WARP)))  # pre-Volta vote
    return h


def _redux(ins: Instr) -> Collective:
    op = next(m for m in ins.mods if m in ("add", "min", "max", "and", "or", "xor"))
    t = type_mods(ins)[-1]
    if t in ("f32",):
        raise Unsupported(f"opcode {ins.full}")
    dt = np.dtype(DTYPES[t])
    o = ins.operands
    ra, wr = _lanes(reader(o[1], dt), dt), writer(o[0], dt)

    def compute(vals, part):
        m2 = part
        a = vals[0].reshape(part.shape)
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
        return (np.repeat(np.asarray(r, dtype=dt), WARP),)

    return Collective(ins, o[2], lambda x: (ra(x),), compute, lambda x, res: wr(x, res[0]), per_member=True)


def _match(ins: Instr) -> Collective:
    mode = next(m for m in ins.mods if m in ("any", "all"))
    t = type_mods(ins)[-1]
    dt = np.dtype(DTYPES[t])
    o = ins.operands
    wd, wp = _pair_writers(o[0])
    ra = _lanes(reader(o[1], dt), dt)

    def compute(vals, part):
        m2 = part
        a = vals[0].reshape(part.shape)
        same = (a[:, :, None] == a[:, None, :]) & m2[:, None, :]
        bits = pack(same.reshape(-1, WARP)).reshape(-1, WARP)
        if mode == "any":
            return bits.ravel(), None
        allm = pack(m2)
        eq = (bits == allm[:, None]).all(axis=1)
        return np.repeat(np.where(eq, allm, 0).astype(np.uint32), WARP), np.repeat(eq, WARP)

    def write(x, res):
        wd(x, res[0])
        if wp is not None and res[1] is not None:
            wp(x, res[1])

    return Collective(ins, o[2], lambda x: (ra(x),), compute, write, per_member=True)
