"""Whether a module's PTX can make a global atomic: where neither the submission's nor the reference's
can, ncu's global atom and red counters are exactly 0 and need not be asked for.

Nsight Compute collects the traffic check's metrics in replay passes (5 for the grader's eight on an
H200, bench/ncu_launch_cost.py); the four global atomic metrics count the LSU's `atom` and `red`
accesses to global memory, which only `atom`/`red` instructions (global or generic: a generic address
may be global) make. The rule is conservative: anything it cannot classify (an instruction that
reduces into memory in another way, a function whose code is not in the PTX) says "may", and the
full metric set is kept.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable

# One PTX statement's opcode, after an optional guard predicate (`@%p1`, `@!%p2`).
_OPCODE = re.compile(r"^\s*(?:@!?%\w+\s+)?([A-Za-z_][\w.:]*)")
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
# The state spaces an atomic stays inside the SM's shared memory with (not `.shared::cluster`,
# which may name another block's shared memory: counted as "may" to be safe).
_SHARED_ONLY = {"shared", "shared::cta"}
# Opcodes with `red` in them that touch no memory: a barrier's reduction of thread predicates.
_NOT_MEMORY = {"bar", "barrier"}
# Code not in the module, which may make atomics of its own (printf's buffer, the device heap).
_EXTERN_FUNC = re.compile(r"^\s*\.extern\s+\.func\b", re.M)


def may_make_global_atomics(ptx: str) -> bool:
    """Whether the module's code may make a global (or generic) atom/red access: True for any
    `atom`/`red` not in shared memory of its own block, any other statement naming an atomic or a
    reduction into memory (`cp.reduce.async.bulk`, `multimem.red`, `sured`), and any `.extern .func` (code
    the PTX does not show); False only where none of these is in the text."""
    text = _COMMENTS.sub(" ", ptx)
    if _EXTERN_FUNC.search(text):
        return True
    # Statements end at `;`; inline assembly may put several on one line, or open a `{` scope.
    for statement in re.split(r"[;{}\n]", text):
        found = _OPCODE.match(statement)
        if not found or found.group(1).startswith("."):
            continue
        parts = found.group(1).split(".")
        head = parts[0]
        if head in ("atom", "red"):
            if not _SHARED_ONLY.intersection(parts[1:]):
                return True
        elif head not in _NOT_MEMORY and any("atom" in p or p in ("red", "sured") or "reduce" in p for p in parts):
            return True
    return False


def atomic_free(ptx_paths: Iterable[str | Path | None]) -> bool:
    """Whether every module (PTX files) surely makes no global atomic; False if any path is missing
    or unreadable (no PTX to read: keep every metric)."""
    paths = list(ptx_paths)
    if not paths:
        return False
    for path in paths:
        if not path:
            return False
        try:
            ptx = Path(path).read_text(errors="replace")
        except OSError:
            return False
        if not ptx.strip() or may_make_global_atomics(ptx):
            return False
    return True
