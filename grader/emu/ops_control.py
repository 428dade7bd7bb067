"""Control flow: bra, ret/exit, call (vprintf, __assertfail), trap, and the ordering no-ops."""

from __future__ import annotations

import numpy as np

from .cfg import branch_target
from .operands import Unsupported, reader
from .ptx import Addr, Group, Instr, Sym

_NOOPS = {"membar", "fence", "nanosleep", "pmevent", "prefetch", "prefetchu", "griddepcontrol"}


def decode(ins: Instr, ctx, pc: int):
    """Handler for a control-flow instruction, or None if not one of ours."""
    op = ins.opcode
    if op == "bra":
        if "uni" not in ins.mods and len(ins.operands) != 1:
            raise Unsupported(f"opcode {ins.full}")
        target = branch_target(ins, ctx.labels)
        return lambda x: x.m.branch(x, target)
    if op in ("ret", "exit"):
        return lambda x: x.m.exit_lanes(x)
    if op in ("trap", "brkpt"):
        return _trap(ins, "the kernel executed trap")
    if op == "call":
        return _call(ins, ctx, pc)
    if op in _NOOPS:
        return lambda x: None
    return None


def _trap(ins: Instr, what: str):
    def h(x):
        if x.mask.any():
            from .machine import Stop

            where = f" at line {ins.line}" if ins.line else ""
            raise Stop("trap", f"{what}{where}")

    return h


def _call(ins: Instr, ctx, pc: int):
    callee = None
    for op in ins.operands:
        if isinstance(op, Sym):
            callee = op.name
            break
    if callee == "vprintf":
        return _vprintf(ins, ctx, pc)
    if callee == "__assertfail":
        return _trap(ins, "assert() failed")
    if callee is None and any(isinstance(o, Group) for o in ins.operands):
        raise Unsupported("indirect call")
    raise Unsupported(f"call to {callee}")  # coverage.REFUSED says why (recursion, extern, ...)


def _param_source(ctx, pc: int, name: str):
    """The operand stored into call parameter `name` by the `st.param` of this call sequence."""
    for ins in reversed(ctx.kernel.instrs[max(0, pc - 16):pc]):
        if ins.opcode == "call":
            break  # the previous call's sequence: ours stored nothing under that name
        if ins.opcode == "st" and "param" in ins.mods and isinstance(ins.operands[0], Addr):
            base = ins.operands[0].base
            if isinstance(base, Sym) and base.name == name and ins.operands[0].offset == 0:
                return ins.operands[1]
    return None


def _vprintf(ins: Instr, ctx, pc: int):
    """`call vprintf, (fmt, args)`: hand each masked lane's call to the launch's PrintfLog.

    The argument registers are the ones the call sequence stored into its two `.param`s; they
    still hold those values at the call. The call returns 0 (ld.param of retval reads 0).
    """
    groups = [o for o in ins.operands if isinstance(o, Group)]
    names = [it.name for it in groups[-1].items] if groups else []
    srcs = [_param_source(ctx, pc, n) for n in names[:2]]
    if len(srcs) != 2 or srcs[0] is None:
        return lambda x: None  # not the shape NVRTC emits: print nothing rather than guess
    fmt = reader(srcs[0], np.uint64, ctx.symbols)
    buf = reader(srcs[1], np.uint64, ctx.symbols) if srcs[1] is not None else (lambda x: 0)

    def h(x):
        log = x.m.rec.printf
        if log is not None and x.mask.any():
            log.call(x, fmt(x), buf(x))

    return h
