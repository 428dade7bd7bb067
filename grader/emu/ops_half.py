"""Half precision: f16, bf16 and their packed x2 forms (cuda_fp16.h, cuda_bf16.h).

Instructions: cvt to and from f16/bf16/f16x2/bf16x2; add, sub, mul, fma, neg, abs, min, max and setp
on f16, bf16 and the packed forms. Values live in registers as raw bits (.b16, or .b32 holding two
halves, the first operand of a pack in the upper half as the PTX ISA says for cvt.f16x2.f32).

Rounding is exact against the PTX ISA's definition (round to nearest even, the only mode these
instructions take here; another one is reported as unsupported):

* f16 <-> wider floats: NumPy's float16 is IEEE binary16 and rounds a float32/float64 to it
  correctly (round to nearest even, overflow to infinity, subnormals kept).
* bf16: the upper 16 bits of a float32. A float32 rounds to it by the usual bit trick
  (add 0x7FFF plus the lowest kept bit, drop 16 bits); NaN becomes the canonical 0x7FFF.
* Arithmetic: a+b, a*b (and a*b for fma) are exact in float64 for both formats; the one rounding
  to the 11- or 8-bit significand is done on the float64 value. Where the float64 sum itself is
  inexact (fma, bf16 add: the exponent range is wider than float64's 53 bits), its error is
  kept (TwoSum) and decides the ties, so the single rounding of the exact result is what comes out.
"""

from __future__ import annotations

import numpy as np

from .operands import DTYPES, Unsupported, reader, type_mods, writer
from .ptx import Instr, Pair

_HALF = ("f16", "bf16", "f16x2", "bf16x2")
_ARITH = {"add", "sub", "mul", "fma", "neg", "abs", "min", "max"}
# (significand bits with the hidden one, smallest quantum exponent, largest finite value)
_FORMATS = {"f16": (11, -24, 65504.0), "bf16": (8, -133, float(np.uint32(0x7F7F0000).view(np.float32)))}


# ---------------------------------------------------------------------------- bits <-> values

def f16_to_f64(bits: np.ndarray) -> np.ndarray:
    """IEEE half bits (uint16) -> float64, exactly."""
    return np.asarray(bits, dtype=np.uint16).view(np.float16).astype(np.float64)


def bf16_to_f64(bits: np.ndarray) -> np.ndarray:
    """bfloat16 bits (uint16) -> float64, exactly (they are the upper half of a float32)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)


def f32_to_bf16(v: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bits, round to nearest even; NaN -> 0x7FFF (cvt.rn.bf16.f32)."""
    bits = np.asarray(v, dtype=np.float32).view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    nan = np.isnan(np.asarray(v, dtype=np.float32))
    return np.where(nan, np.uint16(0x7FFF), rounded.astype(np.uint16)).astype(np.uint16)


def round_exact(s: np.ndarray, err: np.ndarray | None, fmt: str) -> np.ndarray:
    """Round the exact value s + err (float64 s, its float64 error or None) to `fmt` (nearest even)
    and return the result as float64 (a value of the format, or +-inf, or NaN)."""
    sig, qmin, largest = _FORMATS[fmt]
    s = np.asarray(s, dtype=np.float64)
    with np.errstate(all="ignore"):
        _, e = np.frexp(s)  # s = m * 2**e, 0.5 <= |m| < 1
        q = np.ldexp(1.0, np.maximum(e - sig, qmin))  # the quantum of s's binade (subnormals: qmin)
        scaled = s / q  # exact: a power-of-two scaling
        r = np.rint(scaled)  # nearest, ties to even
        if err is not None:
            tie = np.abs(scaled - np.trunc(scaled)) == 0.5
            up = tie & (np.asarray(err) * np.sign(s) > 0)
            down = tie & (np.asarray(err) * np.sign(s) < 0)
            r = np.where(up, np.trunc(scaled) + np.sign(s), np.where(down, np.trunc(scaled), r))
        out = r * q
        # a result at or past the largest finite value plus half a quantum rounds to infinity
        out = np.where(np.abs(out) > largest, np.copysign(np.inf, s), out)
        out = np.where(np.isfinite(s), out, s)
    return out


def _to_bits(v: np.ndarray, fmt: str) -> np.ndarray:
    """A float64 that is exactly a value of `fmt` (or inf, NaN) -> its bits."""
    if fmt == "f16":
        bits = np.asarray(v, dtype=np.float64).astype(np.float16).view(np.uint16)
        return np.where(np.isnan(v), np.uint16(0x7FFF), bits).astype(np.uint16)
    return f32_to_bf16(np.asarray(v, dtype=np.float64).astype(np.float32))


def _values(bits: np.ndarray, fmt: str) -> np.ndarray:
    return f16_to_f64(bits) if fmt == "f16" else bf16_to_f64(bits)


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """s = fl(a + b) and the exact error a + b - s (Knuth's TwoSum; exact for finite values)."""
    with np.errstate(all="ignore"):
        s = a + b
        bb = s - a
        err = (a - (s - bb)) + (b - bb)
        err = np.where(np.isfinite(s), err, 0.0)
    return s, err


def _ftz(v: np.ndarray, fmt: str) -> np.ndarray:
    """Flush subnormal values of `fmt` to a zero of the same sign (.ftz)."""
    smallest_normal = 2.0 ** -14 if fmt == "f16" else 2.0 ** -126
    return np.where(np.abs(v) < smallest_normal, np.copysign(0.0, v), v)


# ---------------------------------------------------------------------------- lanes of packed forms

def _split(bits: np.ndarray, packed: bool) -> list[np.ndarray]:
    """Raw register bits -> a list of uint16 arrays (low half first for a packed pair)."""
    if not packed:
        return [np.asarray(bits).astype(np.uint16)]
    b = np.asarray(bits).astype(np.uint32)
    return [(b & np.uint32(0xFFFF)).astype(np.uint16), (b >> np.uint32(16)).astype(np.uint16)]


def _join(halves: list[np.ndarray], packed: bool) -> np.ndarray:
    if not packed:
        return halves[0].astype(np.uint16)
    return (halves[0].astype(np.uint32) | (halves[1].astype(np.uint32) << np.uint32(16))).astype(np.uint32)


def add_bits(a: np.ndarray, b: np.ndarray, t: str) -> np.ndarray:
    """The bits of a + b (round to nearest even, subnormals kept) for raw `t` operands: f16, bf16
    (uint16) or their packed pairs f16x2, bf16x2 (uint32, each half added on its own). This is
    `atom.add.noftz` on half types."""
    packed = t.endswith("x2")
    fmt = t[:-2] if packed else t
    out = []
    for ha, hb in zip(_split(a, packed), _split(b, packed)):
        s, e = _two_sum(_values(ha, fmt), _values(hb, fmt))
        out.append(_to_bits(round_exact(s, e, fmt), fmt))
    return _join(out, packed)


# ---------------------------------------------------------------------------- decode

def decode(ins: Instr, ctx, pc: int):
    """Handler for a half-precision instruction, or None."""
    types = type_mods(ins)
    if not types or not any(t in _HALF for t in types):
        return None
    if ins.opcode == "cvt":
        return _cvt(ins, types)
    if ins.opcode in _ARITH:
        return _arith(ins, types[-1])
    if ins.opcode == "setp":
        return _setp(ins, types[-1])
    return None


def _arith(ins: Instr, t: str):
    if t not in _HALF:
        return None
    fmt = t[:-2] if t.endswith("x2") else t
    packed = t.endswith("x2")
    op = ins.opcode
    mods = ins.mods
    if any(m in mods for m in ("rz", "rm", "rp", "sat", "relu", "oob")):
        raise Unsupported(f"opcode {ins.full}")
    ftz = "ftz" in mods
    store = np.uint32 if packed else np.uint16
    o = ins.operands
    wr = writer(o[0], store)
    srcs = [reader(a, store) for a in o[1:]]

    def one(vals: list[np.ndarray]) -> np.ndarray:
        if op == "neg":
            return vals[0] ^ np.uint16(0x8000)
        if op == "abs":
            return vals[0] & np.uint16(0x7FFF)
        v = [_values(b, fmt) for b in vals]
        if ftz:
            v = [_ftz(a, fmt) for a in v]
        with np.errstate(all="ignore"):
            if op in ("min", "max"):
                a, b = v
                pick = np.fmin(a, b) if op == "min" else np.fmax(a, b)
                # -0 < +0 for min/max, as the PTX ISA orders them
                zeros = (a == 0) & (b == 0)
                signed = np.where(np.signbit(a) == (op == "min"), a, b)
                pick = np.where(zeros, signed, pick)
                res = pick
            elif op == "mul":
                res = round_exact(v[0] * v[1], None, fmt)
            elif op in ("add", "sub"):
                b = v[1] if op == "add" else -v[1]
                s, e = _two_sum(v[0], b)
                res = round_exact(s, e, fmt)
            else:  # fma: a*b is exact in float64
                s, e = _two_sum(v[0] * v[1], v[2])
                res = round_exact(s, e, fmt)
        if ftz:
            res = _ftz(res, fmt)
        return _to_bits(res, fmt)

    def h(x):
        halves = [_split(np.broadcast_to(np.asarray(r(x)), (x.n,)), packed) for r in srcs]
        out = [one([hv[k] for hv in halves]) for k in range(2 if packed else 1)]
        wr(x, _join(out, packed))
    return h


def _setp(ins: Instr, t: str):
    from .ops_convert import _BOOL, _CMP, compare, write_predicates

    if t not in ("f16", "bf16"):
        raise Unsupported(f"opcode {ins.full}")
    cmp = next(m for m in ins.mods if m in _CMP)
    bop = next((m for m in ins.mods if m in _BOOL), None)
    o = ins.operands
    ra, rb = reader(o[1], np.uint16), reader(o[2], np.uint16)
    rc = reader(o[3], np.bool_) if bop else None
    if isinstance(o[0], Pair):
        wp, wq = writer(o[0].first, np.bool_), writer(o[0].second, np.bool_)
    else:
        wp, wq = writer(o[0], np.bool_), None

    def h(x):
        write_predicates(x, compare(cmp, _values(ra(x), t), _values(rb(x), t), True), bop, rc, wp, wq)
    return h


def _cvt(ins: Instr, types):
    from . import fp

    if len(types) < 2:
        raise Unsupported(f"opcode {ins.full}")
    dst, src = types[0], types[1]
    mods = ins.mods
    o = ins.operands
    if any(m in mods for m in ("rz", "rm", "rp", "rzi", "rmi", "rpi", "sat", "relu", "satfinite")) and dst in _HALF:
        raise Unsupported(f"opcode {ins.full}")
    if dst in ("f16x2", "bf16x2"):
        # cvt.rn.f16x2.f32 d, a, b: d = {upper: a, lower: b}, each rounded to nearest even
        if src != "f32":
            raise Unsupported(f"opcode {ins.full}")
        ra, rb, wr = reader(o[1], np.float32), reader(o[2], np.float32), writer(o[0], np.uint32)
        fmt = dst[:-2]

        def h(x):
            hi = _from_float(np.broadcast_to(np.asarray(ra(x)), (x.n,)), fmt)
            lo = _from_float(np.broadcast_to(np.asarray(rb(x)), (x.n,)), fmt)
            wr(x, _join([lo, hi], True))
        return h
    if src in ("f16x2", "bf16x2"):
        raise Unsupported(f"opcode {ins.full}")
    if dst in ("f16", "bf16"):
        ra, wr = reader(o[1], DTYPES[src]), writer(o[0], np.uint16)
        if src in ("f16", "bf16"):
            if src == dst and not any(m in mods for m in ("rni", "rzi", "rmi", "rpi")):
                return lambda x: wr(x, np.asarray(ra(x)).astype(np.uint16))
            if src == dst:
                raise Unsupported(f"opcode {ins.full}")
            return lambda x: wr(x, _from_float(_values(ra(x), src), dst))
        return lambda x: wr(x, _from_float(np.asarray(ra(x)), dst))
    # from f16/bf16 to a wider float or an integer
    ra = reader(o[1], np.uint16)
    ddt = np.dtype(DTYPES[dst])
    wr = writer(o[0], ddt)
    if dst in ("f32", "f64"):
        return lambda x: wr(x, _values(ra(x), src).astype(ddt))  # exact
    rnd = next((m for m in mods if m in ("rni", "rzi", "rmi", "rpi")), "rzi")
    dname = {"b": "u"}.get(dst[0], dst[0]) + dst[1:]
    return lambda x: wr(x, fp.cvt_float_to_int(np.atleast_1d(_values(ra(x), src).astype(np.float32)), dname, rnd))


def _from_float(v: np.ndarray, fmt: str) -> np.ndarray:
    """A float32/float64 (or integer) array -> f16 or bf16 bits, one rounding to nearest even."""
    v = np.asarray(v)
    if fmt == "f16":
        if v.dtype.kind in "iu":
            v = v.astype(np.float64)  # exact for 32-bit integers; then one rounding
        bits = v.astype(np.float16).view(np.uint16)
        return np.where(np.isnan(v), np.uint16(0x7FFF), bits).astype(np.uint16)
    if v.dtype == np.float32:
        return f32_to_bf16(v)
    return _to_bits(round_exact(v.astype(np.float64), None, "bf16"), "bf16")
