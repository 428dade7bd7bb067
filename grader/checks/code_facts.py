"""What a submission's code contains, read from its PTX (or, with no PTX here, from its source):
atomics and their memory space, shared memory and a two-dimensional tile, barriers, a maximum and an
exponential. Below both grader.checks.evidence (the facts hints are chosen by) and
grader.checks.findings (whose messages must not advise what the code already does)."""
from __future__ import annotations

import re
from pathlib import Path

from .base import Context

_PRED = r"^\s*(?:@!?%\w+\s+)?"
_ATOMIC = re.compile(_PRED + r"(atom|red)((?:\.[\w:]+)*)", re.M)
_SHARED = re.compile(r"\.shared\b|\bld\.shared|\bst\.shared")
_BARRIER = re.compile(_PRED + r"(?:bar|barrier)\.(?:sync|red|arrive)|^\s*(?:@!?%\w+\s+)?bar\s+\d", re.M)
_MAX = re.compile(_PRED + r"max(?:\.ftz)?(?:\.NaN)?\.f(?:16|32|64)\b", re.M)
_SELECT_MAX = (re.compile(_PRED + r"setp\.(?:gt|lt|ge|le)\w*\.f(?:32|64)\b", re.M), re.compile(_PRED + r"selp\.f(?:32|64)\b", re.M))
_SUB = re.compile(_PRED + r"sub(?:\.r[nzmp])?(?:\.ftz)?(?:\.sat)?\.f(?:32|64)\b", re.M)
_EX2 = re.compile(_PRED + r"ex2\.", re.M)
# In the source: a __shared__ array with two extents (`__shared__ float tile[32][33]`).
_TILE_2D = re.compile(r"__shared__[^;=]*?\w+\s*\[[^\]]*\]\s*\[")
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
# Source fallbacks (no PTX here: a GPU-only grading)
_SRC_ATOMIC = re.compile(r"\batomic(?:Add|Sub|Exch|Min|Max|Inc|Dec|CAS|And|Or|Xor)\w*\s*\(")


def code_facts(ptx: str | None, source: str) -> tuple[set[str], tuple[str, ...]]:
    """Facts of the code, and the atomic instructions as spelled: from the PTX when there is one,
    else (fewer facts) from the source with its comments removed."""
    facts: set[str] = set()
    code = _COMMENTS.sub(" ", source or "")
    if _TILE_2D.search(code):
        facts |= {"tile_2d", "shared_memory"}
    if ptx is None:
        if _SRC_ATOMIC.search(code):
            facts |= {"atomics", "global_atomics"}  # the space is unknown: assume the wider one
        if "__shared__" in code:
            facts.add("shared_memory")
        if "__syncthreads" in code:
            facts.add("barriers")
        if re.search(r"\bfmaxf?\s*\(|\bmax\s*\(", code):
            facts.add("max_reduction")
        if re.search(r"\b(?:__)?expf?\s*\(|\bexp2f?\s*\(", code):
            facts.add("exp")
        return facts, ()
    kinds = []
    for m in _ATOMIC.finditer(ptx):
        kind = m.group(1) + m.group(2)
        kinds.append(kind)
        facts.add("atomics")
        # a generic atomic (no space) may reach global memory: counted as global
        facts.add("shared_atomics" if ".shared" in m.group(2) else "global_atomics")
    if _SHARED.search(ptx):
        facts.add("shared_memory")
    if _BARRIER.search(ptx):
        facts.add("barriers")
    if _MAX.search(ptx) or all(r.search(ptx) for r in _SELECT_MAX):
        facts.add("max_reduction")
        # expf's own expansion has no float subtraction (it uses fma and add): a sub.f32 beside a
        # maximum is the row maximum taken off before the exponential
        if _SUB.search(ptx):
            facts.add("max_subtracted")
    if _EX2.search(ptx):
        facts.add("exp")
    return facts, tuple(dict.fromkeys(kinds))


def submission_ptx(ctx: Context) -> str | None:
    """The submission's PTX, where the emulator's module was compiled for this grading."""
    path = (ctx.runner.modules.get("emu") or {}).get("submission") if ctx.runner is not None else None
    try:
        return Path(path).read_text(errors="replace") if path else None
    except OSError:
        return None
