"""Integer and bitwise instructions: add/sub/mul/mad/div/rem/min/max/abs/neg, logic, shifts, bits.

Arithmetic runs on NumPy integer arrays of the instruction's width, which wrap exactly as PTX
requires; widening forms (`.wide`, `.hi`) use the next width up, or 32-bit halves for 64-bit `.hi`.
The extended-precision forms (`add.cc`, `addc`, `sub.cc`, `subc`, `mad.cc`, `madc`, which the math
library's argument reductions use) keep the carry flag CC.CF per thread in a hidden register.
"""

from __future__ import annotations

import numpy as np

from .operands import DTYPES, UINT, Unsupported, reader, type_mods, writer
from .ptx import Instr, Reg

_WIDE = {"s16": "s32", "u16": "u32", "s32": "s64", "u32": "u64", "s64": None, "u64": None}

_OPS = {"add", "sub", "mul", "mad", "div", "rem", "min", "max", "abs", "neg", "and", "or", "xor",
        "not", "cnot", "shl", "shr", "shf", "popc", "clz", "brev", "bfe", "bfi", "prmt", "sad", "bfind"}


def _as(v, dt):
    return np.asarray(v).astype(dt, copy=False)


def _mag(a, ut):
    """|a| of a signed array as unsigned of the same width (exact for INT_MIN)."""
    u = np.asarray(a).view(ut) if np.asarray(a).ndim else np.asarray(a).astype(ut)
    return np.where(np.asarray(a) < 0, (~u) + ut(1), u).astype(ut)


def mul_hi(a, b, t: str):
    """High half of the full product of a and b of PTX type t."""
    dt = np.dtype(DTYPES[t])
    w = dt.itemsize * 8
    if w <= 32:
        wide = np.int64 if dt.kind == "i" else np.uint64
        p = _as(a, wide) * _as(b, wide)
        return (p >> w).astype(dt)
    # 64-bit: 128-bit product from 32-bit halves (unsigned), then the signed correction
    ua = np.asarray(a).astype(np.int64).view(np.uint64) if dt.kind == "i" else _as(a, np.uint64)
    ub = np.asarray(b).astype(np.int64).view(np.uint64) if dt.kind == "i" else _as(b, np.uint64)
    m32 = np.uint64(0xFFFFFFFF)
    s32 = np.uint64(32)
    al, ah = ua & m32, ua >> s32
    bl, bh = ub & m32, ub >> s32
    ll = al * bl
    lh = al * bh
    hl = ah * bl
    hh = ah * bh
    mid = (ll >> s32) + (lh & m32) + (hl & m32)
    hi = hh + (lh >> s32) + (hl >> s32) + (mid >> s32)
    if dt.kind == "i":
        hi = hi - np.where(np.asarray(a) < 0, ub, np.uint64(0)) - np.where(np.asarray(b) < 0, ua, np.uint64(0))
        return hi.view(np.int64) if hi.ndim else hi.astype(np.int64)
    return hi


def _divrem(a, b, dt):
    dt = np.dtype(dt)
    ut = UINT[dt.itemsize]
    a = np.asarray(a, dtype=dt)
    b = np.asarray(b, dtype=dt)
    zero = b == 0
    bs = np.where(zero, dt.type(1), b)
    if dt.kind == "u":
        q = a // bs
        r = a % bs
        q = np.where(zero, dt.type(np.iinfo(dt).max), q)
        r = np.where(zero, a, r)
        return q.astype(dt), r.astype(dt)
    ua, ub = _mag(a, ut), _mag(bs, ut)
    qu, ru = ua // ub, ua % ub
    neg_q = (a < 0) ^ (bs < 0)
    q = np.where(neg_q, (~qu) + ut(1), qu).astype(ut).view(dt) if np.ndim(qu) else np.where(neg_q, (~qu) + ut(1), qu).astype(ut).astype(dt)
    r = np.where(a < 0, (~ru) + ut(1), ru).astype(ut)
    r = r.view(dt) if r.ndim else r.astype(dt)
    q = np.where(zero, dt.type(-1), q)
    r = np.where(zero, a, r)
    return q, r


def _clz(v, w):
    v = np.asarray(v)
    if w == 64:
        hi = (v >> np.uint64(32)).astype(np.uint32)
        lo = (v & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        return np.where(hi != 0, _clz(hi, 32), 32 + _clz(lo, 32)).astype(np.uint32)
    f = v.astype(np.float64)
    _, e = np.frexp(f)
    return np.where(v == 0, w, w - e).astype(np.uint32)


_REV8 = np.array([int(f"{i:08b}"[::-1], 2) for i in range(256)], dtype=np.uint64)


def _brev(v, w):
    v = np.asarray(v).astype(np.uint64)
    out = np.zeros_like(v)
    for k in range(w // 8):
        byte = (v >> np.uint64(8 * k)) & np.uint64(0xFF)
        out |= _REV8[byte] << np.uint64(w - 8 - 8 * k)
    return out.astype(UINT[w // 8])


def decode(ins: Instr, ctx, pc: int):
    """Handler for an integer/bitwise instruction, or None."""
    op = ins.opcode
    if op in ("dp4a", "dp2a"):
        return _dot(ins)
    if op in ("addc", "subc", "madc") or ("cc" in ins.mods and op in ("add", "sub", "mad")):
        return _carry(ins, ctx)
    if op not in _OPS:
        return None
    types = type_mods(ins)
    if not types:
        return None
    t = types[-1]
    if t.startswith("f") or t.startswith("bf"):
        return None
    if "cc" in ins.mods:
        raise Unsupported(f"opcode {ins.full}")
    dt = np.dtype(DTYPES[t])
    o = ins.operands
    w = dt.itemsize * 8

    if op in ("add", "sub"):
        ra, rb, wr = reader(o[1], dt), reader(o[2], dt), writer(o[0], dt)
        sat = "sat" in ins.mods
        if sat:
            def h(x):
                a, b = _as(ra(x), np.int64), _as(rb(x), np.int64)
                r = a + b if op == "add" else a - b
                wr(x, np.clip(r, -(2**31), 2**31 - 1).astype(np.int32))
        elif op == "add":
            def h(x):
                wr(x, np.add(ra(x), rb(x), dtype=dt))
        else:
            def h(x):
                wr(x, np.subtract(ra(x), rb(x), dtype=dt))
        return h

    if op in ("mul", "mad"):
        mode = "lo"
        for m in ("lo", "hi", "wide"):
            if m in ins.mods:
                mode = m
        ra, rb = reader(o[1], dt), reader(o[2], dt)
        if mode == "wide":
            wt = _WIDE.get(t)
            if wt is None:
                raise Unsupported(f"opcode {ins.full}")
            wdt = np.dtype(DTYPES[wt])
            wr = writer(o[0], wdt)
            rc = reader(o[3], wdt) if op == "mad" else None

            def h(x):
                p = _as(ra(x), wdt) * _as(rb(x), wdt)
                if rc is not None:
                    p = p + rc(x)
                wr(x, np.asarray(p, dtype=wdt))
            return h
        wr = writer(o[0], dt)
        rc = reader(o[3], dt) if op == "mad" else None
        if mode == "hi":
            def h(x):
                p = mul_hi(ra(x), rb(x), t)
                if rc is not None:
                    p = np.add(p, rc(x), dtype=dt)
                wr(x, p)
            return h

        def h(x):
            p = np.multiply(ra(x), rb(x), dtype=dt)
            if rc is not None:
                p = np.add(p, rc(x), dtype=dt)
            wr(x, p)
        return h

    if op in ("div", "rem"):
        ra, rb, wr = reader(o[1], dt), reader(o[2], dt), writer(o[0], dt)
        k = 0 if op == "div" else 1

        def h(x):
            wr(x, _divrem(ra(x), rb(x), dt)[k])
        return h

    if op in ("min", "max"):
        ra, rb, wr = reader(o[1], dt), reader(o[2], dt), writer(o[0], dt)
        fn = np.minimum if op == "min" else np.maximum
        return lambda x: wr(x, fn(ra(x), rb(x)).astype(dt))

    if op in ("abs", "neg"):
        ra, wr = reader(o[1], dt), writer(o[0], dt)
        if op == "abs":
            return lambda x: wr(x, np.abs(np.asarray(ra(x))).astype(dt))
        return lambda x: wr(x, np.negative(np.asarray(ra(x))).astype(dt))

    if op in ("and", "or", "xor"):
        ra, rb, wr = reader(o[1], dt), reader(o[2], dt), writer(o[0], dt)
        fn = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
        return lambda x: wr(x, fn(ra(x), rb(x)))

    if op in ("not", "cnot"):
        ra, wr = reader(o[1], dt), writer(o[0], dt)
        if op == "not":
            return lambda x: wr(x, np.invert(ra(x)))
        return lambda x: wr(x, (np.asarray(ra(x)) == 0).astype(dt))

    if op in ("shl", "shr"):
        ra, wr = reader(o[1], dt), writer(o[0], dt)
        rs = reader(o[2], np.uint32)

        def h(x):
            a = np.asarray(ra(x))
            s = np.asarray(rs(x))
            sc = np.minimum(s, np.uint32(w - 1)).astype(dt)
            if op == "shl":
                r = np.where(s >= w, dt.type(0), np.left_shift(a, sc, dtype=dt))
            elif dt.kind == "i":
                r = np.right_shift(a, sc, dtype=dt)
            else:
                r = np.where(s >= w, dt.type(0), np.right_shift(a, sc, dtype=dt))
            wr(x, np.asarray(r, dtype=dt))
        return h

    if op == "popc":
        ra, wr = reader(o[1], UINT[dt.itemsize]), writer(o[0], np.uint32)
        return lambda x: wr(x, np.bitwise_count(np.asarray(ra(x))).astype(np.uint32))
    if op == "clz":
        ra, wr = reader(o[1], UINT[dt.itemsize]), writer(o[0], np.uint32)
        return lambda x: wr(x, _clz(ra(x), w))
    if op == "brev":
        ra, wr = reader(o[1], UINT[dt.itemsize]), writer(o[0], UINT[dt.itemsize])
        return lambda x: wr(x, _brev(ra(x), w))
    if op == "bfind":
        # the PTX ISA: the position of the most significant bit that is 1 (unsigned) or differs from
        # the sign bit (signed); 0xFFFFFFFF when there is none; .shiftamt gives w - 1 - position
        ra, wr = reader(o[1], dt), writer(o[0], np.uint32)
        shiftamt = "shiftamt" in ins.mods
        ut = UINT[dt.itemsize]

        def h(x):
            a = np.asarray(ra(x))
            u = a.view(ut) if a.ndim else np.asarray(a).astype(dt).view(ut)
            if dt.kind == "i":
                u = np.where(a < 0, ~u, u).astype(ut)
            none = u == 0
            pos = (w - 1) - _clz(u, w).astype(np.int64)
            d = (w - 1) - pos if shiftamt else pos
            wr(x, np.where(none, np.uint32(0xFFFFFFFF), d.astype(np.uint32)))
        return h

    if op == "bfe":
        ra, wr = reader(o[1], dt), writer(o[0], dt)
        rb, rc = reader(o[2], np.uint32), reader(o[3], np.uint32)

        def h(x):
            # PTX: pos and len are their low 8 bits; bit i of d is bit pos + i of a while i < len and
            # pos + i stays inside the word, else the sign bit (bit min(pos + len - 1, top) of a for
            # .s types with len > 0, else 0). So only min(len, width - pos) bits come from a.
            pos = (np.asarray(rb(x)) & np.uint32(0xFF)).astype(np.int64)
            ln = (np.asarray(rc(x)) & np.uint32(0xFF)).astype(np.int64)
            ua = np.asarray(ra(x)).astype(UINT[dt.itemsize]).astype(np.uint64)
            taken = np.clip(np.minimum(ln, w - pos), 0, 64)  # 0 whenever pos is past the word
            field = ua >> np.minimum(pos, w - 1).astype(np.uint64)
            mask = np.where(taken >= 64, np.uint64(0xFFFFFFFFFFFFFFFF),
                            (np.uint64(1) << np.minimum(taken, 63).astype(np.uint64)) - np.uint64(1))
            field = field & mask
            if dt.kind == "i":
                sbit_pos = np.clip(pos + ln - 1, 0, w - 1)
                sbit = ((ua >> sbit_pos.astype(np.uint64)) & np.uint64(1)).astype(bool) & (ln > 0)
                field = np.where(sbit, field | ~mask, field)
            wr(x, field.astype(UINT[dt.itemsize]).view(dt) if field.ndim else field.astype(UINT[dt.itemsize]).astype(dt))
        return h

    if op == "bfi":
        rf, rb = reader(o[1], dt), reader(o[2], dt)
        rc, rd = reader(o[3], np.uint32), reader(o[4], np.uint32)
        wr = writer(o[0], dt)

        def h(x):
            f = np.asarray(rf(x)).astype(np.uint64) & np.uint64((1 << w) - 1)
            b = np.asarray(rb(x)).astype(np.uint64) & np.uint64((1 << w) - 1)
            pos = (np.asarray(rc(x)) & np.uint32(0xFF)).astype(np.uint64)
            ln = (np.asarray(rd(x)) & np.uint32(0xFF)).astype(np.uint64)
            ln = np.minimum(ln, np.uint64(w))  # bits past the word are never inserted
            pos_c = np.minimum(pos, np.uint64(63))
            mask = np.where(ln >= 64, np.uint64(0xFFFFFFFFFFFFFFFF), (np.uint64(1) << ln) - np.uint64(1))
            r = (b & ~(mask << pos_c)) | ((f & mask) << pos_c)
            r = np.where(pos >= w, b, r) & np.uint64((1 << w) - 1)
            wr(x, r.astype(UINT[dt.itemsize]))
        return h

    if op == "prmt":
        if len(ins.mods) > 1:
            raise Unsupported(f"opcode {ins.full}")
        ra, rb, rc = reader(o[1], np.uint32), reader(o[2], np.uint32), reader(o[3], np.uint32)
        wr = writer(o[0], np.uint32)

        def h(x):
            a = np.asarray(ra(x)).astype(np.uint64)
            b = np.asarray(rb(x)).astype(np.uint64)
            c = np.asarray(rc(x)).astype(np.uint64)
            both = a | (b << np.uint64(32))
            out = np.zeros(np.broadcast(a, b, c).shape, dtype=np.uint64)
            for k in range(4):
                sel = (c >> np.uint64(4 * k)) & np.uint64(0xF)
                byte = (both >> ((sel & np.uint64(7)) * np.uint64(8))) & np.uint64(0xFF)
                sign = (byte >> np.uint64(7)) & np.uint64(1)
                byte = np.where((sel & np.uint64(8)) != 0, sign * np.uint64(0xFF), byte)
                out |= byte << np.uint64(8 * k)
            wr(x, out.astype(np.uint32))
        return h

    if op == "sad":
        # d = c + |a - b|, in the type's own width (wrapping, as the hardware does): __sad, __usad.
        ra, rb, rc, wr = reader(o[1], dt), reader(o[2], dt), reader(o[3], dt), writer(o[0], dt)

        def h(x):
            a, b = _as(ra(x), dt), _as(rb(x), dt)
            wr(x, np.add(np.subtract(np.maximum(a, b), np.minimum(a, b), dtype=dt), _as(rc(x), dt), dtype=dt))
        return h

    if op == "shf":
        # A funnel shift of the 64-bit pair [b, a]; NVRTC emits it for rotates such as ~(1u << k).
        # .l keeps the high 32 bits of the pair shifted left, .r the low 32 bits of it shifted
        # right; the count is c & 31 (.wrap) or min(c, 32) (.clamp).
        if w != 32 or len({"l", "r"} & set(ins.mods)) != 1 or len({"wrap", "clamp"} & set(ins.mods)) != 1:
            raise Unsupported(f"opcode {ins.full}")
        ra, rb, rc = reader(o[1], np.uint32), reader(o[2], np.uint32), reader(o[3], np.uint32)
        wr = writer(o[0], np.uint32)
        left, clamp = "l" in ins.mods, "clamp" in ins.mods

        def h(x):
            a, b = _as(ra(x), np.uint64), _as(rb(x), np.uint64)
            c = _as(rc(x), np.uint64)
            n = np.minimum(c, np.uint64(32)) if clamp else c & np.uint64(31)
            pair = (b << np.uint64(32)) | a
            r = (pair << n) >> np.uint64(32) if left else pair >> n
            wr(x, (r & np.uint64(0xFFFFFFFF)).astype(np.uint32))
        return h

    raise Unsupported(f"opcode {ins.full}")


def _parts(v: np.ndarray, width: int, signed: bool) -> list[np.ndarray]:
    """The `width`-bit fields of 32-bit values, low first, as int64 (sign-extended when signed)."""
    v = np.asarray(v).astype(np.uint32).astype(np.int64)
    out = []
    for k in range(32 // width):
        f = (v >> (width * k)) & ((1 << width) - 1)
        if signed:
            f = np.where(f >= 1 << (width - 1), f - (1 << width), f)
        out.append(f)
    return out


def _dot(ins: Instr):
    """dp4a.atype.btype d, a, b, c: c plus the dot product of a's and b's four bytes;
    dp2a.{lo,hi}.atype.btype d, a, b, c: c plus the dot product of a's two 16-bit halves with two
    bytes of b (bytes 0-1 for .lo, 2-3 for .hi). Signedness per operand; the sum wraps at 32 bits."""
    types = [m for m in ins.mods if m in ("u32", "s32")]
    if len(types) != 2:
        raise Unsupported(f"opcode {ins.full}")
    sa, sb = types[0] == "s32", types[1] == "s32"
    o = ins.operands
    ra, rb = reader(o[1], np.uint32), reader(o[2], np.uint32)
    signed_out = sa or sb
    rc = reader(o[3], np.int32 if signed_out else np.uint32)
    wr = writer(o[0], np.uint32)
    if ins.opcode == "dp2a":
        if "lo" not in ins.mods and "hi" not in ins.mods:
            raise Unsupported(f"opcode {ins.full}")
        first = 0 if "lo" in ins.mods else 2

    def h(x):
        if ins.opcode == "dp4a":
            pa, pb = _parts(ra(x), 8, sa), _parts(rb(x), 8, sb)
        else:
            pa, pb = _parts(ra(x), 16, sa), _parts(rb(x), 8, sb)[first:first + 2]
        acc = np.asarray(rc(x)).astype(np.int64)
        for fa, fb in zip(pa, pb):
            acc = acc + fa * fb
        wr(x, (acc & 0xFFFFFFFF).astype(np.uint32))
    return h


CARRY = "%__cc_cf"  # the hidden per-thread register holding the carry flag CC.CF (0 or 1)


def _carry(ins: Instr, ctx):
    """add/sub/mad with carry-in (`addc`, `subc`, `madc`) and/or carry-out (`.cc`).

    add: d = a + b (+ CF); sub: d = a - (b + CF), CF then the borrow; mad.lo/.hi: d = (a*b).lo/.hi
    + c (+ CF). 32-bit forms run on int64/uint64 arrays (every intermediate fits); 64-bit forms on
    Python integers (they are rare: a few per math-library call).
    """
    op = ins.opcode
    base = op[:-1] if op in ("addc", "subc", "madc") else op
    cin, cout = op != base, "cc" in ins.mods
    types = type_mods(ins)
    if not types or types[-1] not in ("u32", "s32", "u64", "s64", "b32", "b64"):
        raise Unsupported(f"opcode {ins.full}")
    t = types[-1]
    w = 32 if t.endswith("32") else 64
    signed = t.startswith("s")
    mask = (1 << w) - 1
    if base == "mad" and not ({"lo", "hi"} & set(ins.mods)):
        raise Unsupported(f"opcode {ins.full}")
    hi = "hi" in ins.mods
    udt, sdt = UINT[w // 8], np.dtype(DTYPES["s%d" % w])
    o = ins.operands
    srcs = [reader(a, sdt if (signed and base == "mad" and k < 2) else udt) for k, a in enumerate(o[1:])]
    wr = writer(o[0], udt)
    ctx.kernel.regs.setdefault(CARRY, "u32")
    rcf, wcf = reader(Reg(CARRY), np.uint32), writer(Reg(CARRY), np.uint32)

    # 32 bits: sums stay below 2**34 in int64; an unsigned product below 2**64 in uint64
    work = object if w == 64 else (np.int64 if signed or base != "mad" else np.uint64)

    def h(x):
        vals = [np.broadcast_to(np.asarray(r(x)), (x.n,)).astype(work) for r in srcs]
        if base == "mad" and w == 32:
            p = vals[0] * vals[1]
            part = (p >> work(32)) & work(mask) if hi else p & work(mask)
            vals = [part.astype(np.int64), None, vals[2].astype(np.int64)]
        elif w == 32:
            vals = [v.astype(np.int64) for v in vals]
        cf = np.asarray(rcf(x)).astype(np.int64 if w == 32 else object) if cin else 0
        if base == "add":
            s = vals[0] + vals[1] + cf
        elif base == "sub":
            s = vals[0] - (vals[1] + cf)
        elif w == 32:
            s = vals[0] + vals[2] + cf
        else:
            p = vals[0] * vals[1]
            part = (p >> w) & mask if hi else p & mask
            s = part + vals[2] + cf
        if w == 32:
            wr(x, (s & mask).astype(udt))
            flag = s < 0 if base == "sub" else (s >> 32) != 0
        else:
            wr(x, np.array([int(v) & mask for v in s], dtype=udt))
            flag = np.array([int(v) < 0 for v in s] if base == "sub" else [int(v) >> w != 0 for v in s], dtype=bool)
        if cout:
            wcf(x, flag.astype(np.uint32))
    return h
