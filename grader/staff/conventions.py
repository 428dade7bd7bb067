"""The conventions every exercise keeps, beyond what its spec's schema can say.

Each convention is a function of a loaded exercise that returns its problems (empty: kept). `grade
validate` runs them all (a course's own exercise is held to them as the shipped ones are), and the
project's tests call the same functions on the shipped exercises. docs/exercise-format.md lists them.
"""
from __future__ import annotations

import sys
import types
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..exercise import Exercise, Harness
from ..kinds.registry import kind_of
from .expectation import read_expectation
from .student_bundle import bundle_leaks, wrong_files

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# At least this many known-bad submissions per exercise: one per way a student is likely to go wrong.
MIN_WRONG = 5
# How far into a wrong file its header (`// expect:`, `// why:`) is read.
HEADER_CHARS = 600


@dataclass(frozen=True)
class Convention:
    """One convention: its name (as validate prints it), what it asks, and its check."""

    name: str
    rule: str
    check: Callable[[Exercise], Sequence[str]]


def corpus(exercise: Exercise) -> list[str]:
    """At least MIN_WRONG wrong files, each with its `expect:` header, one of them a bug that only shows
    when the size is not a multiple of the block or tile (its header says "multiple", or names a `% `):
    the bug the measured H200 table in DESIGN.md shows plain runs miss at friendly sizes."""
    wrong = wrong_files(exercise)
    problems = []
    if len(wrong) < MIN_WRONG:
        problems.append(f"reference/{exercise.id}/wrong/ holds {len(wrong)} {exercise.suffix} file(s); at least {MIN_WRONG} are needed")
    problems += [f"wrong/{p.name} has no `expect:` line in its first lines" for p in wrong if read_expectation(p) is None]
    heads = [p.read_text(encoding="utf-8", errors="replace")[:HEADER_CHARS] for p in wrong]
    if wrong and not any("multiple" in h or "% " in h for h in heads):
        problems.append("no wrong file is an edge-size bug (one whose header says it shows only when the size is not a "
                        "multiple of the block or tile)")
    return problems


def layout(exercise: Exercise) -> list[str]:
    """The files a course hands out and grades against: the skeleton, the reference solution, and for a
    kernel exercise at least one public size."""
    problems = []
    if not exercise.skeleton_path.is_file():
        problems.append(f"no {exercise.skeleton_path.name} in {exercise.root}")
    if not exercise.solution_path.is_file():
        problems.append(f"no reference solution at {exercise.solution_path}")
    if kind_of(exercise).traits.sized and not exercise.spec.public_cases:
        problems.append("cases.public is empty: students need at least one size to grade against")
    return problems


def spec_round_trips(exercise: Exercise) -> list[str]:
    """spec.toml reads back unchanged through the TOML writer the student bundle uses (a value it
    cannot write would change the bundle's spec)."""
    from ..toml_writer import dumps_toml

    raw = tomllib.loads((exercise.root / "spec.toml").read_text(encoding="utf-8"))
    try:
        same = tomllib.loads(dumps_toml(raw)) == raw
    except (TypeError, ValueError, tomllib.TOMLDecodeError) as exc:
        return [f"spec.toml cannot be written back for the student bundle: {exc}"]
    return [] if same else ["spec.toml does not read back unchanged through the student bundle's TOML writer"]


def bundle_hides_hidden(exercise: Exercise) -> list[str]:
    """The student bundle holds nothing hidden: no hidden-only size, no line of the solution or the
    wrong corpus that the skeleton lacks, no line of a hidden test that the public files lack. Its
    kind says what it finds (Kind.hidden_in_bundle; a Python exercise's bundle is checked by
    validate's own notebook step)."""
    return kind_of(exercise).hidden_in_bundle(exercise)


def harness_on_device(exercise: Exercise) -> list[str]:
    """A timed kernel exercise's harness computes its reference and magnitude with NumPy calls that also
    run on CuPy arrays (no np.ascontiguousarray, no float() of a whole array, no Python loop over
    elements): the timing then computes its float64 reference on the GPU in milliseconds instead of
    seconds of CPU. Checked on an array that refuses conversion to NumPy, as CuPy's do, against the
    plain NumPy values."""
    traits = kind_of(exercise).traits
    if not (traits.sized and traits.on_gpu) or "performance" not in exercise.spec.checks:
        return []  # (a Triton exercise's timing computes its reference with NumPy on the CPU: grader/triton/timing.py)
    sizes = dict(exercise.spec.cases_for("emu")[-1])
    harness = Harness(exercise)
    inputs = harness.make_inputs(sizes, np.random.default_rng(11))
    want = harness.reference(inputs, sizes)
    try:
        got, magnitude = harness.reference_on_device(STRICT_CUPY, inputs, sizes)
    except Exception as exc:  # noqa: BLE001 - whatever the harness's code raises on a device array
        return [f"harness.py's reference or magnitude does not run on CuPy arrays ({type(exc).__name__}: {exc}); "
                "the timing then computes the reference on the CPU"]
    problems = []
    for name in want:
        if not np.array_equal(got[name], want[name]):
            problems.append(f"harness.py gives other values for {name} on CuPy arrays than on NumPy arrays")
        elif not (got[name].flags.c_contiguous and want[name].flags.c_contiguous):
            problems.append(f"harness.py's {name} is not C-contiguous")
        elif not np.array_equal(magnitude[name], harness.magnitude(inputs, sizes, want)[name]):
            problems.append(f"harness.py's magnitude of {name} differs on CuPy arrays")
    return problems


__all__ = ["CONVENTIONS", "Convention", "bundle_leaks", "check_all", "wrong_files"]

def emulated_past_the_grid_cap(exercise: Exercise) -> list[str]:
    """Where the grid stops growing with the size (a capped grid: `min(ceil(n / 1024), 120)`, with a
    grid-stride loop covering the rest) and a graded size reaches that cap, one of the emulator's sizes
    must reach it too: below the cap every block handles its own stretch of the input, and a kernel with
    no grid-stride loop (or a wrong stride) is right at every size the emulator runs. The cap shows as a
    largest graded size whose grid, more than one block, stays the same when every size is doubled (an
    uncapped `ceil(n / b)` grows whenever n doubles past b)."""
    spec = exercise.spec
    # Only a spec that fixes the grid (a CUDA kernel's launch) and names emulator sizes has a cap to reach.
    if not kind_of(exercise).traits.sized or not hasattr(getattr(spec, "kernel", None), "launch_for") \
            or not getattr(spec, "emu_cases", ()):
        return []

    def blocks(sizes: Any) -> int:
        return int(np.prod(spec.kernel.launch_for(sizes)[0]))

    largest = max(spec.public_cases + spec.hidden_cases, key=blocks)
    cap = blocks(largest)
    if cap <= 1 or blocks({k: 2 * int(v) for k, v in largest.items()}) != cap:
        return []
    reached = max(blocks(c) for c in spec.emu_cases)
    if reached >= cap:
        return []
    sizes = ", ".join(f"{k} = {v}" for k, v in largest.items())
    return [f"the grid stops growing at {cap} blocks ({sizes} reaches it), but no size in cases.emu does (the "
            f"largest launches {reached}): add one, or the emulator passes a kernel with no grid-stride loop"]

CONVENTIONS: tuple[Convention, ...] = (
    Convention("layout", "a skeleton, a reference solution and at least one public size", layout),
    Convention("wrong corpus", f"at least {MIN_WRONG} wrong files with headers, one an edge-size bug", corpus),
    Convention("spec round trip", "spec.toml survives the student bundle's TOML writer", spec_round_trips),
    Convention("student bundle", "the student bundle holds nothing hidden", bundle_hides_hidden),
    Convention("harness on a GPU", "a timed exercise's harness runs on CuPy arrays", harness_on_device),
    Convention("emulated past the grid cap", "a capped grid is reached by one of the emulator's sizes",
               emulated_past_the_grid_cap),
)


def check_all(exercise: Exercise) -> list[tuple[Convention, list[str]]]:
    """Every convention with its problems for this exercise."""
    return [(c, list(c.check(exercise))) for c in CONVENTIONS]



class DeviceArray(np.lib.mixins.NDArrayOperatorsMixin):
    """An array that behaves as CuPy's does in the respect that matters to a harness: NumPy hands its
    operators and functions on it back to it, and it refuses to be converted to a NumPy array
    implicitly (np.ascontiguousarray(x), np.array([x[0] + 1]) raise TypeError, as with CuPy)."""

    def __init__(self, data: np.ndarray) -> None:
        self._data = data

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("Implicit conversion to a NumPy array is not allowed")

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return _wrap(getattr(ufunc, method)(*_unwrap(inputs), **_unwrap(kwargs)))

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return _wrap(func(*_unwrap(args), **_unwrap(kwargs)))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # no __array_interface__ and the like: NumPy must not see through it
            raise AttributeError(name)
        attr = getattr(self._data, name)
        return (lambda *a, **k: _wrap(attr(*_unwrap(a), **_unwrap(k)))) if callable(attr) else _wrap(attr)

    def __getitem__(self, key: Any) -> Any:
        return _wrap(self._data[_unwrap(key)])

    def __float__(self) -> float:  # CuPy reads a one-element array back for float()
        return float(self._data)

    def __len__(self) -> int:
        return len(self._data)


def _wrap(value: Any) -> Any:
    # CuPy gives 0-d arrays where NumPy gives scalars (x[0], x.sum()): so does the stand-in.
    if isinstance(value, np.generic):
        return DeviceArray(np.asarray(value))
    return DeviceArray(value) if isinstance(value, np.ndarray) else value


def _unwrap(value: Any) -> Any:
    if isinstance(value, DeviceArray):
        return value._data
    if isinstance(value, (list, tuple)):
        return type(value)(_unwrap(v) for v in value)
    if isinstance(value, dict):
        return {k: _unwrap(v) for k, v in value.items()}
    return value


# A stand-in for CuPy on the CPU: what Harness.reference_on_device uses of it, on arrays that refuse NumPy.
STRICT_CUPY = types.SimpleNamespace(asarray=lambda v, dtype=None: DeviceArray(np.array(_unwrap(v), dtype=dtype)),
                                    float64=np.float64, abs=lambda v: _wrap(np.abs(_unwrap(v))),
                                    asnumpy=lambda v: np.asarray(_unwrap(v)))
