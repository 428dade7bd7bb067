"""The contract of a Triton exercise (spec.toml with `kind = "triton"`), validated once into frozen dataclasses.

    id = "triton_vector_add"
    title = "Vector add in Triton"
    kind = "triton"
    launcher = "add"                     # the function of the submission the grader calls
    sizes = ["n"]
    public_cases = [{n = 1}, {n = 1000}, {n = 4099}]
    hidden_cases = [{n = 4096}, {n = 65537}]
    traffic_size = {n = 4099}            # where the sectors are compared with the reference's
    precision = "fp32 loads, an fp32 add"
    tolerance = {rtol = 1e-6, atol = 1e-6}

    [[params]]                           # the launcher's parameters, in order
    name = "x"
    role = "in"                          # in | out | int | float
    dtype = "float32"
    shape = ["n"]                        # size names or integers
    [[params]]
    name = "n"
    role = "int"
    value = "n"                          # a size name, or an integer

    [points]
    correctness = 40                     # the public cases
    hidden = 20                          # the hidden cases
    memory-safety = 20                   # the watch's findings and the guard regions
    traffic = 10                         # modelled sectors against the reference's
    performance = 10                     # on a GPU: the fastest timed launch against the reference's

    [performance]                        # optional; the check runs only on a GPU
    size = {n = 16777216}                # where the launcher is timed
    full_marks = 0.9                     # the fraction of the reference's speed that earns every point
    repeats = 20                         # timed launches (the fastest counts)
    baseline = "torch"                   # "torch": the library (harness.py's library()) is timed and shown
    tolerance = {rtol = 1e-6, atol = 0.0}  # for the timed launches' answers (default: the spec's)

The exercise folder holds harness.py (make_inputs(sizes, rng) and reference(inputs, sizes), as a
kernel exercise's), README.md and skeleton.py; the reference is reference/<id>/solution.py with
wrong/*.py beside it. See docs/triton-exercises.md.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Mapping

import jsonschema

from ..errors import SpecError
from ..spec import Limits

KIND = "triton"
DTYPES = ("float32", "float16", "bfloat16", "int32", "int64")
CHECKS = ("correctness", "hidden", "memory-safety", "traffic", "performance")
BASELINES = ("none", "torch")


@dataclass(frozen=True)
class Param:
    """One parameter of the launcher: a tensor (in, out) or a scalar (int, float)."""

    name: str
    role: str
    dtype: str = "float32"
    shape: tuple[str | int, ...] = ()
    value: str | int | float | None = None

    @property
    def is_tensor(self) -> bool:
        return self.role in ("in", "out")

    def shape_for(self, sizes: Mapping[str, int]) -> tuple[int, ...]:
        """The tensor's shape at these sizes."""
        return tuple(int(sizes[d]) if isinstance(d, str) else int(d) for d in self.shape)

    def scalar_for(self, sizes: Mapping[str, int]) -> int | float:
        """The scalar's value at these sizes."""
        v = sizes[self.value] if isinstance(self.value, str) else self.value
        return int(v) if self.role == "int" else float(v)



def sizes_label(sizes: Mapping[str, int]) -> str:
    """A case's sizes as the Triton kind's messages name them: "rows=32, cols=1000"."""
    return ", ".join(f"{k}={v}" for k, v in sizes.items())

@dataclass(frozen=True)
class Performance:
    """The `[performance]` table: where and how the launcher is timed on a GPU. The names are the CUDA
    kind's `[checks.performance]` ones (size, full_marks, repeats, baseline)."""

    size: Mapping[str, int]
    full_marks: float = 0.9
    repeats: int = 20
    baseline: str = "none"  # "torch": harness.py's library() is timed too, shown for information
    rtol: float | None = None  # the timed answers' tolerance, where the spec's cases' does not hold at this size
    atol: float | None = None


@dataclass(frozen=True)
class TritonSpec:
    """A validated Triton exercise spec."""

    id: str
    title: str
    launcher: str
    sizes: tuple[str, ...]
    params: tuple[Param, ...]
    public_cases: tuple[Mapping[str, int], ...]
    hidden_cases: tuple[Mapping[str, int], ...] = ()
    traffic_size: Mapping[str, int] | None = None
    traffic_slack: float = 0.10
    precision: str = ""
    rtol: float = 1e-5
    atol: float = 1e-6
    guard: int = 64
    repeat: int = 2
    points: Mapping[str, float] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    performance: Performance | None = None
    kind: str = KIND
    hidden_tests: None = None  # (the kernel kinds' pytest tests: a Triton exercise's are its hidden cases)

    @property
    def max_score(self) -> float:
        return float(sum(self.points.values()))

    @property
    def checks(self) -> tuple[str, ...]:
        """The checks that carry points."""
        return tuple(name for name, points in self.points.items() if points)

    @property
    def outputs(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.role == "out")

    @property
    def tensors(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.is_tensor)

    @property
    def signature(self) -> str:
        """The launcher as the student writes it: def add(x, y, out, n)."""
        return f"def {self.launcher}({', '.join(p.name for p in self.params)})"


def schema() -> dict[str, Any]:
    """The JSON Schema of a Triton exercise's spec.toml."""
    return json.loads(resources.files("grader").joinpath("schemas/tritonspec.schema.json").read_text())


def from_dict(raw: Mapping[str, Any], source: str = "spec.toml") -> TritonSpec:
    """Validate a parsed spec mapping of kind "triton" and build the frozen TritonSpec."""
    errors = sorted(jsonschema.Draft202012Validator(schema()).iter_errors(raw), key=lambda e: list(e.path))
    if errors:
        first = errors[0]
        where = ".".join(str(p) for p in first.path) or "(top level)"
        raise SpecError(f"{source}: field {where}: {first.message}")
    sizes = tuple(raw["sizes"])

    def case(values: Mapping[str, int], where: str) -> Mapping[str, int]:
        if set(values) != set(sizes):
            raise SpecError(f"{source}: field {where}: a case must give exactly {list(sizes)}, got {sorted(values)}")
        return dict(values)

    params = []
    for i, p in enumerate(raw["params"]):
        shape = tuple(p.get("shape", ()))
        value = p.get("value")
        for d in (*shape, value):
            if isinstance(d, str) and d not in sizes:
                raise SpecError(f"{source}: field params.{i}: {d!r} is not one of the sizes {list(sizes)}")
        if p["role"] in ("in", "out") and not shape:
            raise SpecError(f"{source}: field params.{i}: a tensor needs a shape")
        if p["role"] in ("int", "float") and value is None:
            raise SpecError(f"{source}: field params.{i}: a scalar needs a value (a size name or a number)")
        params.append(Param(p["name"], p["role"], p.get("dtype", "float32"), shape, value))
    if len({p.name for p in params}) != len(params):
        raise SpecError(f"{source}: field params: names must be unique")
    if not any(p.role == "out" for p in params):
        raise SpecError(f"{source}: field params: the launcher needs at least one out tensor")
    tol = raw.get("tolerance", {})
    points = {k: float(v) for k, v in raw["points"].items()}
    traffic = raw.get("traffic_size")
    if points.get("traffic") and traffic is None:
        raise SpecError(f"{source}: field traffic_size: [points] gives traffic points, so the spec needs a traffic_size")
    limits = Limits(**{"run_seconds": 60.0, **dict(raw.get("limits", {}))})
    perf = raw.get("performance")
    if points.get("performance") and perf is None:
        raise SpecError(f"{source}: field performance: [points] gives performance points, so the spec needs a "
                        "[performance] table with its size")
    performance = None
    if perf is not None:
        ptol = perf.get("tolerance", {})
        performance = Performance(size=case(perf["size"], "performance.size"), full_marks=float(perf.get("full_marks", 0.9)),
                                  repeats=int(perf.get("repeats", 20)), baseline=perf.get("baseline", "none"),
                                  rtol=float(ptol["rtol"]) if "rtol" in ptol else None,
                                  atol=float(ptol["atol"]) if "atol" in ptol else None)
    return TritonSpec(
        id=raw["id"], title=raw["title"], launcher=raw["launcher"], sizes=sizes, params=tuple(params),
        public_cases=tuple(case(c, f"public_cases.{i}") for i, c in enumerate(raw["public_cases"])),
        hidden_cases=tuple(case(c, f"hidden_cases.{i}") for i, c in enumerate(raw.get("hidden_cases", ()))),
        traffic_size=case(traffic, "traffic_size") if traffic is not None else None,
        traffic_slack=float(raw.get("traffic_slack", 0.10)), precision=raw.get("precision", ""),
        rtol=float(tol.get("rtol", 1e-5)), atol=float(tol.get("atol", 1e-6)), guard=int(raw.get("guard", 64)),
        repeat=int(raw.get("repeat", 2)), points=points, limits=limits, performance=performance)
