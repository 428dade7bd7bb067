"""An exercise folder: its spec, its files, its harness, and its reference solution."""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Mapping

import numpy as np

from . import bfloat16
from .pyexercise import spec as pyspec
from . import spec as spec_module
from .errors import SpecError
from .pyexercise.spec import PySpec
from .spec import Spec
from .triton import spec as tritonspec
from .triton.spec import TritonSpec

# The source file each kind's submissions, skeleton and solution are, by the spec's kind: a fact of the
# kind (grader.kinds.base.KindTraits.suffix; tests/test_kinds.py holds the two equal), kept here too
# because this module sits below the kinds and cannot ask them.
SUFFIXES = {"cuda": ".cu", "python": ".py", "triton": ".py"}


@dataclass(frozen=True)
class Exercise:
    """A loaded exercise: validated spec plus the paths that belong to it."""

    root: Path
    spec: Spec | PySpec | TritonSpec

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def kind(self) -> str:
        """"cuda" (a kernel, spec.Spec), "python" (functions, pyspec.PySpec) or "triton" (a Triton kernel
        and its launcher, tritonspec.TritonSpec)."""
        return self.spec.kind if isinstance(self.spec, (PySpec, TritonSpec)) else "cuda"

    @property
    def suffix(self) -> str:
        """The source file a submission is: .cu, or .py for a Python or Triton exercise (SUFFIXES)."""
        return SUFFIXES[self.kind]

    @property
    def harness_path(self) -> Path:
        return self.root / "harness.py"

    @property
    def skeleton_path(self) -> Path:
        return self.root / f"skeleton{self.suffix}"

    @property
    def reference_dir(self) -> Path:
        """reference/<id>/ beside exercises/, where the solution and the wrong corpus live."""
        return self.root.parent.parent / "reference" / self.id

    @property
    def solution_path(self) -> Path:
        return self.reference_dir / f"solution{self.suffix}"


def load(root: Path) -> Exercise:
    """Load and validate an exercise folder; SpecError names what is missing or wrong."""
    root = Path(root).resolve()
    if not root.is_dir():
        raise SpecError(f"{root}: not an exercise folder (expected a folder holding spec.toml)")
    spec = _load_spec(root / "spec.toml")
    if spec.id != root.name:
        raise SpecError(f"{root / 'spec.toml'}: field id: {spec.id!r} must equal the folder name {root.name!r}")
    if isinstance(spec, PySpec):
        for name in spec.public_modules + ("checks.py",):
            if not (root / name).is_file():
                raise SpecError(f"{root}: missing {name} (a Python exercise needs its public checks and modules)")
        return Exercise(root=root, spec=spec)
    if not (root / "harness.py").is_file():
        if isinstance(spec, TritonSpec):
            raise SpecError(f"{root}: missing harness.py (it defines make_inputs(sizes, rng) and reference(inputs, sizes))")
        raise SpecError(f"{root}: missing harness.py (it defines reference(inputs, sizes))")
    if spec.hidden_tests is not None and spec.hidden_tests.points > 0 and not any((root / "tests").glob("test_*.py")):
        # Otherwise every kernel would collect these points for tests that do not exist.
        raise SpecError(f"{root / 'spec.toml'}: [hidden_tests] gives {spec.hidden_tests.points:g} points but "
                        f"{root / 'tests'} holds no test_*.py file; add the tests, or remove [hidden_tests]")
    return Exercise(root=root, spec=spec)


def _load_spec(path: Path) -> Spec | PySpec:
    """spec.toml of any kind: `kind = "python"` a Python exercise, `kind = "triton"` a Triton one,
    anything else a kernel."""
    raw = spec_module.read_toml(path)
    if raw.get("kind") == pyspec.KIND:
        return pyspec.from_dict(raw, source=str(path))
    if raw.get("kind") == tritonspec.KIND:
        return tritonspec.from_dict(raw, source=str(path))
    return spec_module.from_dict(raw, source=str(path))


def discover(root: Path) -> list[Exercise]:
    """Every exercise under a folder (each sub-folder with a spec.toml), sorted by id."""
    return sorted((load(p.parent) for p in Path(root).glob("*/spec.toml")), key=lambda e: e.id)


class Harness:
    """An exercise's harness.py: inputs, the float64 reference, error magnitudes, a GPU baseline."""

    def __init__(self, exercise: Exercise):
        self.exercise = exercise
        self.module = _import_file(exercise.harness_path, f"kernel_grader_harness_{exercise.id}")
        if not callable(getattr(self.module, "reference", None)):
            raise SpecError(f"{exercise.harness_path}: must define reference(inputs, sizes)")

    def make_inputs(self, sizes: Mapping[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Inputs for every in/inout buffer, from the harness or uniform(-1, 1) by default."""
        kernel = self.exercise.spec.kernel
        custom = getattr(self.module, "make_inputs", None)
        made = dict(custom(dict(sizes), rng)) if custom else {}
        inputs = {}
        for p in kernel.buffers:
            if p.role not in ("in", "inout"):
                continue
            shape = p.shape_for(sizes)
            if p.name in made:
                arr = np.ascontiguousarray(made[p.name], dtype=p.dtype)
                if arr.shape != shape:
                    raise SpecError(f"{self.exercise.harness_path}: make_inputs gave {p.name} shape {arr.shape}, spec says {shape}")
            elif np.dtype(p.dtype).kind == "f":
                arr = rng.uniform(-1.0, 1.0, size=shape).astype(p.dtype)
            elif np.dtype(p.dtype).kind == "u":
                arr = rng.integers(0, 100, size=shape).astype(p.dtype)
            else:
                arr = rng.integers(-100, 100, size=shape).astype(p.dtype)
            if p.is_bfloat16:
                arr = bfloat16.round_values(arr)  # the values the kernel will read, exactly
            inputs[p.name] = arr
        for name in kernel.constants:
            if name not in made:
                raise SpecError(f"{self.exercise.harness_path}: make_inputs must give the __constant__ array {name}")
            inputs[name] = np.ascontiguousarray(made[name])
        return inputs

    def reference(self, inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int], xp: Any = np) -> dict[str, np.ndarray]:
        """The float64 expected value of each output buffer. `xp`: the array module the inputs belong to
        (CuPy, for reference_on_device)."""
        out = self.module.reference({k: v.copy() for k, v in inputs.items()}, dict(sizes))
        return {p.name: xp.asarray(out[p.name], dtype=xp.float64).reshape(p.shape_for(sizes)) for p in self.exercise.spec.kernel.outputs}

    def magnitude(self, inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int], expected: Mapping[str, np.ndarray],
                  xp: Any = np) -> dict[str, np.ndarray]:
        """Scale of each output's rounding error; |expected| unless the harness knows better."""
        custom = getattr(self.module, "magnitude", None)
        if custom is None:
            return {k: xp.abs(v) for k, v in expected.items()}
        got = custom({k: v.copy() for k, v in inputs.items()}, dict(sizes))
        return {k: xp.abs(xp.asarray(got[k], dtype=xp.float64)).reshape(expected[k].shape) for k in expected}

    def reference_on_device(self, cp: Any, inputs: Mapping[str, np.ndarray],
                            sizes: Mapping[str, int]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """reference() and magnitude(), run by the harness's own NumPy code on CuPy copies of the inputs
        (NumPy hands its functions and operators on CuPy arrays to CuPy), downloaded to host memory. A
        float64 product of two 2048 x 2048 matrices takes milliseconds on a GPU and seconds of CPU.
        Raises where the harness's code cannot run on CuPy arrays (a conversion to NumPy, a function
        CuPy lacks): the caller computes on the CPU instead."""
        dev = {k: cp.asarray(v) for k, v in inputs.items()}
        expected = self.reference(dev, sizes, xp=cp)
        magnitude = self.magnitude(dev, sizes, expected, xp=cp)
        return ({k: cp.asnumpy(v) for k, v in expected.items()}, {k: cp.asnumpy(v) for k, v in magnitude.items()})

    def baseline(self):
        """The optional vendor-library baseline callable baseline(cp, inputs, sizes), or None."""
        return getattr(self.module, "baseline", None)


def _import_file(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SpecError(f"{path}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # a broken harness is the exercise author's error
        raise SpecError(f"{path}: failed to import: {type(exc).__name__}: {exc}") from None
    return module
