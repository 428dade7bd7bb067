"""What the emulator declines on purpose, and the words it declines with.

REFUSED maps a construct (an opcode form or its leading part, a special register prefix, a directive
or a state space) to what the student reads; `refusal` finds the message for one instruction. The
emulator's decoder asks it when it meets an instruction it does not run, and the coverage census
(grader.emu.coverage) reads the same table: the census stands on the emulator, so this table lives
below both rather than in the census.
"""
from __future__ import annotations

from . import ptx as ptx_mod
from .operands import KNOWN_SPECIAL, is_special

# Constructs the emulator declines on purpose. Key: an opcode form (or its leading part), a special
# register prefix, a directive or a state space; value: what the student reads (the emulator adds
# the source line). Matching is on whole qualifiers: "mma" covers "mma.sync.aligned...", not "mmax".
REFUSED: dict[str, str] = {
    "call recursive": "recursion (a __device__ function that calls itself, directly or through another)",
    "call indirect": "calls through a function pointer or virtual function",
    "call too-large": "device-function calls nested too deep or too large to inline",
    "call extern": "calls to a device function whose body is not in the file",
    "tex": "texture fetches (tex)", "tld4": "texture gathers (tld4)", "txq": "texture queries (txq)",
    "suld": "surface loads (suld)", "sust": "surface stores (sust)", "sured": "surface reductions (sured)",
    "suq": "surface queries (suq)",
    "wmma": "tensor-core matrix operations (wmma)", "mma": "tensor-core matrix operations (mma)",
    "wgmma": "warpgroup tensor-core operations (wgmma)", "ldmatrix": "ldmatrix", "stmatrix": "stmatrix",
    "cp.async.bulk": "bulk asynchronous copies (TMA, cp.async.bulk)", "mbarrier": "mbarrier objects",
    "barrier.cluster": "cluster barriers (thread block clusters)",
    "alloca": "dynamically sized stack arrays (alloca)", "stacksave": "dynamic stack allocation (stacksave)",
    "stackrestore": "dynamic stack allocation (stackrestore)",
    "setmaxnreg": "setmaxnreg", "getctarank": "cluster shared memory (getctarank)",
    "mapa": "cluster shared memory (mapa)",
    "%cluster": "thread block cluster special registers (%cluster...)",
    "%nclusterid": "thread block cluster special registers (%nclusterid)",
    "%is_explicit_cluster": "thread block cluster special registers (%is_explicit_cluster)",
    "%envreg": "driver environment registers (%envreg)",
    "%pm": "performance-monitor counters (%pm)",
    "%reserved_smem": "reserved shared memory registers (%reserved_smem...)",
    "%current_graph_exec": "CUDA graph registers (%current_graph_exec)",
    ".callprototype": "calls through a function pointer (.callprototype)",
    ".tex": "texture references (.tex)", ".texref": "texture references (.texref)",
    ".surfref": "surface references (.surfref)", ".samplerref": "sampler references (.samplerref)",
    ".reqnctapercluster": "thread block clusters (.reqnctapercluster)",
    ".explicitcluster": "thread block clusters (.explicitcluster)",
    ".maxclusterrank": "thread block clusters (.maxclusterrank)",
    ".shared::cluster": "distributed shared memory (.shared::cluster)",
}

# Qualifiers that change nothing a kernel computes (cache hints, `.uni`, `.aligned`): left out of a form.
_IGNORED_MODS = {"uni", "ca", "cg", "cs", "lu", "cv", "wb", "wt", "aligned"}


def refused_key(name: str) -> str | None:
    """The REFUSED key that covers a construct's name (whole qualifiers only), else None."""
    for key in REFUSED:
        if name == key or name.startswith((key + ".", key + " ", key + "::")):
            return key
        if key.startswith("%") and name.startswith(key):
            return key
    return None


def opcode_form(ins: ptx_mod.Instr) -> str:
    """The opcode and the qualifiers that matter (`ld.global.nc.L1::no_allocate.v4.f32` ->
    `ld.global.nc.v4.f32`); a call is named by what it calls (`call func`, `call vprintf`, ...)."""
    if ins.opcode == "call":
        return f"call {call_kind(ins)}"
    mods = [m for m in ins.mods if m not in _IGNORED_MODS and not m.startswith(("L1::", "L2::"))]
    return ".".join([ins.opcode, *mods])


def call_kind(ins: ptx_mod.Instr) -> str:
    """What a `call` calls: vprintf, __assertfail, func (an inlined-away body), recursive, indirect,
    too-large or extern."""
    callee = next((o.name for o in ins.operands if isinstance(o, ptx_mod.Sym)), None)
    if callee is None:
        return "indirect"
    if callee in ("vprintf", "__assertfail"):
        return callee
    return ins.call_left or "extern"


def refusal(ins: ptx_mod.Instr) -> str | None:
    """The REFUSED message for an instruction the emulator declines on purpose, else None."""
    key = refused_key(opcode_form(ins))
    if key is not None:
        return REFUSED[key]
    for op in flat_operands(ins.operands):
        if isinstance(op, ptx_mod.Reg) and is_special(op.name) and op.name not in KNOWN_SPECIAL:
            key = refused_key(op.name)
            if key is not None:
                return f"{REFUSED[key]}: {op.name}"
    return None


def flat_operands(ops):
    """Every plain operand inside vectors, groups, pairs, negations and addresses."""
    for o in ops:
        if isinstance(o, (ptx_mod.Vec, ptx_mod.Group)):
            yield from flat_operands(o.items)
        elif isinstance(o, ptx_mod.Pair):
            yield from flat_operands((o.first, o.second))
        elif isinstance(o, ptx_mod.Not):
            yield o.inner
        elif isinstance(o, ptx_mod.Addr):
            yield o.base
        else:
            yield o
