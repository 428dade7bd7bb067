"""The contract of a Python exercise (spec.toml with `kind = "python"`), validated once into frozen dataclasses.

A Python exercise asks for functions rather than a kernel:

    id = "lesson_numpy"
    title = "Memory traffic, by hand, in NumPy"
    kind = "python"
    public_modules = ["lesson.py"]          # what the submission may import (CountingMemory, ...)

    [[functions]]
    name = "sectors_touched"
    points = 20
    tags = ["traffic"]                      # results tags after "correctness"

    [hidden_tests]                          # tests/test_*.py, pytest, through the `student` fixture

    [changes]                               # what a call may change in its arguments (else it fails)
    "lesson.CountingMemory" = ["reads"]

The exercise folder also holds README.md (the task), skeleton.py (the functions with TODOs) and
checks.py (the public checks a student's check cells run, and the grader runs too); the reference
is reference/<id>/solution.py with wrong/*.py beside it. See docs/python-exercises.md.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Mapping

import jsonschema

from ..errors import SpecError
from ..spec import Limits

KIND = "python"


@dataclass(frozen=True)
class Function:
    """One function the submission must define, and what it is worth."""

    name: str
    points: float
    title: str = ""
    tags: tuple[str, ...] = ()
    call_seconds: float = 20.0  # one call may take this long (all calls together: limits.run_seconds)
    visibility: str = "visible"


@dataclass(frozen=True)
class PySpec:
    """A validated Python exercise spec."""

    id: str
    title: str
    functions: tuple[Function, ...]
    public_modules: tuple[str, ...] = ()
    hidden_tests: bool = False
    limits: Limits = field(default_factory=Limits)
    kind: str = KIND
    # What a call may change in its arguments: "module.Class" of a public class -> attribute names
    # (everything else a call changes fails it; grader.pyexercise.arguments).
    changes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def max_score(self) -> float:
        return float(sum(f.points for f in self.functions))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.functions)


def schema() -> dict[str, Any]:
    """The JSON Schema of a Python exercise's spec.toml."""
    return json.loads(resources.files("grader").joinpath("schemas/pyspec.schema.json").read_text())


def from_dict(raw: Mapping[str, Any], source: str = "spec.toml") -> PySpec:
    """Validate a parsed spec mapping of kind "python" and build the frozen PySpec."""
    errors = sorted(jsonschema.Draft202012Validator(schema()).iter_errors(raw), key=lambda e: list(e.path))
    if errors:
        first = errors[0]
        where = ".".join(str(p) for p in first.path) or "(top level)"
        raise SpecError(f"{source}: field {where}: {first.message}")
    functions = tuple(Function(name=f["name"], points=float(f["points"]), title=f.get("title", ""),
                               tags=tuple(f.get("tags", ())), call_seconds=float(f.get("call_seconds", 20.0)),
                               visibility=f.get("visibility", "visible")) for f in raw["functions"])
    if len({f.name for f in functions}) != len(functions):
        raise SpecError(f"{source}: field functions: function names must be unique")
    limits = Limits(**{"run_seconds": 120.0, **dict(raw.get("limits", {}))})
    hidden = raw.get("hidden_tests")
    return PySpec(id=raw["id"], title=raw["title"], functions=functions, public_modules=tuple(raw.get("public_modules", ())),
                  hidden_tests=bool(hidden is not None and hidden.get("enabled", True)), limits=limits,
                  changes={str(k): tuple(v) for k, v in raw.get("changes", {}).items()})
