"""Floating-point instructions: add/sub/mul/fma/mad/div/rcp/sqrt/rsqrt/ex2/lg2/sin/cos/tanh,
min/max/abs/neg, testp, copysign.

f32 arithmetic goes through `fp` (exact IEEE results in every rounding mode, .ftz, .sat). f64 add,
sub, mul, div, rcp and sqrt start from NumPy's float64 (IEEE round-to-nearest) and recover the exact
error (TwoSum, Dekker's TwoProduct, the division and square-root residuals) to round in the directed
modes; f64 FMA is rounded once, exactly (the product's error term added with round-to-odd, Boldo and
Melquiond's correctly rounded sum of three), with exact rational arithmetic for the rare lanes near
underflow or overflow and for directed-rounding FMA. The f64 `.approx` forms are computed exactly.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from . import fp
from .operands import Unsupported, reader, type_mods, writer
from .ptx import Instr

_OPS = {"add", "sub", "mul", "fma", "mad", "div", "rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin",
        "cos", "tanh", "min", "max", "abs", "neg", "testp", "copysign"}
_RND = ("rn", "rz", "rm", "rp")
_SIGN32 = np.uint32(0x80000000)
_SIGN64 = np.uint64(0x8000000000000000)


def _arr(v, dt):
    return np.asarray(v, dtype=dt)


def decode(ins: Instr, ctx, pc: int):
    """Handler for a floating-point instruction, or None if not one."""
    op = ins.opcode
    if op not in _OPS:
        return None
    types = type_mods(ins)
    if not types or types[-1] not in ("f32", "f64", "f16", "bf16", "f16x2", "bf16x2"):
        return None
    t = types[-1]
    if t not in ("f32", "f64"):
        raise Unsupported(f"opcode {ins.full} (half precision)")
    dt = np.float32 if t == "f32" else np.float64
    mods = ins.mods
    rnd = next((m for m in mods if m in _RND), "rn")
    ftz = "ftz" in mods and t == "f32"
    sat = "sat" in mods
    approx = "approx" in mods
    o = ins.operands

    def fin(v):
        return fp.flush_subnormal_f32(_arr(v, dt)) if ftz else _arr(v, dt)

    def fout(v):
        v = _arr(v, dt)
        if ftz:
            v = fp.flush_subnormal_f32(v)
        if sat:
            v = fp.saturate_f32(v) if t == "f32" else np.where(np.isnan(v), 0.0, np.clip(v, 0.0, 1.0))
        return v

    if op == "testp":
        kind = next(m for m in mods if m in ("finite", "infinite", "number", "notanumber", "normal", "subnormal"))
        ra, wr = reader(o[1], dt), writer(o[0], np.bool_)
        tiny = np.finfo(dt).tiny

        def h(x):
            a = _arr(ra(x), dt)
            r = {"finite": np.isfinite(a), "infinite": np.isinf(a), "number": ~np.isnan(a),
                 "notanumber": np.isnan(a),
                 "normal": np.isfinite(a) & (np.abs(a) >= tiny),
                 "subnormal": (a != 0) & (np.abs(a) < tiny)}[kind]
            wr(x, r)
        return h

    wr = writer(o[0], dt)
    srcs = [reader(s, dt) for s in o[1:]]

    if op in ("abs", "neg"):
        ra = srcs[0]
        ut, sign = (np.uint32, _SIGN32) if t == "f32" else (np.uint64, _SIGN64)

        def h(x):
            bits = np.atleast_1d(fin(ra(x))).view(ut)
            r = (bits & ~sign) if op == "abs" else (bits ^ sign)
            wr(x, fout(r.view(dt)))
        return h

    if op == "copysign":
        ra, rb = srcs
        ut, sign = (np.uint32, _SIGN32) if t == "f32" else (np.uint64, _SIGN64)

        def h(x):
            a = np.atleast_1d(_arr(ra(x), dt)).view(ut)
            b = np.atleast_1d(_arr(rb(x), dt)).view(ut)
            wr(x, ((b & ~sign) | (a & sign)).view(dt))
        return h

    if t == "f64":
        return _decode_f64(op, mods, srcs, wr, fout, approx)

    if op in ("add", "sub", "mul"):
        fn = {"add": fp.add_f32, "sub": fp.sub_f32, "mul": fp.mul_f32}[op]
        ra, rb = srcs
        return lambda x: wr(x, fout(fn(fin(ra(x)), fin(rb(x)), rnd)))
    if op in ("fma", "mad"):
        ra, rb, rc = srcs
        return lambda x: wr(x, fout(fp.fma_f32(fin(ra(x)), fin(rb(x)), fin(rc(x)), rnd)))
    if op == "div":
        ra, rb = srcs
        if approx:
            # div.approx computes a * (1/b)
            return lambda x: wr(x, fout(fp.mul_f32(fin(ra(x)), fp.approx_f32("rcp", fin(rb(x))), "rn")))
        return lambda x: wr(x, fout(fp.div_f32(fin(ra(x)), fin(rb(x)), rnd)))
    if op in ("rcp", "sqrt") and not approx:
        fn = fp.rcp_f32 if op == "rcp" else fp.sqrt_f32
        ra = srcs[0]
        return lambda x: wr(x, fout(fn(fin(ra(x)), rnd)))
    if op in ("rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos", "tanh"):
        ra = srcs[0]
        return lambda x: wr(x, fout(fp.approx_f32(op, fin(ra(x)))))
    if op in ("min", "max"):
        ra, rb = srcs
        if "NaN" in mods:
            fn = np.minimum if op == "min" else np.maximum
            return lambda x: wr(x, fout(fn(fin(ra(x)), fin(rb(x)))))
        fn = fp.min_f32 if op == "min" else fp.max_f32
        return lambda x: wr(x, fout(fn(fin(ra(x)), fin(rb(x)))))
    raise Unsupported(f"opcode {ins.full}")


# ---------------------------------------------------------------------------- exact f64

_SPLIT = 134217729.0  # 2**27 + 1: Dekker's splitter for 53-bit significands
_SAFE_LO, _SAFE_HI = 2.0 ** -900, 2.0 ** 900  # inside these magnitudes the error terms are exact


def _two_sum(a, b):
    """s = fl(a + b) and the exact error a + b - s (Knuth)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _two_prod(a, b):
    """p = fl(a * b) and the exact error a * b - p (Dekker), for operands away from over/underflow."""
    p = a * b
    ca, cb = _SPLIT * a, _SPLIT * b
    ah, bh = ca - (ca - a), cb - (cb - b)
    al, bl = a - ah, b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _odd_sum(a, b):
    """a + b rounded to odd: exact if representable, else the neighbour whose last bit is 1."""
    s, e = _two_sum(a, b)
    even = (s.view(np.uint64) & np.uint64(1)) == 0
    return np.where((e != 0) & even, np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s)


def _directed(z, err, rnd: str):
    """The round-to-nearest result z, moved one ulp where `rnd` rounds the other way; `err` has the
    sign of (exact - z)."""
    if rnd == "rp":
        return np.where(err > 0, np.nextafter(z, np.inf), z)
    if rnd == "rm":
        return np.where(err < 0, np.nextafter(z, -np.inf), z)
    if rnd == "rz":
        return np.where(((err < 0) & (z > 0)) | ((err > 0) & (z < 0)), np.nextafter(z, 0.0), z)
    return z


def _exact_lanes(out, mask, fn, *args):
    """Recompute the lanes in `mask` with exact rationals: `fn(Fraction, ...) -> float`."""
    for i in np.flatnonzero(mask):
        out[i] = fn(*(Fraction(float(a[i])) for a in args))
    return out


def _round_fraction(q, rnd: str) -> float:
    """A rational rounded to float64 in mode `rnd` (float(Fraction) is round-to-nearest, exact ties)."""
    z = float(q)
    if rnd == "rn" or Fraction(z) == q:
        return z
    up = Fraction(z) < q
    if rnd == "rp" or (rnd == "rz" and q < 0):
        return float(np.nextafter(z, np.inf)) if up else z
    return z if up else float(np.nextafter(z, -np.inf))


def fma_f64(a, b, c, rnd: str = "rn") -> np.ndarray:
    """a * b + c rounded once (the PTX fma.f64 and mad.f64)."""
    a, b, c = (np.broadcast_to(np.asarray(v, dtype=np.float64), np.broadcast(a, b, c).shape) for v in (a, b, c))
    naive = a * b + c
    with np.errstate(all="ignore"):
        p, e = _two_prod(a, b)
        uh, ul = _two_sum(p, e)
        th, tl = _two_sum(c, uh)
        z = th + _odd_sum(tl, ul)
    ap = np.abs(p)
    finite = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
    hard = finite & ((ap > _SAFE_HI) | ((ap < _SAFE_LO) & (p != 0)) | (np.abs(c) > _SAFE_HI) | ~np.isfinite(z))
    if rnd != "rn":
        hard = finite  # directed FMA (the __fma_rz family) is rare: round it exactly
    out = np.where(finite & ~hard & (z != 0), z, naive)  # an exact zero keeps IEEE's sign rule
    if hard.any():
        out = np.array(out, dtype=np.float64)
        for i in np.flatnonzero(hard):
            q = Fraction(float(a[i])) * Fraction(float(b[i])) + Fraction(float(c[i]))
            if q != 0:
                out[i] = _round_fraction(q, rnd)
            elif rnd == "rm" and not (a[i] * b[i] == 0 and not np.signbit(a[i] * b[i]) and not np.signbit(c[i])):
                out[i] = -0.0  # an exact zero sum is -0 when rounding down (IEEE 754 6.3)
            else:
                out[i] = naive[i] if naive[i] == 0 else 0.0
    return out


def _arith_f64(op: str, rnd: str):
    """add/sub/mul/div/rcp/sqrt on float64 in rounding mode `rnd`."""
    def f(a, b=None):
        with np.errstate(all="ignore"):
            if op in ("add", "sub"):
                z, err = _two_sum(a, b if op == "add" else -b)
            elif op == "mul":
                z, err = _two_prod(a, b)
            elif op in ("div", "rcp"):
                num = a if op == "div" else np.ones_like(np.asarray(b if b is not None else a, dtype=np.float64))
                den = b if op == "div" else a
                z = num / den
                ph, pl = _two_prod(z, den)
                err = ((num - ph) - pl) * np.sign(den)  # the residual's sign is the quotient's error's
            else:  # sqrt
                z = np.sqrt(a)
                ph, pl = _two_prod(z, z)
                err = (a - ph) - pl
            if rnd == "rn":
                return z
            out = _directed(z, err, rnd)
            # outside the range where the error terms are exact, round exactly
            mag = np.abs(z)
            hard = np.isfinite(out) & ((mag > _SAFE_HI) | ((mag < _SAFE_LO) & (z != 0)))
            if op == "mul":
                hard |= np.isfinite(z) & ((np.abs(a) > _SAFE_HI) | (np.abs(b) > _SAFE_HI))
        if np.any(hard) and op != "sqrt":
            out = np.array(out, dtype=np.float64)
            exact = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
                     "div": lambda x, y: x / y if y else None, "rcp": lambda x: 1 / x if x else None}[op]
            args = (a, b) if op in ("add", "sub", "mul", "div") else (a,)
            args = tuple(np.broadcast_to(np.asarray(v, dtype=np.float64), out.shape) for v in args)

            def one(*fr):
                q = exact(*fr)
                return float("nan") if q is None else _round_fraction(q, rnd)
            out = _exact_lanes(out, hard, one, *args)
        return out
    return f


def _decode_f64(op, mods, srcs, wr, fout, approx):
    f = np.float64
    rnd = next((m for m in mods if m in _RND), "rn")
    if op in ("add", "sub", "mul", "div"):
        fn = _arith_f64(op, rnd)
        ra, rb = srcs
        return lambda x: wr(x, fout(fn(_arr(ra(x), f), _arr(rb(x), f))))
    if op in ("fma", "mad"):
        ra, rb, rc = srcs
        return lambda x: wr(x, fout(fma_f64(_arr(ra(x), f), _arr(rb(x), f), _arr(rc(x), f), rnd)))
    if op in ("rcp", "sqrt") and not approx:
        fn = _arith_f64(op, rnd)
        ra = srcs[0]
        return lambda x: wr(x, fout(fn(_arr(ra(x), f))))
    unary = {"rcp": lambda a: 1.0 / a, "sqrt": np.sqrt, "rsqrt": lambda a: 1.0 / np.sqrt(a),
             "ex2": np.exp2, "lg2": np.log2, "sin": np.sin, "cos": np.cos, "tanh": np.tanh}
    if op in unary:
        ra = srcs[0]
        fn = unary[op]
        return lambda x: wr(x, fout(fn(_arr(ra(x), f))))
    if op in ("min", "max"):
        ra, rb = srcs
        fn = np.fmin if op == "min" else np.fmax
        if "NaN" in mods:
            fn = np.minimum if op == "min" else np.maximum
        return lambda x: wr(x, fout(fn(_arr(ra(x), f), _arr(rb(x), f))))
    raise Unsupported(f"opcode {op}.f64")
