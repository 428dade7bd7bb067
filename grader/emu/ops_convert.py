"""Compare, select, convert and move: setp, selp, set, slct, cvt, cvta, mov, isspacep."""

from __future__ import annotations

import numpy as np

from . import fp
from .memory import LOCAL_WINDOW, SHARED_WINDOW, WINDOW_SIZE
from .operands import DTYPES, UINT, Unsupported, reader, type_mods, writer
from .ptx import Instr, Pair, Sink, Vec

_CMP = {"eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs",
        "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"}
_BOOL = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}
_WINDOWS = {"shared": SHARED_WINDOW, "local": LOCAL_WINDOW}


def write_predicates(x, tv, bop, rc, wp, wq) -> None:
    """setp's destinations: p = tv BOP c and, with a second one, q = !tv BOP c (c the optional
    predicate operand; no BOP: p = tv, q = !tv)."""
    if bop:
        c = rc(x)
        p, q = _BOOL[bop](tv, c), _BOOL[bop](~tv, c)
    else:
        p, q = tv, ~tv
    wp(x, p)
    if wq is not None:
        wq(x, q)


def compare(cmp: str, a, b, is_float: bool):
    """PTX comparison (ordered compares are false on NaN, unordered ones true)."""
    a = np.asarray(a)
    b = np.asarray(b)
    base = cmp[:-1] if cmp in ("equ", "neu", "ltu", "leu", "gtu", "geu") else cmp
    base = {"lo": "lt", "ls": "le", "hi": "gt", "hs": "ge"}.get(base, base)
    if cmp == "num":
        return ~(np.isnan(a) | np.isnan(b))
    if cmp == "nan":
        return np.isnan(a) | np.isnan(b)
    r = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
         "gt": np.greater, "ge": np.greater_equal}[base](a, b)
    if is_float:
        nan = np.isnan(a) | np.isnan(b)
        if cmp in ("equ", "neu", "ltu", "leu", "gtu", "geu"):
            r = r | nan
        else:
            r = r & ~nan
    return r


def _flt(t: str) -> bool:
    return t in ("f32", "f64")


def decode(ins: Instr, ctx, pc: int):
    """Handler for setp/selp/set/slct/cvt/cvta/mov/isspacep, or None."""
    op = ins.opcode
    o = ins.operands
    types = type_mods(ins)
    if op == "setp":
        cmp = next(m for m in ins.mods if m in _CMP)
        bop = next((m for m in ins.mods if m in _BOOL), None)
        t = types[-1]
        if t in ("f16", "bf16", "f16x2", "bf16x2"):
            raise Unsupported(f"opcode {ins.full}")
        dt = DTYPES[t]
        ftz = "ftz" in ins.mods and t == "f32"
        ra, rb = reader(o[1], dt), reader(o[2], dt)
        rc = reader(o[3], np.bool_) if bop else None
        if isinstance(o[0], Pair):
            wp, wq = writer(o[0].first, np.bool_), writer(o[0].second, np.bool_)
        else:
            wp, wq = writer(o[0], np.bool_), None
        isf = _flt(t)

        def h(x):
            a, b = ra(x), rb(x)
            if ftz:
                a, b = fp.flush_subnormal_f32(np.asarray(a, np.float32)), fp.flush_subnormal_f32(np.asarray(b, np.float32))
            write_predicates(x, compare(cmp, a, b, isf), bop, rc, wp, wq)
        return h

    if op == "selp":
        dt = DTYPES[types[-1]]
        ra, rb, rc, wr = reader(o[1], dt), reader(o[2], dt), reader(o[3], np.bool_), writer(o[0], dt)
        return lambda x: wr(x, np.where(rc(x), ra(x), rb(x)).astype(dt))

    if op == "set":
        cmp = next(m for m in ins.mods if m in _CMP)
        if any(m in _BOOL for m in ins.mods):
            raise Unsupported(f"opcode {ins.full}")
        dtt, stt = types[0], types[-1]
        ra, rb = reader(o[1], DTYPES[stt]), reader(o[2], DTYPES[stt])
        wr = writer(o[0], DTYPES[dtt])
        one = np.float32(1.0) if dtt == "f32" else DTYPES[dtt](-1) if dtt.startswith("s") else UINT[4](0xFFFFFFFF)

        def h(x):
            r = compare(cmp, ra(x), rb(x), _flt(stt))
            wr(x, np.where(r, one, DTYPES[dtt](0)).astype(DTYPES[dtt]))
        return h

    if op == "slct":
        dtt, ct = types[0], types[-1]
        ra, rb, rc = reader(o[1], DTYPES[dtt]), reader(o[2], DTYPES[dtt]), reader(o[3], DTYPES[ct])
        wr = writer(o[0], DTYPES[dtt])
        return lambda x: wr(x, np.where(np.asarray(rc(x)) >= 0, ra(x), rb(x)).astype(DTYPES[dtt]))

    if op == "cvt":
        return _cvt(ins, types)

    if op == "cvta":
        to = "to" in ins.mods
        space = next((m for m in ins.mods if m in ("global", "shared", "local", "const", "param")), None)
        size = types[-1] if types else "u64"
        dt = DTYPES[size]
        ra, wr = reader(o[1], dt), writer(o[0], dt)
        base = _WINDOWS.get(space, 0)
        if base == 0:
            return lambda x: wr(x, np.asarray(ra(x), dtype=dt))
        if to:
            return lambda x: wr(x, (np.asarray(ra(x)).astype(np.uint64) - np.uint64(base)).astype(dt))
        return lambda x: wr(x, (np.asarray(ra(x)).astype(np.uint64) + np.uint64(base)).astype(dt))

    if op == "isspacep":
        space = ins.mods[0]
        ra, wr = reader(o[1], np.uint64), writer(o[0], np.bool_)

        def h(x):
            a = np.asarray(ra(x))
            in_sh = (a >= np.uint64(SHARED_WINDOW)) & (a < np.uint64(SHARED_WINDOW + WINDOW_SIZE))
            in_lo = (a >= np.uint64(LOCAL_WINDOW)) & (a < np.uint64(LOCAL_WINDOW + WINDOW_SIZE))
            r = {"shared": in_sh, "local": in_lo}.get(space, ~(in_sh | in_lo))
            wr(x, r)
        return h

    if op == "mov":
        return _mov(ins, types, ctx)
    return None


def _mov(ins: Instr, types, ctx):
    o = ins.operands
    t = types[-1]
    dt = np.dtype(DTYPES[t])
    d, a = o[0], o[1]
    if isinstance(a, Vec):
        # pack: low element first
        k = len(a.items)
        ew = dt.itemsize // k
        rs = [reader(it, UINT[ew]) for it in a.items]
        wr = writer(d, UINT[dt.itemsize])

        def h(x):
            acc = np.zeros(x.n, dtype=np.uint64)
            for i, r in enumerate(rs):
                acc |= np.asarray(r(x)).astype(np.uint64) << np.uint64(8 * ew * i)
            wr(x, acc.astype(UINT[dt.itemsize]))
        return h
    if isinstance(d, Vec):
        k = len(d.items)
        ew = dt.itemsize // k
        ra = reader(a, UINT[dt.itemsize])
        ws = [writer(it, UINT[ew]) if not isinstance(it, Sink) else None for it in d.items]

        def h(x):
            v = np.asarray(ra(x)).astype(np.uint64)
            for i, w in enumerate(ws):
                if w is not None:
                    w(x, ((v >> np.uint64(8 * ew * i)) & np.uint64((1 << (8 * ew)) - 1)).astype(UINT[ew]))
        return h
    ra = reader(a, dt, ctx.symbols)
    wr = writer(d, dt)
    return lambda x: wr(x, ra(x))


def _cvt(ins: Instr, types):
    o = ins.operands
    if len(types) < 2:
        raise Unsupported(f"opcode {ins.full}")
    dst, src = types[0], types[1]
    if dst in ("f16", "bf16", "f16x2", "bf16x2", "tf32") or src in ("f16", "bf16", "f16x2", "bf16x2"):
        raise Unsupported(f"opcode {ins.full} (half precision)")
    sat = "sat" in ins.mods
    ftz = "ftz" in ins.mods
    irnd = next((m for m in ins.mods if m in ("rni", "rzi", "rmi", "rpi")), None)
    frnd = next((m for m in ins.mods if m in ("rn", "rz", "rm", "rp")), None)
    ra = reader(o[1], DTYPES[src])
    ddt = np.dtype(DTYPES[dst])
    wr = writer(o[0], ddt)
    sname = {"b": "u"}.get(src[0], src[0]) + src[1:]
    dname = {"b": "u"}.get(dst[0], dst[0]) + dst[1:]

    def fin(v):
        v = np.asarray(v)
        return fp.flush_subnormal_f32(v) if ftz and v.dtype == np.float32 else v

    if _flt(src) and not _flt(dst):
        rnd = irnd or "rzi"
        return lambda x: wr(x, fp.cvt_float_to_int(fin(np.atleast_1d(ra(x))), dname, rnd))
    if not _flt(src) and _flt(dst):
        rnd = frnd or "rn"

        def h(x):
            v = fp.cvt_int_to_float(np.atleast_1d(np.asarray(ra(x))), dst, rnd)
            if sat:
                v = fp.saturate_f32(v) if dst == "f32" else np.clip(np.nan_to_num(v, nan=0.0), 0, 1)
            wr(x, v)
        return h
    if _flt(src) and _flt(dst):
        rnd = irnd or frnd

        def h(x):
            v = fin(np.atleast_1d(ra(x)))
            if rnd is not None or src != dst:
                v = fp.cvt_float_to_float(v, dst, rnd or "rn")
            if dst == "f32" and ftz:
                v = fp.flush_subnormal_f32(v)
            if sat:
                v = fp.saturate_f32(v) if dst == "f32" else np.clip(np.nan_to_num(v, nan=0.0), 0, 1)
            wr(x, v)
        return h
    # integer to integer: chop or sign/zero extend by the source type; .sat clamps
    sdt = np.dtype(DTYPES[sname])
    del sdt

    def h(x):
        v = np.asarray(ra(x))
        if sat:
            info = np.iinfo(ddt)
            v = np.clip(v.astype(np.float64) if v.dtype.itemsize == 8 else v.astype(np.int64), info.min, info.max)
        wr(x, v.astype(ddt))
    return h
