"""The Triton kind: a @triton.jit kernel and its launcher (a .py module, or a notebook's definitions),
run by Triton's interpreter on the CPU in the Python kind's walled-off child, every load and store
watched, and on a GPU where there is one, compiled by Triton in a jailed child given that GPU. The
pipeline itself is grader.triton.grade; this is its face as a kind."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..exercise import Exercise
from ..grading.submitted import Submitted
from ..grading.validation import Validation
from ..pyexercise import grade as pygrade
from ..results import NotRun, Report, TestResult
from ..staff.student_bundle import StudentBundle
from ..triton import grade as tritongrade
from ..triton import student_bundle as tritonstudent
from ..triton import validate as tritonvalidate
from .base import Grade, KindTraits, Options

# The README.md of the Gradescope zip (grader.staff.gradescope), a str.format template.
GRADESCOPE_README = """# Gradescope autograder: {id} ({title})

Built by kernel-grader {version} (`grade gradescope`). A Triton exercise: students submit `{filename}`
(their `@triton.jit` kernel and its launcher) or the Colab notebook they worked in.

## The image needs torch and Triton (CPU builds)

Gradescope has no GPU: the grader runs the kernel under Triton's interpreter on the CPU, which needs
torch and Triton beside the grader. `setup.sh` installs them before the grader:

    "$ROOT/venv/bin/python" -m pip install torch --index-url https://download.pytorch.org/whl/cpu
    "$ROOT/venv/bin/python" -m pip install triton

(PyPI's Linux `torch` is the CUDA build, several GB; the CPU build is a few hundred MB. Triton's
wheel is about 400 MB.) If either install fails, the image fails to build; on an image without
them every Triton check would be reported as not run, never as the student's failure.

## What runs where

- `setup.sh` (once, when Gradescope builds the image): installs Python and this grader into
  `/autograder/venv`, then grades the reference solution as a smoke test.
- `run_autograder` (once per submission): grades `/autograder/submission/` and writes
  `/autograder/results/results.json`, always. `{filename}` is graded; else a single `.py` file;
  else a single notebook (`.ipynb`), whose code cells' definitions are graded and whose calls,
  `!` lines and `%` magics are never run. One grading may take {timeout:g} s (`bundle.json`).

The submission runs in a child process in the jail of the Python kind (bubblewrap's namespaces or
Landlock, a seccomp filter, a uid of its own), lent torch, Triton and NumPy read-only, with
`TRITON_INTERPRET=1`. Every output and guard region is filled with NaN and judged outside the child;
the watch of each `tl.load`/`tl.store` names an unmasked lane outside its tensor (tensor, offset,
program, line). See docs/triton-exercises.md and docs/sandbox.md in the grader's repository.

## This zip contains secrets

`exercises/{id}/spec.toml` holds the hidden sizes and `reference/{id}/` the solution. Keep the zip
where students cannot download it.

## Testing it locally

    mkdir -p /tmp/ag/submission && unzip autograder.zip -d /tmp/ag/source
    cp my_kernel.py /tmp/ag/submission/{filename}
    KERNEL_GRADER_AUTOGRADER_ROOT=/tmp/ag KERNEL_GRADER_PYTHON=python3 bash /tmp/ag/source/run_autograder
    cat /tmp/ag/results/results.json
"""


# Triton's interpreter and the torch whose tensors it reads, on a machine with no GPU: the CPU build
# of torch from PyTorch's own index (PyPI's Linux torch is the CUDA build, several GB).
CPU_TRITON = ("torch --index-url https://download.pytorch.org/whl/cpu", "triton")


class TritonKind:
    """Triton exercises (spec kind "triton"): the CPU path (Triton's interpreter) always, and the GPU
    path (Triton's compiler) beside it where a GPU is usable."""

    name = "triton"
    # on_gpu is False: the batch's warm GPU workers and Nsight Compute lane are the CUDA kind's; the
    # Triton kind's children are its own.
    traits = KindTraits(suffix=".py", python_source=True, on_gpu=False, sized=True, profiled=False,
                        requires=CPU_TRITON)
    gradescope_readme = GRADESCOPE_README

    def read(self, exercise: Exercise, path: Path) -> Submitted:
        """The .py module, or a notebook's definitions, read once and held to the size limits (as the
        Python kind reads them)."""
        return pygrade.read(path, exercise.spec)  # type: ignore[arg-type]

    def grade(self, exercise: Exercise, submitted: Submitted, options: Options) -> Report:
        """Grade the kernel and launcher under the interpreter, every load and store watched; where a GPU
        is asked for ("gpu") or found ("auto"), also compiled by Triton and run on it (grader/triton/gpu.py)."""
        return tritongrade.grade(exercise, submitted, seed=options.seed, started=options.started, requested=options.backend)

    def not_graded(self, exercise: Exercise, backend: str, reason: str) -> tuple[list[TestResult], list[NotRun]]:
        """The load test failed with `reason`, every check gated."""
        return tritongrade.not_loaded(exercise.spec, reason)  # type: ignore[arg-type]

    def summary(self, exercise: Exercise) -> str:
        """The launcher's signature and the checks with their points."""
        spec = exercise.spec
        checks = ", ".join(f"{name} {points:g}" for name, points in spec.points.items() if points)  # type: ignore[union-attr]
        return f"Triton kernel, launcher {spec.signature.removeprefix('def ')}: {checks}"  # type: ignore[union-attr]

    def student_bundle(self, exercise: Exercise, out: Path, pip_source: str) -> StudentBundle:
        """README, skeleton.py, harness.py, checks.py, the public spec and a Colab notebook; the
        notebook uses Colab's own torch and Triton, so `pip_source` does not apply."""
        return StudentBundle(*tritonstudent.build_bundle(exercise, Path(out)))

    def hidden_in_bundle(self, exercise: Exercise) -> list[str]:
        """Hidden-only sizes and solution or wrong-corpus lines found in a freshly built bundle."""
        return tritonstudent.hidden_material(exercise)

    def validate(self, exercise: Exercise, *, grade: Grade, conventions: Callable[[Exercise, Validation], None],
                 backend: str, seed: int, progress: Callable[[str], None]) -> Validation:
        """The conventions, the reference, the skeleton and the wrong corpus, graded on `backend` (with
        "gpu", the reference's grading must have run on the GPU)."""
        return tritonvalidate.validate(exercise, grade=grade, conventions=conventions, backend=backend,
                                       seed=seed, progress=progress)
