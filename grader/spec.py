"""An exercise's contract: spec.toml validated once into frozen dataclasses.

Everything downstream (checks, backends, bundles) reads these objects, never raw TOML.
A bad spec raises SpecError naming the file and the field, so course staff can fix it.
"""
from __future__ import annotations

import dataclasses
import json
import math
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

import jsonschema

from . import expressions, headers
from .errors import SpecError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

# The facts about a submission that a hint's `when` and `unless` may name (grader.checks.evidence
# computes them): what its PTX contains, and what its run showed.
HINT_FACTS: Mapping[str, str] = {
    "atomics": "the PTX has an atomic (atom or red) on any memory",
    "global_atomics": "the PTX has an atomic on global memory",
    "shared_atomics": "the PTX has an atomic on shared memory",
    "shared_memory": "the kernel uses shared memory",
    "tile_2d": "the source declares a two-dimensional __shared__ array",
    "barriers": "the PTX has a block barrier (__syncthreads)",
    "max_reduction": "the PTX takes a floating-point maximum (fmaxf, max)",
    "max_subtracted": "the PTX takes a floating-point maximum and subtracts floats (softmax's x - max before expf)",
    "exp": "the PTX computes an exponential (ex2: expf, __expf, exp2f)",
    "never_written": "at a failing size, some output elements were never written",
    "written_wrong": "at a failing size, some elements the kernel wrote are wrong",
    "nan_written": "the kernel wrote NaN or inf into an output",
    "ragged": "only the sizes where one size variable is not a multiple of the block's width fail",
    "above_one_block": "only sizes larger than one block fail",
    "odd": "only the sizes where one size variable is odd fail",
    "all_sizes": "every size fails",
    "second_launch": "a size was right at its first launch and wrong at the second",
    "out_of_bounds": "the emulator saw an out-of-bounds or misaligned access",
    "uninit_read": "the emulator saw a read of shared memory that no thread wrote",
    "early_output_read": "the kernel read an output element before writing it",
    "race": "the emulator saw a race or a barrier error",
    "bank_conflicts": "a shared-memory access line averages twice the wavefronts its access width needs, or more",
}
HINT_SITUATIONS = ("fails", "ragged")

CATEGORIES = ("compile", "correctness", "memory-safety", "race", "traffic", "bank-conflicts", "performance")

# How each C parameter type reaches the kernel: NumPy dtype of the pointee or value, and whether it
# is a pointer. The PTX parameter width follows (pointers are .u64).
PARAM_TYPES: Mapping[str, tuple[str, bool]] = {
    "const float*": ("float32", True),
    "float*": ("float32", True),
    "const double*": ("float64", True),
    "double*": ("float64", True),
    "const __half*": ("float16", True),
    "__half*": ("float16", True),
    # bfloat16: float32 values in the harness, 16-bit patterns on the device (grader/bfloat16.py)
    "const __nv_bfloat16*": ("float32", True),
    "__nv_bfloat16*": ("float32", True),
    "const int*": ("int32", True),
    "int*": ("int32", True),
    "const unsigned int*": ("uint32", True),
    "unsigned int*": ("uint32", True),
    "const unsigned char*": ("uint8", True),
    "int": ("int32", False),
    "unsigned int": ("uint32", False),
    "long long": ("int64", False),
    "unsigned long long": ("uint64", False),
    "float": ("float32", False),
    "double": ("float64", False),
}

Sizes = Mapping[str, int]

# The Nsight Compute metrics a counters check may sum (its spec's `counters`); the emulator counts
# every one of them under the same name.
COUNTER_METRICS: Mapping[str, tuple[str, ...]] = {
    "traffic": (
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum",
        "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
        "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
        "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",
        "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum",
        "l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum",
    ),
    "bank-conflicts": (
        "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
        "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum",
        "smsp__sass_inst_executed_op_shared_ld.sum",
        "smsp__sass_inst_executed_op_shared_st.sum",
        "smsp__inst_executed_op_shared_atom.sum",
    ),
}


@dataclass(frozen=True)
class Param:
    """One kernel parameter: a buffer (with role and shape) or a scalar (with a value expression)."""

    name: str
    type: str
    role: str | None = None
    shape: tuple[str, ...] = ()
    value: str | None = None

    @property
    def dtype(self) -> str:
        return PARAM_TYPES[self.type][0]

    @property
    def is_pointer(self) -> bool:
        return PARAM_TYPES[self.type][1]

    @property
    def is_bfloat16(self) -> bool:
        """A bfloat16 buffer: float32 values in the harness, 16-bit patterns on the device."""
        return "__nv_bfloat16" in self.type

    @property
    def device_dtype(self) -> str:
        """The element type of the buffer as the kernel sees it."""
        return "uint16" if self.is_bfloat16 else self.dtype

    def shape_for(self, sizes: Sizes) -> tuple[int, ...]:
        return tuple(expressions.evaluate_int(e, sizes) for e in self.shape)


@dataclass(frozen=True)
class Kernel:
    """The kernel students write and how it is launched, as functions of the problem size."""

    name: str
    params: tuple[Param, ...]
    block: tuple[str, ...]
    grid: tuple[str, ...]
    shared_bytes: str = "0"
    # names of the kernel's __constant__ arrays; the harness's make_inputs gives each one's contents,
    # copied into constant memory before every launch
    constants: tuple[str, ...] = ()
    # kernels launched after this one, in order, on the same buffers (a two-pass reduction)
    then: tuple["Kernel", ...] = ()

    @property
    def signature(self) -> str:
        """The exact C signature students must write (one line per kernel of the chain)."""
        lines = []
        for k in self.chain:
            args = ", ".join(f"{p.type} {p.name}" for p in k.params)
            lines.append(f'extern "C" __global__ void {k.name}({args})')
        return "\n".join(lines)

    def launch_for(self, sizes: Sizes) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
        """(grid, block, dynamic shared bytes) for a problem size."""
        grid = tuple(expressions.evaluate_int(e, sizes) for e in self.grid) + (1, 1)
        block = tuple(expressions.evaluate_int(e, sizes) for e in self.block) + (1, 1)
        return grid[:3], block[:3], expressions.evaluate_int(self.shared_bytes, sizes)

    @property
    def chain(self) -> tuple["Kernel", ...]:
        """Every kernel of one launch of the exercise, in the order they run."""
        return (self,) + self.then

    @property
    def buffers(self) -> tuple[Param, ...]:
        """Every buffer of the chain, once, as first declared."""
        seen: dict[str, Param] = {}
        for k in self.chain:
            for p in k.params:
                if p.is_pointer and p.name not in seen:
                    seen[p.name] = p
        return tuple(seen.values())

    @property
    def outputs(self) -> tuple[Param, ...]:
        return tuple(p for p in self.buffers if p.role in ("out", "inout"))


@dataclass(frozen=True)
class Tolerance:
    """|out - ref| <= atol + rtol*|ref| + ulps * 2^-24 * terms * magnitude."""

    ulps: float = 2.0
    terms: str = "1"
    atol: float = 1e-6
    rtol: float = 0.0


@dataclass(frozen=True)
class CheckSpec:
    """Settings of one graded check (one category)."""

    category: str
    points: float
    size: Mapping[str, int] | None = None
    emu_size: Mapping[str, int] | None = None
    launches: int = 10
    max_ratio: float = 1.1
    full_marks: float = 0.9
    baseline: str = "none"
    repeats: int = 20
    visibility: str = "visible"
    # compute-sanitizer on the GPU backend (race, memory-safety): "fallback" runs it only where the
    # emulator cannot run the kernel (its checks at emu_size see what the sanitizers would, exactly);
    # "always" runs it as well; "never" not at all.
    sanitizer: str = "fallback"
    # traffic and bank-conflicts: the metrics summed for the ratio (empty: the check's default set).
    counters: tuple[str, ...] = ()
    # race on a GPU: how the repeated launches' outputs are compared. "bitwise" (any difference is a
    # race) or "tolerance" (a launch differs only when an output is outside the exercise's tolerance
    # of the reference, for kernels whose float atomics add in a different order each launch).
    compare: str = "bitwise"
    # race: the legacy warp-synchronous idiom (lanes of one warp exchanging values through volatile
    # shared memory with no __syncwarp(), e.g. the unrolled `volatile float* v` reduction tail).
    # "race" (default): a race, as racecheck and the CUDA programming guide say since Volta;
    # "allow": for a course that teaches it, named in a note but not failed.
    warp_synchronous: str = "race"
    # When the check cannot run here (performance without a GPU): "exclude" its points from the
    # denominator (the default), "award" them, or count them as "zero" (results.NOT_RUN_POLICIES).
    if_not_run: str = "exclude"
    # Advice the exercise gives when the check fails, by situation: "fails" (any failure) and, for
    # correctness, "ragged" (only sizes that are not a multiple of the block's width fail); each
    # hint shows only where the submission's facts meet its `when` and `unless`.
    hints: Mapping[str, tuple[Hint, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Hint:
    """One piece of an exercise's advice and the facts it is for (names of HINT_FACTS): shown only
    where every `when` fact holds and no `unless` fact does. A remedy for one cause given to a
    kernel that has another (atomicAdd advice to a kernel that already uses it) misleads."""

    text: str
    when: tuple[str, ...] = ()
    unless: tuple[str, ...] = ()

    def applies(self, facts: frozenset[str] | set[str]) -> bool:
        """Whether the submission's facts call for this hint."""
        return all(f in facts for f in self.when) and not any(f in facts for f in self.unless)


def parse_hints(raw: Mapping[str, Any], where: str) -> dict[str, tuple[Hint, ...]]:
    """A check's `hints` table: per situation a plain string (always shown in that situation), a
    table {text, when, unless}, or a list of either. Unknown facts are a SpecError."""
    out: dict[str, tuple[Hint, ...]] = {}
    for situation, value in raw.items():
        items = value if isinstance(value, list) else [value]
        hints = []
        for i, item in enumerate(items):
            at = f"{where}.{situation}" + (f".{i}" if isinstance(value, list) else "")
            if isinstance(item, str):
                hints.append(Hint(item))
                continue
            for key in ("when", "unless"):
                unknown = [f for f in item.get(key, ()) if f not in HINT_FACTS]
                if unknown:
                    raise SpecError(f"{at}.{key}: unknown fact {', '.join(map(repr, unknown))} "
                                    f"(known: {', '.join(HINT_FACTS)})")
            hints.append(Hint(str(item["text"]), tuple(item.get("when", ())), tuple(item.get("unless", ()))))
        out[str(situation)] = tuple(hints)
    return out


@dataclass(frozen=True)
class Limits:
    """Resource limits for the child processes that run student code."""

    compile_seconds: float = 30.0
    run_seconds: float = 120.0
    output_bytes: int = 64 * 1024
    max_source_bytes: int = 256 * 1024
    max_notebook_bytes: int = 16 * 1024**2  # a submitted .ipynb, outputs included (the kernel cell meets max_source_bytes)
    memory_bytes: int = 4 * 1024**3  # address space of an emulator or compiler child (not of CUDA ones)
    step_limit: int = 200_000
    open_files: int = 1024
    file_size_bytes: int = 512 * 1024**2  # largest file a child may write
    cpu_factor: float = 2.0  # CPU-seconds limit = cpu_factor * wall-clock limit + 10 (NumPy may use threads)
    allowed_includes: tuple[str, ...] = headers.EVERYDAY  # grader/headers.py: what nvcc users include by habit


@dataclass(frozen=True)
class Spec:
    """A validated exercise spec."""

    id: str
    title: str
    sizes: tuple[str, ...]
    kernel: Kernel
    tolerance: Tolerance
    public_cases: tuple[Mapping[str, int], ...]
    hidden_cases: tuple[Mapping[str, int], ...]
    emu_cases: tuple[Mapping[str, int], ...]
    checks: Mapping[str, CheckSpec]
    limits: Limits = field(default_factory=Limits)
    hidden_tests: CheckSpec | None = None  # the exercise's tests/ folder, scored in hidden_tests.category

    @property
    def max_score(self) -> float:
        extra = self.hidden_tests.points if self.hidden_tests else 0.0
        return float(sum(c.points for c in self.checks.values()) + extra)

    def check(self, category: str) -> CheckSpec | None:
        return self.checks.get(category)

    def cases_for(self, backend: str) -> tuple[Mapping[str, int], ...]:
        """The correctness sizes a backend runs: the emulator its own small list, a GPU public + hidden."""
        if backend == "emu" and self.emu_cases:
            return self.emu_cases
        seen: list[Mapping[str, int]] = []
        for case in self.public_cases + self.hidden_cases:
            if case not in seen:
                seen.append(case)
        return tuple(sorted(seen, key=lambda c: tuple(c.values())))


def schema() -> dict[str, Any]:
    """The JSON Schema every spec.toml is validated against."""
    return json.loads(resources.files("grader").joinpath("schemas/spec.schema.json").read_text())


def load(path: Path) -> Spec:
    """Read, validate and freeze a spec.toml; raise SpecError naming the file and field on any problem."""
    return from_dict(read_toml(path), source=str(path))


def read_toml(path: Path) -> dict:
    """The table of a spec.toml (of either exercise kind); SpecError when it is missing or not TOML."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecError(f"{path}: no such file (every exercise folder needs a spec.toml)") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SpecError(f"{path}: not valid TOML: {exc}") from None


def from_dict(raw: Mapping[str, Any], source: str = "spec.toml") -> Spec:
    """Validate a parsed spec mapping and build the frozen Spec."""
    errors = sorted(jsonschema.Draft202012Validator(schema()).iter_errors(raw), key=lambda e: list(e.path))
    if errors:
        first = errors[0]
        where = ".".join(str(p) for p in first.path) or "(top level)"
        raise SpecError(f"{source}: field {where}: {first.message}")
    try:
        return _build(raw, source)
    except expressions.ExpressionError as exc:
        raise SpecError(f"{source}: {exc}") from None


def _build(raw: Mapping[str, Any], source: str) -> Spec:
    sizes = tuple(raw["sizes"])
    names = frozenset(sizes)

    def expr(text: Any, where: str) -> str:
        try:
            expressions.parse(str(text), names)
        except expressions.ExpressionError as exc:
            raise SpecError(f"{source}: field {where}: {exc}") from None
        return str(text)

    def case(values: Mapping[str, int], where: str) -> Mapping[str, int]:
        if set(values) != set(sizes):
            raise SpecError(f"{source}: field {where}: a size must give exactly {list(sizes)}, got {sorted(values)}")
        return dict(values)

    k = raw["kernel"]
    declared: dict[str, Param] = {}  # buffers by name, as first declared along the chain

    def kernel_of(k: Mapping[str, Any], at: str) -> Kernel:
        params = []
        for i, p in enumerate(k["params"]):
            where = f"{at}.params.{i}"
            is_pointer = PARAM_TYPES[p["type"]][1]
            first = declared.get(p["name"]) if is_pointer else None
            if first is not None:
                # a buffer of an earlier kernel of the chain: the same buffer, declared once
                if "role" in p or "shape" in p or PARAM_TYPES[p["type"]][0] != first.dtype:
                    raise SpecError(f"{source}: field {where}: {p['name']!r} is a buffer of an earlier kernel: give it "
                                    "only its name and type (the same element type), not a role or shape again")
                params.append(Param(name=p["name"], type=p["type"], role=first.role, shape=first.shape))
                continue
            if is_pointer and ("role" not in p or "shape" not in p):
                raise SpecError(f"{source}: field {where}: pointer parameter {p['name']!r} needs 'role' and 'shape'")
            if not is_pointer and "value" not in p:
                raise SpecError(f"{source}: field {where}: scalar parameter {p['name']!r} needs 'value'")
            param = Param(
                name=p["name"], type=p["type"], role=p.get("role"),
                shape=tuple(expr(s, f"{where}.shape") for s in p.get("shape", ())),
                value=expr(p["value"], f"{where}.value") if "value" in p else None,
            )
            if is_pointer:
                declared[param.name] = param
            params.append(param)
        if len({p.name for p in params}) != len(params):
            raise SpecError(f"{source}: field {at}.params: parameter names must be unique")
        return Kernel(
            name=k["name"], params=tuple(params),
            block=tuple(expr(e, f"{at}.block") for e in k["block"]),
            grid=tuple(expr(e, f"{at}.grid") for e in k["grid"]),
            shared_bytes=expr(k.get("shared_bytes", "0"), f"{at}.shared_bytes"),
        )

    first = kernel_of(k, "kernel")
    later = tuple(kernel_of(t, f"kernel.then.{i}") for i, t in enumerate(k.get("then", ())))
    kernel = dataclasses.replace(first, constants=tuple(k.get("constants", ())), then=later)
    params = kernel.params
    if len({kk.name for kk in kernel.chain}) != len(kernel.chain):
        raise SpecError(f"{source}: field kernel.then: every kernel of the chain needs its own name")
    if not any(p.role in ("out", "inout") for p in kernel.buffers):
        raise SpecError(f"{source}: field kernel.params: at least one parameter must have role 'out' or 'inout'")
    if set(kernel.constants) & {p.name for p in params}:
        raise SpecError(f"{source}: field kernel.constants: a constant may not share a parameter's name")
    tol_raw = raw.get("tolerance", {})
    tolerance = Tolerance(
        ulps=float(tol_raw.get("ulps", 2.0)), terms=expr(tol_raw.get("terms", "1"), "tolerance.terms"),
        atol=float(tol_raw.get("atol", 1e-6)), rtol=float(tol_raw.get("rtol", 0.0)),
    )
    cases = raw["cases"]
    public = tuple(case(c, f"cases.public.{i}") for i, c in enumerate(cases["public"]))
    hidden = tuple(case(c, f"cases.hidden.{i}") for i, c in enumerate(cases.get("hidden", [])))
    emu = tuple(case(c, f"cases.emu.{i}") for i, c in enumerate(cases.get("emu", [])))
    checks: dict[str, CheckSpec] = {}
    for category in CATEGORIES:  # fixed order: the pipeline runs checks in this order
        if category not in raw["checks"]:
            continue
        c = dict(raw["checks"][category])
        for key in ("size", "emu_size"):
            if key in c:
                c[key] = case(c[key], f"checks.{category}.{key}")
        if category in ("race", "memory-safety", "traffic", "bank-conflicts", "performance") and "size" not in c:
            raise SpecError(f"{source}: field checks.{category}: needs a 'size' to run at")
        if "counters" in c:
            allowed = COUNTER_METRICS.get(category, ())
            wrong = [m for m in c["counters"] if m not in allowed]
            if wrong or not allowed:
                raise SpecError(f"{source}: field checks.{category}.counters: {', '.join(wrong) or 'counters'} "
                                f"cannot be summed by this check (allowed: {', '.join(allowed) or 'none'})")
            c["counters"] = tuple(c["counters"])
        if "compare" in c and category != "race":
            raise SpecError(f"{source}: field checks.{category}.compare: only the race check compares launches")
        if "warp_synchronous" in c and category != "race":
            raise SpecError(f"{source}: field checks.{category}.warp_synchronous: only the race check judges "
                            "warp-synchronous code")
        if c.get("warp_synchronous") == "allow" and c.get("sanitizer") == "always":
            # racecheck reports the idiom as hazards (it does on an H200), and they cannot be told
            # apart from other races in its report: the check would fail what the spec allows.
            raise SpecError(f"{source}: field checks.race.warp_synchronous: \"allow\" cannot be combined with "
                            "sanitizer = \"always\" (compute-sanitizer racecheck reports the warp-synchronous idiom as a race)")
        if "hints" in c:
            c["hints"] = parse_hints(c["hints"], f"{source}: field checks.{category}.hints")
        checks[category] = CheckSpec(category=category, **c)
    limits_raw = dict(raw.get("limits", {}))
    if "allowed_includes" in limits_raw:
        limits_raw["allowed_includes"] = tuple(limits_raw["allowed_includes"])
    hidden_tests = None
    if "hidden_tests" in raw:
        h = dict(raw["hidden_tests"])
        if "hints" in h:
            h["hints"] = parse_hints(h["hints"], f"{source}: field hidden_tests.hints")
        hidden_tests = CheckSpec(category=h.pop("category", "correctness"), **h)
    spec = Spec(
        id=raw["id"], title=raw["title"], sizes=sizes, kernel=kernel, tolerance=tolerance,
        public_cases=public, hidden_cases=hidden, emu_cases=emu, checks=checks, limits=Limits(**limits_raw),
        hidden_tests=hidden_tests,
    )
    _check_expressions_evaluate(spec, source)
    return spec


def _check_expressions_evaluate(spec: Spec, source: str) -> None:
    """Evaluate every expression at every listed size, so a bad grid fails at load time, not mid-grade."""
    all_sizes = list(spec.public_cases + spec.hidden_cases + spec.emu_cases)
    all_sizes += [s for c in spec.checks.values() for s in (c.size, c.emu_size) if s]
    for sizes in all_sizes:
        for kernel in spec.kernel.chain:
            try:
                grid, block, _ = kernel.launch_for(sizes)
                for p in kernel.params:
                    if p.is_pointer:
                        p.shape_for(sizes)
                    else:
                        expressions.evaluate(p.value or "0", sizes)
                expressions.evaluate(spec.tolerance.terms, sizes)
            except expressions.ExpressionError as exc:
                raise SpecError(f"{source}: at size {dict(sizes)}: {exc}") from None
            threads = math.prod(block)
            if threads < 1 or threads > 1024:
                raise SpecError(f"{source}: field kernel.block: {block} has {threads} threads at size {dict(sizes)} "
                                "(1..1024 allowed)")
