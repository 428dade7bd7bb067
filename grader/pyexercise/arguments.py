"""What a call left in its arguments, against the grader's own copies of them.

The child works on copies: nothing it does to an argument reaches the grader's objects by itself.
After each call the grader compares the arguments the child sends back with its own. An exercise
may let a call change named attributes of its public objects (spec.toml's `[changes]`: a
CountingMemory's `reads` count); those are brought back into the grader's objects, so that checks
and hidden tests can read them. Any other change (zeroing the input matrix, rebinding `mem.A`) fails
the call: the checks always compare against inputs the student could not touch.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

_MISSING = object()


def same(a: Any, b: Any) -> bool:
    """Whether two decoded values are equal, exactly: arrays by dtype, shape and bits (NaN equal to
    NaN), containers item by item, objects of one class by their attributes."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return False
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if hasattr(a, "__dict__") and not isinstance(a, (type, np.generic)):
        return type(a) is type(b) and same(dict(vars(a)), dict(vars(b)))
    flags, numbers = (bool, np.bool_), (int, float, complex, np.number)
    if isinstance(a, flags) or isinstance(b, flags):
        return isinstance(a, flags) and isinstance(b, flags) and bool(a) == bool(b)
    if isinstance(a, numbers) and isinstance(b, numbers):  # the codec sends NumPy scalars as Python numbers
        return bool(a == b) or (_nan(a) and _nan(b))
    return type(a) is type(b) and a == b


def _nan(x: Any) -> bool:
    return isinstance(x, (float, np.floating)) and math.isnan(x)


def take_back(originals: Sequence[Any], after: Sequence[Any], changes: Mapping[str, Sequence[str]]) -> str:
    """Bring back into `originals` what the exercise lets a call change; "" if that was all the call
    changed, else which argument it changed, in words."""
    if len(after) != len(originals):
        return "its arguments did not come back"
    allowed = [changes.get(f"{type(o).__module__}.{type(o).__qualname__}", ()) for o in originals]
    for i, (original, left, keys) in enumerate(zip(originals, after, allowed), 1):
        if keys and hasattr(original, "__dict__"):
            if type(left) is not type(original):
                return f"it replaced argument {i} with a {type(left).__name__}"
            mine, theirs = vars(original), vars(left)
            for key in sorted(set(mine) | set(theirs)):
                if key not in keys and not same(mine.get(key, _MISSING), theirs.get(key, _MISSING)):
                    return f"it changed argument {i}'s {key}"
        elif not same(original, left):
            return f"it changed argument {i}"
    for original, left, keys in zip(originals, after, allowed):  # only once nothing else changed
        for key in keys:
            if key in vars(left):
                setattr(original, key, vars(left)[key])
    return ""
