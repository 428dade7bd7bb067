"""The CUDA kind's side that course staff see: `grade validate`'s proof of a kernel exercise, its
student bundle, and the README of its Gradescope zip. (grader.kinds.cuda grades; this is apart from
it for size, and imports no grading.)"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..exercise import Exercise
from ..grading.backend import resolve_backend
from ..grading.validation import Validation, failing, fault_text, wrong_file_verdict
from ..spec import CATEGORIES
from ..staff import student_bundle
from ..staff.expectation import read_expectation
from .base import Grade


def summary(exercise: Exercise) -> str:
    """`grade list`'s line: the kernel and the checks with their points."""
    checks = ", ".join(f"{c} {s.points:g}" for c, s in exercise.spec.checks.items())
    return f"kernel {exercise.spec.kernel.name}; checks: {checks}"


def hidden_in_bundle(exercise: Exercise) -> list[str]:
    """What of the hidden material the student bundle holds (grader.staff.student_bundle.hidden_material)."""
    return student_bundle.hidden_material(exercise)


def build_student_bundle(exercise: Exercise, out: Path, pip_source: str) -> student_bundle.StudentBundle:
    """The kernel exercise's student bundle (grader.staff.student_bundle)."""
    return student_bundle.build_bundle(exercise.root, out, pip_source=pip_source)


def validate(exercise: Exercise, *, grade: Grade, conventions: Callable[[Exercise, Validation], None], backend: str,
             seed: int, progress: Callable[[str], None]) -> Validation:
    """A kernel exercise's promises: the reference scores full marks, the skeleton compiles and fails
    correctness, each wrong/*.cu fails the check category its `// expect:` line names (and only those
    its `// also:` line adds), and the public sizes are among the hidden ones."""
    chosen, _, _ = resolve_backend(backend)
    out = Validation(exercise.id, chosen)
    out.add(True, f"spec.toml is valid ({len(exercise.spec.checks)} checks, {exercise.spec.max_score:g} points)")
    progress("conventions")
    conventions(exercise, out)
    spec = exercise.spec
    if spec.hidden_cases:
        missing = [c for c in spec.public_cases if c not in spec.hidden_cases]
        out.add(not missing, "public sizes are among the hidden sizes" if not missing else f"public sizes missing from hidden: {missing}")

    if not exercise.solution_path.is_file():
        out.add(False, f"no reference solution at {exercise.solution_path}")
        return out
    progress("solution.cu")
    ref = grade(exercise.root, exercise.solution_path, backend=chosen, seed=seed)
    bad = [f"{t.name}: {t.output.splitlines()[0] if t.output else ''}" for t in ref.tests if not t.passed]
    bad += [f"not graded (grader fault: {fault_text(ref)})"] if ref.grader_faults else []
    full = ref.score == ref.max_score
    out.add(not bad and full, f"reference scores {ref.score:g} / {ref.max_score:g}" + (": " + "; ".join(bad) if bad else ""))

    if exercise.skeleton_path.is_file():
        progress("skeleton.cu")
        skel = grade(exercise.root, exercise.skeleton_path, backend=chosen, seed=seed)
        compiled = any(t.category == "compile" and t.passed for t in skel.tests)
        wrong = "correctness" in failing(skel)
        if skel.grader_faults:
            out.add(False, f"skeleton.cu: not graded (grader fault: {fault_text(skel)})")
        else:
            out.add(compiled and wrong, "skeleton compiles and fails correctness" if compiled and wrong else
                    f"skeleton must compile and fail correctness (compiles: {compiled}, fails correctness: {wrong})")
    else:
        out.add(False, "no skeleton.cu")

    wrong_files = sorted((exercise.reference_dir / "wrong").glob("*.cu"))
    if not wrong_files:
        out.add(False, "no wrong submissions in reference/<id>/wrong/")
    for path in wrong_files:
        exp = read_expectation(path)
        if exp is None or exp.expect not in CATEGORIES:
            out.add(False, f"wrong/{path.name}: first lines must say `// expect: <category>` (one of {', '.join(CATEGORIES)})")
            continue
        progress(f"wrong/{path.name}")
        report = grade(exercise.root, path, backend=chosen, seed=seed)
        if report.grader_faults:
            out.add(False, f"wrong/{path.name}: not graded (grader fault: {fault_text(report)})")
            continue
        skipped = {n.category for n in report.not_run}
        if exp.expect in skipped:
            out.add(True, f"wrong/{path.name}: {exp.expect} cannot run on this backend (skipped)")
            continue
        out.add(*wrong_file_verdict(path.name, report, exp.expect, exp.also, "//"))
    return out


# The README.md of the Gradescope zip (grader.staff.gradescope), a str.format template.
GRADESCOPE_README = """# Gradescope autograder: {id} ({title})

Built by kernel-grader {version} (`grade gradescope`). Upload this zip under the assignment's
"Configure Autograder" with the Ubuntu 22.04 base image. Students submit one file, `{filename}`.

## What runs where

- `setup.sh` (once, when Gradescope builds the image): installs Python, then this grader from
  `kernel-grader/` with its dependencies (CuPy and NVIDIA's NVRTC wheel, which compile CUDA to PTX
  without a GPU, and pytest for the hidden tests) into `/autograder/venv`, and grades the reference
  solution as a smoke test: unless it gets full marks, setup.sh fails and so does the image build.
- `run_autograder` (once per submission): grades `/autograder/submission/*.cu` (or `*.ipynb`) and writes
  `/autograder/results/results.json`, always, whatever the submission does.
  - `{filename}` is graded; a single `.cu` file with another name is graded too, with a note
    asking for the right name; without a `.cu` file, a single Colab notebook (`.ipynb`, any name)
    is graded: the kernel in its `%%writefile submission.cu` cell, never run as a notebook. No
    `.cu` file and no notebook, or several and none named `{filename}`, gives a score of 0 and a
    message saying what was expected.
  - One grading may take {timeout:g} s (`bundle.json`); past that it is stopped and scored 0 with a
    message, before Gradescope's own limit (10 minutes by default) would leave no results at all.

## No GPU on Gradescope

Gradescope's autograders have no GPU, so the **CPU emulator** grades: compile, correctness (at the
exercise's emulator sizes), races and barriers, memory safety, and exact global-memory traffic and
shared-memory bank conflicts, each against the reference solution in `reference/{id}/`. The
**performance check is not run** (it needs a GPU); it is listed under `extra_data.not_run` in
results.json and never counted as passed. By default its points leave the denominator, so a
submission that passes everything that runs here gets full marks (`score` is scaled to the
exercise's maximum; `extra_data.raw_score` and `raw_max_score` keep the points); the exercise's
spec.toml can choose otherwise per check (`if_not_run`). Grade speed on a GPU host with `grade batch`.

Inputs are seeded from the exercise and each file's content, so a regrade of the same file gives
the same result. Build the zip with `KERNEL_GRADER_SECRET` set to mix a course secret into the
seeds (it is stored in `bundle.json`).

Student code never runs natively here: NVRTC compiles it and the emulator interprets the PTX,
in child processes with time limits and capped output.

## Sizing

Grading a typical submission takes 5-15 s of one CPU core; a kernel that hangs is stopped at the
exercise's run limit. The emulator holds the buffers of the emulator sizes in memory: grading
level2 peaks at about 140 MB per process, under Gradescope's default of 768 MB; raise the limit in
the assignment's settings if an exercise uses larger emulator sizes.

## This zip contains secrets

`exercises/{id}/` holds the hidden cases and hidden tests, and `reference/{id}/solution.cu` the
solution. Keep the zip where students cannot download it.

## Testing it locally

    mkdir -p /tmp/ag/submission && unzip autograder.zip -d /tmp/ag/source
    cp my_kernel.cu /tmp/ag/submission/{filename}
    KERNEL_GRADER_AUTOGRADER_ROOT=/tmp/ag KERNEL_GRADER_PYTHON=python3 bash /tmp/ag/source/run_autograder
    cat /tmp/ag/results/results.json
"""
