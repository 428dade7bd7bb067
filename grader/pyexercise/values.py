"""Values that cross between the grader and a Python submission's child: JSON, never pickle.

The child (grader/pyexercise/child_worker.py) sends back only what the student's functions returned and what
they left in their arguments, encoded here; the grader decodes them into plain values and
compares them itself. Allowed: None, bool, int, float (NaN and infinities included), str, lists,
tuples, dicts with string keys, NumPy arrays and scalars of numeric or bool dtype, and objects of
the exercise's own public classes (by module and class name, rebuilt from their attributes).
Anything else (functions, modules, object arrays, foreign classes) does not decode: a student
cannot smuggle code or a lying object back to the grader.

This file is copied, unchanged, into the child's folder (as pyvalues.py): it imports only the standard library
and NumPy.
"""
from __future__ import annotations

import base64
import math
from typing import Any, Callable, Mapping

import numpy as np

MAX_DEPTH = 32
_DTYPES = frozenset("bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 float32 float64 complex64 complex128".split())


class NotAValue(ValueError):
    """A value that cannot cross: its type, or a malformed encoding."""


def encode(value: Any, depth: int = 0, public: Mapping[str, type] | None = None) -> Any:
    """A JSON-able form of value; raises NotAValue for a type that may not cross."""
    if depth > MAX_DEPTH:
        raise NotAValue("the value is nested too deeply")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, np.bool_):
        return int(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        return f if math.isfinite(f) else {"__float__": repr(f)}
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.ndarray):
        if value.dtype.name not in _DTYPES:
            raise NotAValue(f"an array of dtype {value.dtype.name} cannot be returned; use a numeric dtype")
        data = np.ascontiguousarray(value)
        return {"__ndarray__": base64.b64encode(data.tobytes()).decode("ascii"), "dtype": data.dtype.name,
                "shape": list(data.shape)}
    if isinstance(value, (list, tuple)):
        items = [encode(v, depth + 1, public) for v in value]
        return items if isinstance(value, list) else {"__tuple__": items}
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise NotAValue("a dict with keys that are not strings cannot be returned")
        return {"__dict__": {k: encode(v, depth + 1, public) for k, v in value.items()}}
    if isinstance(value, complex):
        return {"__complex__": [value.real, value.imag]}
    cls = type(value)
    name = f"{cls.__module__}.{cls.__qualname__}"
    if public is not None and public.get(name) is cls:
        return {"__object__": name, "state": encode(dict(vars(value)), depth + 1, public)}
    raise NotAValue(f"a value of type {cls.__qualname__} cannot be returned")


def decode(doc: Any, public: Mapping[str, Callable[[], Any]] | None = None, depth: int = 0) -> Any:
    """The value an encoding stands for; raises NotAValue on anything malformed or not allowed.

    public maps "module.Class" to a factory of an empty instance; objects of other classes fail.
    """
    if depth > MAX_DEPTH:
        raise NotAValue("the value is nested too deeply")
    if doc is None or isinstance(doc, (bool, int, float, str)):
        return doc
    if isinstance(doc, list):
        return [decode(v, public, depth + 1) for v in doc]
    if not isinstance(doc, dict) or len(doc) == 0:
        raise NotAValue("malformed value")
    if "__tuple__" in doc and isinstance(doc["__tuple__"], list):
        return tuple(decode(v, public, depth + 1) for v in doc["__tuple__"])
    if "__dict__" in doc and isinstance(doc["__dict__"], dict):
        return {str(k): decode(v, public, depth + 1) for k, v in doc["__dict__"].items()}
    if "__float__" in doc and doc["__float__"] in ("nan", "inf", "-inf"):
        return float(doc["__float__"])
    if "__complex__" in doc and isinstance(doc["__complex__"], list) and len(doc["__complex__"]) == 2:
        return complex(float(doc["__complex__"][0]), float(doc["__complex__"][1]))
    if "__ndarray__" in doc:
        dtype, shape = doc.get("dtype"), doc.get("shape")
        if dtype not in _DTYPES or not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape):
            raise NotAValue("malformed array")
        raw = base64.b64decode(str(doc["__ndarray__"]), validate=True)
        count = math.prod(shape)
        if len(raw) != count * np.dtype(dtype).itemsize:
            raise NotAValue("malformed array: its size does not match its shape")
        return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
    if "__object__" in doc:
        name = doc["__object__"]
        factory = (public or {}).get(name)
        if factory is None:
            raise NotAValue(f"an object of class {str(name)[:60]} cannot be returned")
        state = decode(doc.get("state"), public, depth + 1)
        if not isinstance(state, dict):
            raise NotAValue("malformed object")
        obj = factory()
        vars(obj).update(state)
        return obj
    raise NotAValue("malformed value")


def empty_instance(cls: type) -> Callable[[], Any]:
    """A factory of an instance of cls made without running its __init__ (its state comes after)."""
    return lambda: cls.__new__(cls)
