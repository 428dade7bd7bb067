"""The conventions every exercise keeps, beyond what its spec's schema can say.

Each convention is a function of a loaded exercise that returns its problems (empty: kept). `grade
validate` runs them all (a course's own exercise is held to them as the shipped ones are), and the
project's tests call the same functions on the shipped exercises. docs/exercise-format.md lists them.
"""
from __future__ import annotations

import re
import sys
import tempfile
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from ..exercise import Exercise, Harness
from .expectation import read_expectation

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


def wrong_files(exercise: Exercise) -> list[Path]:
    """The exercise's known-bad submissions: reference/<id>/wrong/*.cu (or *.py for a Python exercise)."""
    return sorted((exercise.reference_dir / "wrong").glob(f"*{exercise.suffix}"))


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
    if exercise.kind != "python" and not exercise.spec.public_cases:
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
    """The student bundle of a kernel exercise holds no hidden-only size (in any form: `N = 129`, a list
    of sizes, `(1003, 4099)`), no line of the solution or the wrong corpus that the skeleton lacks, and
    no line of a hidden test that the public files lack. (A Python exercise's bundle is checked by
    validate's own notebook step.)"""
    if exercise.kind == "python":
        return []
    import nbformat

    from .student_bundle import build_bundle

    with tempfile.TemporaryDirectory(prefix="kg-conventions-") as tmp:
        bundle = build_bundle(exercise.root, Path(tmp))
        texts = [p.read_text(encoding="utf-8", errors="replace") for p in bundle.folder.rglob("*") if p.is_file()]
        texts.append("\n".join(cell.source for cell in nbformat.read(str(bundle.notebook), as_version=4).cells))
    return bundle_leaks(exercise, "\n".join(texts))


def bundle_leaks(exercise: Exercise, everywhere: str) -> list[str]:
    """What of the exercise's hidden material appears in `everywhere` (all the bundle's text)."""
    spec, folder = exercise.spec, exercise.root
    lines = _lines(everywhere)
    problems = []
    public = list(spec.public_cases) + list(spec.emu_cases)
    public += [s for c in spec.checks.values() for s in (c.size, c.emu_size) if s]
    for case in spec.hidden_cases:
        if case in public:
            continue
        inline = "{ " + ", ".join(f"{k} = {v}" for k, v in case.items()) + " }"
        as_json = "{" + ", ".join(f'"{k}": {v}' for k, v in case.items()) + "}"
        if inline in everywhere or as_json in everywhere:
            problems.append(f"hidden size {dict(case)} is in the student bundle")
            continue
        values = [str(v) for v in case.values()]
        if len(values) == 1:  # in prose: "N = 129", or a list of sizes such as "1, 17, 129, 1000"
            (name, value), = ((k, str(v)) for k, v in case.items())
            if re.search(rf"\b{re.escape(name)}\s*=\s*{value}\b", everywhere):
                problems.append(f"hidden size {name} = {value} is named in the student bundle")
            for listed in re.findall(r"\d+(?:,\s*\d+){2,}", everywhere):
                if value in re.split(r",\s*", listed):
                    problems.append(f"hidden size {name} = {value} is in the list of sizes {listed!r} in the student bundle")
        else:  # "(1003, 4099)" or "1003 x 1025"
            for form in ("(" + ", ".join(values) + ")", " x ".join(values)):
                if form in everywhere:
                    problems.append(f"hidden size {form} is in the student bundle")
    for marker in ("hidden =", "[hidden_tests]"):
        if marker in everywhere:
            problems.append(f"`{marker}` is in the student bundle")
    skeleton = _lines(_read(exercise.skeleton_path))
    for path in [exercise.solution_path, *wrong_files(exercise)]:
        for line in sorted(_lines(_read(path)) - skeleton):
            if line in lines:
                problems.append(f"{path.name}: {line!r} (not in the skeleton) is in the student bundle")
    public_lines = set().union(*(_lines(_read(folder / n)) for n in ("README.md", "skeleton.cu", "harness.py")))
    tests = folder / "tests"
    for path in sorted(tests.glob("**/*")) if tests.is_dir() else []:
        if path.is_file() and path.suffix in (".py", ".toml", ".json", ".txt"):
            for line in sorted(_lines(_read(path)) - public_lines):
                if line in lines:
                    problems.append(f"tests/{path.name}: {line!r} is in the student bundle")
    return problems


def harness_on_device(exercise: Exercise) -> list[str]:
    """A timed kernel exercise's harness computes its reference and magnitude with NumPy calls that also
    run on CuPy arrays (no np.ascontiguousarray, no float() of a whole array, no Python loop over
    elements): the timing then computes its float64 reference on the GPU in milliseconds instead of
    seconds of CPU. Checked on an array that refuses conversion to NumPy, as CuPy's do, against the
    plain NumPy values."""
    if exercise.kind == "python" or "performance" not in exercise.spec.checks:
        return []
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


CONVENTIONS: tuple[Convention, ...] = (
    Convention("layout", "a skeleton, a reference solution and at least one public size", layout),
    Convention("wrong corpus", f"at least {MIN_WRONG} wrong files with headers, one an edge-size bug", corpus),
    Convention("spec round trip", "spec.toml survives the student bundle's TOML writer", spec_round_trips),
    Convention("student bundle", "the student bundle holds nothing hidden", bundle_hides_hidden),
    Convention("harness on a GPU", "a timed exercise's harness runs on CuPy arrays", harness_on_device),
)


def check_all(exercise: Exercise) -> list[tuple[Convention, list[str]]]:
    """Every convention with its problems for this exercise."""
    return [(c, list(c.check(exercise))) for c in CONVENTIONS]


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""


def _lines(text: str) -> set[str]:
    return {line.strip() for line in text.splitlines() if line.strip()}


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
