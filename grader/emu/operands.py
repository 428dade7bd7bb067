"""Operand access: turn a parsed operand into a reader or writer closure over the register file.

Registers are stored as raw bits (uint8/16/32/64, bool for predicates), one array per register over
every lane of the launch. An instruction views them in its own type: a wider register read at a
narrower type is truncated, a narrower one is zero- or sign-extended, exactly as PTX's relaxed
operand-size rules say. Readers and writers are built once per instruction, at decode time.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .ptx import Addr, FImm, Imm, Not, Reg, Sink, Sym, Vec, type_size

DTYPES = {
    "u8": np.uint8, "s8": np.int8, "b8": np.uint8,
    "u16": np.uint16, "s16": np.int16, "b16": np.uint16, "f16": np.uint16, "bf16": np.uint16,
    "u32": np.uint32, "s32": np.int32, "b32": np.uint32, "f32": np.float32,
    "f16x2": np.uint32, "bf16x2": np.uint32,
    "u64": np.uint64, "s64": np.int64, "b64": np.uint64, "f64": np.float64,
    "pred": np.bool_,
}
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
SINT = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}

SPECIAL_PREFIXES = (
    "%tid", "%ntid", "%ctaid", "%nctaid", "%laneid", "%warpid", "%nwarpid", "%lanemask",
    "%clock", "%globaltimer", "%smid", "%nsmid", "%gridid", "%dynamic_smem_size",
    "%total_smem_size", "%aggr_smem_size", "%envreg", "%pm", "%cluster", "%nclusterid",
    "%is_explicit_cluster", "%reserved_smem", "%current_graph_exec",
)


_XYZ = (".x", ".y", ".z")
# The special registers the machine defines (machine.Machine.special). Cluster registers, %envreg
# and the performance-monitor counters %pm* are not among them: a kernel that reads one is refused.
KNOWN_SPECIAL = frozenset(
    [f"{r}{c}" for r in ("%tid", "%ntid", "%ctaid", "%nctaid") for c in _XYZ]
    + ["%laneid", "%warpid", "%nwarpid", "%smid", "%nsmid", "%gridid",
       "%lanemask_eq", "%lanemask_le", "%lanemask_lt", "%lanemask_ge", "%lanemask_gt",
       "%clock", "%clock_hi", "%clock64", "%globaltimer", "%globaltimer_lo", "%globaltimer_hi",
       "%dynamic_smem_size", "%total_smem_size", "%aggr_smem_size"]
)


class Unsupported(Exception):
    """An instruction or operand form the interpreter does not implement (a grader limitation)."""


def storage_dtype(ptx_type: str):
    """Raw-bits storage dtype of a register declared with `ptx_type`."""
    if ptx_type == "pred":
        return np.bool_
    return UINT[type_size(ptx_type)]


def is_special(name: str) -> bool:
    return name.startswith(SPECIAL_PREFIXES)


def convert_bits(v: np.ndarray, dt) -> np.ndarray:
    """View/convert raw register bits `v` as dtype `dt` under PTX's relaxed size rules."""
    dt = np.dtype(dt)
    if v.dtype == np.bool_:
        return v if dt == np.bool_ else v.astype(dt)
    if dt == np.bool_:
        return v != 0
    rw, tw = v.dtype.itemsize, dt.itemsize
    if rw == tw:
        return v.view(dt)
    if rw > tw:
        return v.astype(UINT[tw]).view(dt)
    if dt.kind == "i":
        return v.view(SINT[rw]).astype(dt)
    return v.astype(UINT[tw]).view(dt)


def to_storage(value, storage) -> np.ndarray:
    """Convert a typed value to a register's raw storage dtype (sign-extending signed ints)."""
    value = np.asarray(value)
    st = np.dtype(storage)
    if st == np.bool_:
        return value.astype(np.bool_)
    if value.dtype == np.bool_:
        return value.astype(st)
    vw, rw = value.dtype.itemsize, st.itemsize
    if vw == rw:
        return value.view(st) if value.dtype != st else value
    if vw < rw and value.dtype.kind == "i":
        return value.astype(SINT[rw]).view(st)
    return value.view(UINT[vw]).astype(st)


def imm_value(op, dt):
    """An immediate operand as a NumPy scalar of dtype `dt` (NEP 50 safe)."""
    dt = np.dtype(dt)
    if isinstance(op, FImm):
        raw = np.array(op.bits, dtype=UINT[op.width // 8]).view(np.float32 if op.width == 32 else np.float64)
        if dt.kind == "f":
            return raw.astype(dt)[()] if raw.dtype != dt else raw[()]
        if dt.itemsize * 8 == op.width:
            return np.array(op.bits, dtype=UINT[dt.itemsize]).view(dt)[()]
        return raw.astype(dt)[()]
    v = int(op.value)
    if dt == np.bool_:
        return np.bool_(v != 0)
    if dt.kind == "f":
        return dt.type(v)
    return np.array(v & ((1 << (8 * dt.itemsize)) - 1), dtype=UINT[dt.itemsize]).view(dt)[()]


def reader(op, dt, symbols: dict[str, int] | None = None) -> Callable:
    """A closure x -> value of dtype `dt` (array over x's lanes, or a scalar) for a source operand."""
    dt = np.dtype(dt)
    if isinstance(op, (Imm, FImm)):
        val = imm_value(op, dt)
        return lambda x: val
    if isinstance(op, Not):
        inner = reader(op.inner, np.bool_)
        return lambda x: ~inner(x)
    if isinstance(op, Reg):
        name = op.name
        if is_special(name):
            if name not in KNOWN_SPECIAL:
                raise Unsupported(f"special register {name}")
            return lambda x: convert_bits(x.m.special(name)[x.idx], dt)

        def read_reg(x, name=name, dt=dt):
            v = x.m.regs[name][x.idx]
            return v if v.dtype == dt else convert_bits(v, dt)

        return read_reg
    if isinstance(op, Sym):
        if symbols is None or op.name not in symbols:
            raise Unsupported(f"symbol {op.name}")
        addr = symbols[op.name] + op.offset
        val = np.array(addr & ((1 << (8 * dt.itemsize)) - 1), dtype=UINT[dt.itemsize]).view(dt)[()]
        return lambda x: val
    raise Unsupported(f"operand {op!r}")


def writer(op, dt) -> Callable:
    """A closure (x, value) that stores `value` into the destination for x's masked lanes."""
    if isinstance(op, Sink):
        return lambda x, v: None
    if not isinstance(op, Reg):
        raise Unsupported(f"destination {op!r}")
    name = op.name

    def write(x, value, name=name):
        dst = x.m.regs[name]
        val = to_storage(value, dst.dtype)
        if val.ndim and val.shape != x.mask.shape:
            val = np.broadcast_to(val, x.mask.shape)
        idx = x.idx
        if isinstance(idx, slice):
            np.copyto(dst[idx], val, where=x.mask)
        else:
            sel = idx[x.mask]
            dst[sel] = val[x.mask] if val.ndim else val

    return write


def vec_items(op) -> tuple:
    """The items of a vector operand, or (op,) for a scalar one."""
    return op.items if isinstance(op, Vec) else (op,)


def addr_parts(op: Addr):
    return op.base, op.offset


def type_mods(ins) -> list[str]:
    """The type qualifiers of an instruction, in order (`cvt.rn.f32.s32` -> ['f32', 's32'])."""
    return [m for m in ins.mods if m in DTYPES]
