"""Parse the PTX text NVRTC emits into a `Module` of kernels and instructions.

The parser is deliberately forgiving about what it does not need (directives such as `.pragma`,
cache qualifiers) and exact about what it does: operands, guards, declarations, launch bounds
(`.maxntid`, `.reqntid`) and the `.loc` line of every instruction. Calls of the module's own `.func`
bodies (`__noinline__` device functions) are inlined into each kernel at parse time; recursion is
left as a call, which the machine refuses. Opcodes are not validated here; an unknown opcode only
matters if it is executed, and the machine reports it then.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

# ---------------------------------------------------------------- operands


@dataclass(frozen=True)
class Reg:
    """A register (`%r1`) or special register (`%tid.x`)."""

    name: str


@dataclass(frozen=True)
class Imm:
    """An integer immediate."""

    value: int


@dataclass(frozen=True)
class FImm:
    """A float immediate, kept as its raw bits (`0f3F800000` -> width 32)."""

    bits: int
    width: int


@dataclass(frozen=True)
class Sym:
    """A symbol (variable, label or function name), optionally with a byte offset."""

    name: str
    offset: int = 0


@dataclass(frozen=True)
class Addr:
    """A memory operand `[base+offset]`; base is a Reg, a Sym or None (absolute)."""

    base: Reg | Sym | None
    offset: int


@dataclass(frozen=True)
class Vec:
    """A vector operand `{%f1, %f2}`; items may be Sink."""

    items: tuple


@dataclass(frozen=True)
class Pair:
    """`%r1|%p1`: a destination plus a predicate destination (shfl, setp)."""

    first: object
    second: object


@dataclass(frozen=True)
class Sink:
    """`_`: a destination that is discarded."""


@dataclass(frozen=True)
class Not:
    """`!%p1`: a negated predicate source."""

    inner: Reg


@dataclass(frozen=True)
class Group:
    """`(a, b)`: the parenthesised lists of a `call`."""

    items: tuple


# ---------------------------------------------------------------- declarations


@dataclass(frozen=True)
class ParamInfo:
    """One kernel parameter: name, PTX type (`u64`, `f32`, or `b8` for by-value structs), size."""

    name: str
    ptx_type: str
    size: int
    align: int = 1
    offset: int = 0


@dataclass(frozen=True)
class VarDecl:
    """A `.global/.const/.shared/.local` variable."""

    name: str
    space: str
    align: int
    elem_type: str
    size: int  # bytes; 0 for `.extern .shared x[]`
    init: bytes | None = None
    extern: bool = False


@dataclass(frozen=True)
class Instr:
    """One PTX instruction."""

    opcode: str
    mods: tuple[str, ...]
    operands: tuple
    guard: tuple[str, bool] | None  # (predicate register, negated)
    line: int  # submission source line, 0 when unknown
    text: str
    call_left: str = ""  # a call the parser could not inline: "recursive" or "too-large"

    @property
    def full(self) -> str:
        return ".".join((self.opcode,) + self.mods)


@dataclass
class Kernel:
    """An `.entry` function."""

    name: str
    params: tuple[ParamInfo, ...]
    regs: dict[str, str]  # register name -> declared type
    shared: list[VarDecl]
    local: list[VarDecl]
    instrs: list[Instr]
    labels: dict[str, int]
    param_bytes: int = 0
    rets: tuple[ParamInfo, ...] = ()  # a `.func`'s return parameters (empty for an `.entry`)
    maxntid: tuple[int, ...] = ()  # `.maxntid` (from __launch_bounds__): the most threads a block may have
    reqntid: tuple[int, ...] = ()  # `.reqntid`: the exact block shape the kernel requires


@dataclass
class Module:
    """A parsed PTX module."""

    kernels: dict[str, Kernel] = field(default_factory=dict)
    variables: list[VarDecl] = field(default_factory=list)  # module-scope .global/.const
    extern_shared: list[VarDecl] = field(default_factory=list)
    functions: set[str] = field(default_factory=set)  # declared .func names (callees)
    funcs: dict[str, Kernel] = field(default_factory=dict)  # `.func` bodies, by name (inlined into kernels)


class PTXParseError(ValueError):
    """The text is not PTX this parser understands."""


# ---------------------------------------------------------------- lexing

WARP_SIZE = 32  # the value of the predefined PTX constant WARP_SZ

_TYPE_SIZES = {
    "b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2,
    "b32": 4, "u32": 4, "s32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4,
    "b64": 8, "u64": 8, "s64": 8, "f64": 8, "pred": 1, "b128": 16,
}

_LINE_DIRECTIVES = (".loc", ".file", ".version", ".target", ".address_size", ".section")


def type_size(t: str) -> int:
    """Size in bytes of a PTX fundamental type."""
    return _TYPE_SIZES[t]


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def _statements(text: str):
    """Yield ('dir', line_text) for line directives and ('stmt', text, term) otherwise.

    term is ';', '{', '}' or ':' (a label). Braces inside an initialiser (`= {1, 2}`) and inside
    parentheses stay part of their statement.
    """
    buf: list[str] = []
    paren = 0
    init_brace = 0
    for raw in text.split("\n"):
        s = raw.strip()
        if s.split(None, 1)[:1] and s.split(None, 1)[0] in _LINE_DIRECTIVES and not "".join(buf).strip():
            buf = []
            yield ("dir", s)
            continue
        for ch in raw:
            if ch == "(":
                paren += 1
            elif ch == ")":
                paren -= 1
            if paren == 0 and init_brace == 0:
                if ch == ";":
                    yield ("stmt", "".join(buf).strip(), ";")
                    buf = []
                    continue
                if ch == "{":
                    cur = "".join(buf)
                    if "=" in cur:
                        init_brace += 1
                        buf.append(ch)
                        continue
                    # a vector operand `{%r1, %r2}` inside an instruction
                    if cur.strip() and not cur.strip().startswith(".") and not _is_header(cur):
                        init_brace += 1
                        buf.append(ch)
                        continue
                    yield ("stmt", cur.strip(), "{")
                    buf = []
                    continue
                if ch == "}":
                    yield ("stmt", "".join(buf).strip(), "}")
                    buf = []
                    continue
                if ch == ":" and re.fullmatch(r"\s*[$%\w]+\s*", "".join(buf)):
                    yield ("stmt", "".join(buf).strip(), ":")
                    buf = []
                    continue
            elif init_brace and ch == "}":
                init_brace -= 1
            elif init_brace and ch == "{":
                init_brace += 1
            buf.append(ch)
        buf.append(" ")


def _is_header(text: str) -> bool:
    return bool(re.search(r"\.(entry|func)\b", text))


# ---------------------------------------------------------------- operand parsing

_INT_RE = re.compile(r"^[+-]?(0[xX][0-9a-fA-F]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)[uU]?$")


def _split_top(s: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in s:
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def _parse_int(s: str) -> int:
    s = s.strip().rstrip("uU")
    neg = s.startswith("-")
    s = s.lstrip("+-")
    if s.lower().startswith("0x"):
        v = int(s, 16)
    elif s.lower().startswith("0b"):
        v = int(s[2:], 2)
    elif len(s) > 1 and s.startswith("0"):
        v = int(s, 8)
    else:
        v = int(s)
    return -v if neg else v


def parse_operand(s: str):
    """Parse one operand string."""
    s = s.strip()
    if s == "_":
        return Sink()
    if s == "WARP_SZ":
        # the PTX constant `warpSize` compiles to: 32 on every architecture
        return Imm(WARP_SIZE)
    if s.startswith("!"):
        return Not(Reg(s[1:].strip()))
    if s.startswith("{") and s.endswith("}"):
        return Vec(tuple(parse_operand(p) for p in _split_top(s[1:-1])))
    if s.startswith("(") and s.endswith(")"):
        return Group(tuple(parse_operand(p) for p in _split_top(s[1:-1])))
    if s.startswith("["):
        inner = s[1:-1].strip()
        m = re.fullmatch(r"([^+\-]+?)?\s*(?:([+-])\s*(.+))?", inner)
        if inner and _INT_RE.match(inner):
            return Addr(None, _parse_int(inner))
        base_s, sign, off_s = m.group(1), m.group(2), m.group(3)
        off = 0
        if off_s is not None:
            off = _parse_int(off_s.replace(" ", ""))
            if sign == "-":
                off = -off
        base_s = (base_s or "").strip()
        base = Reg(base_s) if base_s.startswith("%") else Sym(base_s)
        return Addr(base, off)
    if "|" in s:
        a, b = s.split("|", 1)
        return Pair(parse_operand(a), parse_operand(b))
    if re.fullmatch(r"0[fF][0-9a-fA-F]{8}", s):
        return FImm(int(s[2:], 16), 32)
    if re.fullmatch(r"0[dD][0-9a-fA-F]{16}", s):
        return FImm(int(s[2:], 16), 64)
    if _INT_RE.match(s):
        return Imm(_parse_int(s))
    if re.fullmatch(r"[+-]?\d+\.\d*([eE][+-]?\d+)?", s):
        import struct

        return FImm(struct.unpack("<Q", struct.pack("<d", float(s)))[0], 64)
    if s.startswith("%"):
        return Reg(s)
    m = re.fullmatch(r"([$\w.]+)\s*\+\s*(\d+)", s)
    if m:
        return Sym(m.group(1), int(m.group(2)))
    return Sym(s)


# ---------------------------------------------------------------- declarations


def _parse_var(stmt: str, space: str) -> VarDecl:
    init = None
    if "=" in stmt:
        stmt, init_s = stmt.split("=", 1)
        init_s = init_s.strip()
    else:
        init_s = None
    toks = stmt.split()
    extern = ".extern" in toks
    align = 1
    elem = None
    name = None
    for i, t in enumerate(toks):
        if t == ".align":
            align = int(toks[i + 1])
        elif t.startswith(".") and t[1:] in _TYPE_SIZES:
            elem = t[1:]
    name_tok = toks[-1]
    elem = elem or "b8"
    esize = _TYPE_SIZES[elem]
    m = re.fullmatch(r"([$\w.]+)((?:\[\d*\])*)", name_tok)
    if not m:
        raise PTXParseError(f"cannot parse declaration: {stmt}")
    name = m.group(1)
    count = 1
    for d in re.findall(r"\[(\d*)\]", m.group(2)):
        count *= int(d) if d else 0
    size = count * esize
    align = max(align, esize)
    if init_s is not None:
        vals = [v for v in re.split(r"[\s,{}]+", init_s) if v]
        data = bytearray()
        for v in vals:
            if re.fullmatch(r"0[fF][0-9a-fA-F]{8}", v):
                iv = int(v[2:], 16)
            elif re.fullmatch(r"0[dD][0-9a-fA-F]{16}", v):
                iv = int(v[2:], 16)
            elif _INT_RE.match(v):
                iv = _parse_int(v)
            else:
                iv = 0  # symbol address initialisers (generic pointers) are not supported
            data += (iv & ((1 << (8 * esize)) - 1)).to_bytes(esize, "little")
        init = bytes(data[:size]).ljust(size, b"\0")
    return VarDecl(name, space, align, elem, size, init, extern)


def _parse_params(header: str) -> tuple[ParamInfo, ...]:
    m = re.search(r"\((.*)\)", header, flags=re.S)
    if not m:
        return ()
    out = []
    offset = 0
    for p in _split_top(m.group(1)):
        toks = p.split()
        align = None
        ptype = None
        for i, t in enumerate(toks):
            if t == ".align":
                align = int(toks[i + 1])
            elif t.startswith(".") and t[1:] in _TYPE_SIZES:
                ptype = t[1:]
        nm = re.fullmatch(r"([$\w.]+)(?:\[(\d+)\])?", toks[-1])
        name = nm.group(1)
        esize = _TYPE_SIZES[ptype]
        size = esize * (int(nm.group(2)) if nm.group(2) else 1)
        align = align or esize
        offset = (offset + align - 1) // align * align
        out.append(ParamInfo(name, ptype, size, align, offset))
        offset += size
    return tuple(out)


def _parse_loc(d: str, current: int) -> int:
    # `.loc 1 12 5` or `.loc 2 30 1, function_name ..., inlined_at 1 12 5`
    m = re.match(r"\.loc\s+(\d+)\s+(\d+)", d)
    if not m:
        return current
    file_no, line = int(m.group(1)), int(m.group(2))
    inl = re.search(r"inlined_at\s+(\d+)\s+(\d+)", d)
    if file_no == 1:
        return line
    if inl and int(inl.group(1)) == 1:
        return int(inl.group(2))
    return current


def _parse_instr(stmt: str, line: int) -> Instr:
    text = " ".join(stmt.split())
    s = text
    guard = None
    if s.startswith("@"):
        g, s = s.split(None, 1)
        neg = g.startswith("@!")
        guard = (g[2:] if neg else g[1:], neg)
    parts = s.split(None, 1)
    op_full = parts[0]
    rest = parts[1] if len(parts) > 1 else ""
    pieces = op_full.split(".")
    opcode = pieces[0]
    mods = tuple(pieces[1:])
    operands = tuple(parse_operand(p) for p in _split_top(rest)) if rest else ()
    return Instr(opcode, mods, operands, guard, line, text)


def parse(text: str) -> Module:
    """Parse PTX text into a Module.

    Registers and labels declared in a nested `{ }` block (inline asm, call sequences) are local to
    it in PTX and may reuse outer names (`{ .reg .u32 %r1; ... }` shadows the function's `%r1`):
    they get names of their own here, so the flat register file keeps both.
    """
    mod = Module()
    text = _strip_comments(text)
    kernel: Kernel | None = None
    depth = 0
    line = 0
    scopes: list[_Scope] = []  # the nested blocks open inside the current kernel or function
    for item in _statements(text):
        if item[0] == "dir":
            if item[1].startswith(".loc"):
                line = _parse_loc(item[1], line)
            continue
        _, stmt, term = item
        if term == "{":
            if stmt and _is_header(stmt):
                if ".entry" in stmt:
                    name = re.search(r"\.entry\s+([$\w]+)", stmt).group(1)
                    params = _parse_params(stmt)
                    kernel = Kernel(name, params, {}, [], [], [], {})
                    kernel.param_bytes = max((p.offset + p.size for p in params), default=0)
                    mod.kernels[name] = kernel
                else:
                    kernel = _func_header(stmt)
                    mod.functions.add(kernel.name)
                    mod.funcs[kernel.name] = kernel
                _bounds(stmt, kernel)
                depth = 1
                line = 0
                scopes = []
            else:
                if stmt:
                    _handle_stmt(stmt, mod, kernel, line, scopes)
                if depth:
                    depth += 1
                    if kernel is not None:
                        scopes.append(_Scope({}, {}, len(kernel.instrs)))
            continue
        if term == "}":
            if stmt:
                _handle_stmt(stmt, mod, kernel, line, scopes)
            if depth:
                depth -= 1
                if scopes:
                    _close_scope(scopes.pop(), kernel)
                if depth == 0:
                    kernel = None
            continue
        if term == ":":
            if kernel is not None:
                name = stmt
                if scopes:
                    name = scopes[-1].labels[stmt] = f"{stmt}#s{len(kernel.labels)}"
                kernel.labels[name] = len(kernel.instrs)
            continue
        if stmt:
            _handle_stmt(stmt, mod, kernel, line, scopes)
    for k in mod.kernels.values():
        _inline_calls(mod, k)
    return mod


@dataclass
class _Scope:
    """A nested block: its registers and labels (PTX name -> unique name), and where it starts."""

    regs: dict[str, str]
    labels: dict[str, str]
    start: int


def _close_scope(scope: _Scope, kernel: Kernel) -> None:
    """Point the block's branches at its own labels (a branch may precede its label)."""
    if not scope.labels:
        return
    for i in range(scope.start, len(kernel.instrs)):
        ins = kernel.instrs[i]
        if any(isinstance(o, Sym) and o.name in scope.labels for o in ins.operands):
            ops = tuple(Sym(scope.labels[o.name], o.offset) if isinstance(o, Sym) and o.name in scope.labels else o
                        for o in ins.operands)
            kernel.instrs[i] = dataclasses.replace(ins, operands=ops)


def _map_operand(op, sym_reg, reg_name=None):
    """The operand rebuilt: a bare symbol that `sym_reg(name)` names a register for becomes that
    register, a register is renamed by `reg_name` (when given), and vectors, groups, pairs, negations
    and address bases are rebuilt around what changed inside them."""
    if isinstance(op, Reg):
        return Reg(reg_name(op.name)) if reg_name is not None else op
    if isinstance(op, Sym):
        reg = sym_reg(op.name) if op.offset == 0 else None
        return Reg(reg) if reg is not None else op
    if isinstance(op, Not):
        return Not(_map_operand(op.inner, sym_reg, reg_name))
    if isinstance(op, (Vec, Group)):
        return type(op)(tuple(_map_operand(i, sym_reg, reg_name) for i in op.items))
    if isinstance(op, Pair):
        return Pair(_map_operand(op.first, sym_reg, reg_name), _map_operand(op.second, sym_reg, reg_name))
    if isinstance(op, Addr) and op.base is not None:
        base = _map_operand(op.base, sym_reg, reg_name)
        return Addr(base, op.offset) if base is not op.base else op
    return op


def _scoped(op, names: dict[str, str]):
    """An operand with the registers of enclosing nested blocks given their unique names."""
    return _map_operand(op, names.get, lambda name: names.get(name, name))


def _func_header(stmt: str) -> Kernel:
    """A `.func` header: `.func (.param .b32 ret) name(.param .b32 a, ...)`."""
    m = re.search(r"\.func\s+(?:\((.*?)\)\s*)?([$\w]+)\s*(?:\((.*)\))?", stmt, flags=re.S)
    if not m:
        raise PTXParseError(f"cannot parse function header: {stmt[:80]}")
    rets = _parse_params(f"({m.group(1)})") if m.group(1) else ()
    params = _parse_params(f"({m.group(3)})") if m.group(3) else ()
    return Kernel(m.group(2), params, {}, [], [], [], {}, rets=rets)


def _bounds(stmt: str, kernel: Kernel) -> None:
    """`.maxntid x, y, z` / `.reqntid x, y, z` after a header: the launch bounds the kernel declares."""
    for key in ("maxntid", "reqntid"):
        m = re.search(rf"\.{key}\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?", stmt)
        if m:
            setattr(kernel, key, tuple(int(g) for g in m.groups() if g is not None))


def _handle_stmt(stmt: str, mod: Module, kernel: Kernel | None, line: int, scopes: list | None = None) -> None:
    toks = stmt.split()
    head = toks[0]
    if kernel is None:
        # module scope
        if _is_header(stmt):
            nm = re.search(r"\.func\s+(?:\([^)]*\)\s*)?([$\w]+)", stmt)
            if nm:
                mod.functions.add(nm.group(1))
            return
        if ".global" in toks or ".const" in toks:
            space = "global" if ".global" in toks else "const"
            mod.variables.append(_parse_var(stmt, space))
        elif ".shared" in toks:
            mod.extern_shared.append(_parse_var(stmt, "shared"))
        return
    if head.startswith("."):
        if head == ".reg":
            _declare_regs(stmt, kernel, scopes[-1].regs if scopes else None)
        elif head == ".shared" or (head == ".extern" and ".shared" in toks):
            kernel.shared.append(_parse_var(stmt, "shared"))
        elif head == ".local":
            kernel.local.append(_parse_var(stmt, "local"))
        # .param inside call blocks, .maxntid, .pragma ...: nothing to do
        return
    ins = _parse_instr(stmt, line)
    if scopes and any(sc.regs for sc in scopes):
        names = {k: v for sc in scopes for k, v in sc.regs.items()}  # inner blocks override outer ones
        guard = (names.get(ins.guard[0], ins.guard[0]), ins.guard[1]) if ins.guard else None
        ins = dataclasses.replace(ins, operands=tuple(_scoped(o, names) for o in ins.operands), guard=guard)
    if any(_names_scoped_reg(o, kernel.regs) for o in ins.operands):
        ins = dataclasses.replace(ins, operands=tuple(_as_reg(o, kernel.regs) for o in ins.operands))
    kernel.instrs.append(ins)


def _names_scoped_reg(op, regs) -> bool:
    """Whether an operand mentions a register declared without `%` (inline asm's scoped
    `{ .reg .f16 low, high; mov.b32 {low, high}, %r1; }`), which the operand parser took for a symbol."""
    if isinstance(op, Sym):
        return op.offset == 0 and op.name in regs
    if isinstance(op, (Vec, Group)):
        return any(_names_scoped_reg(i, regs) for i in op.items)
    if isinstance(op, Pair):
        return _names_scoped_reg(op.first, regs) or _names_scoped_reg(op.second, regs)
    if isinstance(op, Addr):
        return isinstance(op.base, Sym) and op.base.offset == 0 and op.base.name in regs
    return False


def _as_reg(op, regs):
    """An operand whose bare symbols that name declared registers are those registers."""
    return _map_operand(op, lambda name: name if name in regs else None)


def _declare_regs(stmt: str, kernel: Kernel, scope: dict[str, str] | None = None) -> None:
    """Declare registers; inside a nested block (`scope`), each under a name of its own."""
    toks = stmt.replace(",", " ").split()
    rtype = None

    def declare(name: str) -> None:
        if scope is not None:
            unique = f"{name}#s{len(kernel.regs)}"  # `#` cannot occur in a PTX name
            scope[name] = unique
            name = unique
        kernel.regs[name] = rtype

    for t in toks[1:]:
        if t.startswith(".") and t[1:] in _TYPE_SIZES:
            rtype = t[1:]
            continue
        if t.startswith(".v"):
            continue
        m = re.fullmatch(r"(%?[$\w]+)<(\d+)>", t)
        if m:
            for i in range(int(m.group(2))):
                declare(f"{m.group(1)}{i}")
        elif rtype:
            declare(t)


# ---------------------------------------------------------------- inlining `.func` calls

MAX_INLINED_INSTRS = 50_000  # a kernel grown past this by inlining keeps its remaining calls (refused)


@dataclass(frozen=True)
class _Label:
    name: str


def _items(k: Kernel) -> list:
    """The kernel's instructions with its labels interleaved as _Label markers."""
    at: dict[int, list[str]] = {}
    for name, i in k.labels.items():
        at.setdefault(i, []).append(name)
    out: list = []
    for i, ins in enumerate(k.instrs):
        out += [_Label(n) for n in at.get(i, ())]
        out.append(ins)
    out += [_Label(n) for n in at.get(len(k.instrs), ())]
    return out


def _inline_calls(mod: Module, k: Kernel) -> None:
    """Replace each `call` of a `.func` defined in the module by the function's body.

    Registers, labels and `.local` arrays of each inlined copy get names of their own; `ret` becomes a
    branch to the end of the copy; the call's `.param` traffic becomes register moves (scalars) or
    per-thread local memory (aggregates). A call that recurses, or that would grow the kernel past
    MAX_INLINED_INSTRS, stays a `call` marked with why: the machine refuses it when it runs.
    """
    if not mod.funcs or not any(i.opcode == "call" for i in k.instrs):
        return
    counter = [0, 0]  # copies inlined, instructions they added
    items = _expand(mod, k, _items(k), (), counter)
    k.instrs, k.labels = [], {}
    for it in items:
        if isinstance(it, _Label):
            k.labels[it.name] = len(k.instrs)
        else:
            k.instrs.append(it)


def _callee(ins: Instr) -> str | None:
    return next((o.name for o in ins.operands if isinstance(o, Sym)), None)


def _param_name(op) -> str | None:
    if isinstance(op, Addr) and isinstance(op.base, Sym):
        return op.base.name
    return None


def _expand(mod: Module, k: Kernel, items: list, stack: tuple[str, ...], counter: list) -> list:
    """`items` with each call of a module function replaced by its renamed body, recursively."""
    out: list = []
    pending: dict[int, Instr] = {}
    for idx, it in enumerate(items):
        it = pending.pop(idx, it)
        if isinstance(it, _Label) or it.opcode != "call" or _callee(it) not in mod.funcs:
            out.append(it)
            continue
        name = _callee(it)
        if name in stack:
            out.append(dataclasses.replace(it, call_left="recursive"))
            continue
        func = mod.funcs[name]
        if len(k.instrs) + counter[1] + len(func.instrs) > MAX_INLINED_INSTRS:
            out.append(dataclasses.replace(it, call_left="too-large"))
            continue
        counter[0] += 1
        counter[1] += len(func.instrs)
        n = counter[0]
        groups = [o for o in it.operands if isinstance(o, Group)]
        ret_names = [o.name for o in groups[0].items] if len(groups) == 2 else []
        arg_names = [o.name for o in groups[-1].items] if groups else []
        # the caller's st.param before the call and ld.param after it, within its call sequence
        before = []
        j = len(out) - 1
        while j >= 0 and len(before) < 64 and isinstance(out[j], Instr) and out[j].opcode != "call":
            if out[j].opcode == "st" and "param" in out[j].mods and _param_name(out[j].operands[0]) in arg_names:
                before.append(j)
            j -= 1
        after = []
        j = idx + 1
        while j < len(items) and len(after) < 64 and isinstance(items[j], Instr) and items[j].opcode != "call":
            if items[j].opcode == "ld" and "param" in items[j].mods and _param_name(items[j].operands[1]) in ret_names:
                after.append(j)
            j += 1
        slots: dict[str, object] = {}  # the caller's param name -> slot
        own: dict[str, object] = {}  # the callee's param name -> slot (its body's nested calls reuse caller names)
        body_uses = [i for i in func.instrs if i.opcode in ("ld", "st") and "param" in i.mods]
        for names, infos in ((arg_names, func.params), (ret_names, func.rets)):
            for caller_name, info in zip(names, infos):
                uses = [out[j] for j in before] + [items[j] for j in after] + body_uses
                uses = [u for u in uses if _param_name(u.operands[0 if u.opcode == "st" else 1]) in (caller_name, info.name)]
                slot = _slot(k, info, uses, n)
                slots[caller_name] = slot
                own[info.name] = slot
        for j in before:
            out[j] = _param_access(out[j], slots)
        for j in after:
            pending[j] = _param_access(items[j], slots)
        end = f"$end#inl{n}"
        if it.guard is not None:
            out.append(Instr("bra", (), (Sym(end),), (it.guard[0], not it.guard[1]), it.line, f"(call {name})"))
        body = _renamed_body(k, func, n, own, end)
        out += _expand(mod, k, body, stack + (name,), counter)
        out.append(_Label(end))
    return out


def _slot(k: Kernel, info: ParamInfo, uses: list, n: int):
    """Where one call parameter lives in the inlined copy: a register (a scalar moved whole) or a
    per-thread `.local` array (an aggregate, or one accessed in parts)."""
    size = info.size
    scalar = size in (2, 4, 8) and _TYPE_SIZES.get(info.ptx_type) == size
    for u in uses:
        a = u.operands[0 if u.opcode == "st" else 1]
        data = u.operands[1 if u.opcode == "st" else 0]
        ts = [m for m in u.mods if m in _TYPE_SIZES]
        if a.base.offset or a.offset or isinstance(data, Vec) or not ts or _TYPE_SIZES[ts[-1]] != size:
            scalar = False
    if scalar:
        reg = f"%{info.name}#inl{n}"
        k.regs[reg] = f"b{size * 8}"
        return Reg(reg)
    var = VarDecl(f"{info.name}#inl{n}", "local", max(info.align, 8), "b8", max(size, 1))
    k.local.append(var)
    return var


def _param_access(ins: Instr, slots: dict) -> Instr:
    """A `st.param`/`ld.param` of a call parameter, rewritten onto its slot."""
    ai = 0 if ins.opcode == "st" else 1
    a = ins.operands[ai]
    slot = slots.get(_param_name(a))
    if slot is None:
        return ins
    if isinstance(slot, Reg):
        bits = f"b{_TYPE_SIZES[[m for m in ins.mods if m in _TYPE_SIZES][-1]] * 8}"
        ops = (slot, ins.operands[1]) if ins.opcode == "st" else (ins.operands[0], slot)
        return dataclasses.replace(ins, opcode="mov", mods=(bits,), operands=ops)
    mods = tuple("local" if m == "param" else m for m in ins.mods)
    ops = list(ins.operands)
    ops[ai] = Addr(Sym(slot.name), a.base.offset + a.offset)
    return dataclasses.replace(ins, mods=mods, operands=tuple(ops))


def _renamed_body(k: Kernel, func: Kernel, n: int, slots: dict, end: str) -> list:
    """The function's body for inlined copy n: fresh register, label and local names; `ret` a branch
    to `end`; parameter accesses onto their slots."""
    names: dict[str, str] = {}
    for r, t in func.regs.items():
        new = f"{r}#inl{n}"  # `#` cannot occur in a PTX name: no clash with the caller's
        names[r] = new
        k.regs[new] = t
    for lbl in func.labels:
        names[lbl] = f"{lbl}#inl{n}"
    for v in func.local:
        names[v.name] = f"{v.name}#inl{n}"
        k.local.append(dataclasses.replace(v, name=names[v.name]))
    for v in func.shared:
        if all(s.name != v.name for s in k.shared):
            k.shared.append(v)  # a function's static shared array is one per block, however often called

    def ren(op):
        if isinstance(op, Reg):
            return Reg(names.get(op.name, op.name))
        if isinstance(op, Sym):
            return Sym(names.get(op.name, op.name), op.offset)
        if isinstance(op, Addr):
            return Addr(ren(op.base) if op.base is not None else None, op.offset)
        if isinstance(op, Vec):
            return Vec(tuple(ren(i) for i in op.items))
        if isinstance(op, Group):
            return Group(tuple(ren(i) for i in op.items))
        if isinstance(op, Pair):
            return Pair(ren(op.first), ren(op.second))
        if isinstance(op, Not):
            return Not(ren(op.inner))
        return op

    out: list = []
    for it in _items(func):
        if isinstance(it, _Label):
            out.append(_Label(names[it.name]))
            continue
        guard = (names.get(it.guard[0], it.guard[0]), it.guard[1]) if it.guard else None
        if it.opcode == "ret":
            out.append(dataclasses.replace(it, opcode="bra", mods=(), operands=(Sym(end),), guard=guard))
            continue
        ins = dataclasses.replace(it, operands=tuple(ren(o) for o in it.operands), guard=guard)
        if ins.opcode in ("ld", "st") and "param" in ins.mods:
            ins = _param_access(ins, slots)
        out.append(ins)
    return out
