"""Floating-point instructions: add/sub/mul/fma/mad/div/rcp/sqrt/rsqrt/ex2/lg2/sin/cos/tanh,
min/max/abs/neg, testp, copysign.

f32 arithmetic goes through `fp` (exact IEEE results in every rounding mode, .ftz, .sat); f64 uses
NumPy's float64, which is round-to-nearest (directed f64 rounding and an exact f64 FMA are not
modelled: f64 FMA is computed as a*b+c).
"""

from __future__ import annotations

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


def _decode_f64(op, mods, srcs, wr, fout, approx):
    f = np.float64
    if op in ("add", "sub", "mul", "div"):
        fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}[op]
        ra, rb = srcs
        return lambda x: wr(x, fout(fn(_arr(ra(x), f), _arr(rb(x), f))))
    if op in ("fma", "mad"):
        ra, rb, rc = srcs
        return lambda x: wr(x, fout(_arr(ra(x), f) * _arr(rb(x), f) + _arr(rc(x), f)))
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
