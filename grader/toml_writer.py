"""A small TOML writer for spec-shaped mappings: the student copies of spec.toml.

The student bundles of both kinds (grader.staff.student_bundle for CUDA, grader.pyexercise.student_bundle
for Python) re-serialise the parsed spec, without its hidden parts, so that no comment can carry them
along. Python's tomllib only reads; each caller checks that what this writes loads back equal.
"""
from __future__ import annotations

import json
import math
import re
from typing import Any, Mapping

from .errors import SpecError


def dumps_toml(data: Mapping[str, Any]) -> str:
    """TOML for a spec-shaped mapping: scalars, arrays of scalars or inline tables, nested tables.

    A mapping of size variables to integers ({ N = 1000 }) is written inline, the rest as tables.
    """
    sizes = set(data.get("sizes", ()))
    lines: list[str] = []

    def inline(v: Any) -> bool:
        return isinstance(v, dict) and bool(v) and set(v) <= sizes and all(type(x) is int for x in v.values())

    def table(prefix: str, mapping: Mapping[str, Any]) -> None:
        flat = {k: v for k, v in mapping.items() if not isinstance(v, dict) or inline(v)}
        tables = {k: v for k, v in mapping.items() if k not in flat}
        if prefix and (flat or not tables):
            lines.append(f"\n[{prefix}]")
        for k, v in flat.items():
            lines.append(f"{_key(k)} = {_value(v)}")
        for k, v in tables.items():
            table(f"{prefix}.{_key(k)}" if prefix else _key(k), v)

    table("", data)
    return "\n".join(lines).lstrip("\n") + "\n"


def _key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, list):
        if len(v) > 1 and all(isinstance(x, dict) for x in v) and len(", ".join(_value(x) for x in v)) > 90:
            return "[\n" + "".join(f"  {_value(x)},\n" for x in v) + "]"
        return "[" + ", ".join(_value(x) for x in v) + "]"
    raise SpecError(f"cannot write {type(v).__name__} values in a student spec")
