"""`grade validate`: proof that an exercise is ready to hand out.

The spec validates; the reference solution scores full marks; the skeleton compiles and fails
correctness; every wrong submission fails the category its header names (`// expect: race`) and
nothing it does not declare (`// also: correctness`); the public sizes are among the hidden ones.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from . import api
from .exercise import Exercise
from .exercise import load as load_exercise
from .results import Report
from .spec import CATEGORIES

_EXPECT = re.compile(r"^\s*//\s*expect:\s*([\w-]+)\s*$", re.MULTILINE)
_ALSO = re.compile(r"^\s*//\s*also:\s*([\w\s,-]+?)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Expectation:
    """What a wrong submission declares about itself."""

    expect: str
    also: frozenset[str] = frozenset()


@dataclass
class Validation:
    """The verdict on one exercise: each item is (ok, text)."""

    exercise: str
    backend: str
    items: list[tuple[bool, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(ok for ok, _ in self.items)

    def add(self, ok: bool, text: str) -> None:
        self.items.append((ok, text))


def read_expectation(path: Path) -> Expectation | None:
    """The `// expect:` and `// also:` header of a wrong submission, or None if it has none."""
    head = path.read_text(encoding="utf-8", errors="replace")[:2000]
    match = _EXPECT.search(head)
    if not match:
        return None
    also = _ALSO.search(head)
    names = frozenset(a.strip() for a in also.group(1).split(",") if a.strip()) if also else frozenset()
    return Expectation(match.group(1), names)


def failing(report: Report) -> set[str]:
    """Categories the report failed, leaving out checks that were only gated (not graded)."""
    return {t.category for t in report.tests if not t.passed and not t.extra.get("gated")}


def validate(exercise_dir: Path, *, backend: str = "auto", seed: int = 1,
             progress: Callable[[str], None] = lambda _: None) -> Validation:
    """Run every promise an exercise makes and collect the verdicts."""
    exercise: Exercise = load_exercise(exercise_dir)
    chosen, _, _ = api.resolve_backend(backend)
    out = Validation(exercise.id, chosen)
    out.add(True, f"spec.toml is valid ({len(exercise.spec.checks)} checks, {exercise.spec.max_score:g} points)")
    spec = exercise.spec
    if spec.hidden_cases:
        missing = [c for c in spec.public_cases if c not in spec.hidden_cases]
        out.add(not missing, "public sizes are among the hidden sizes" if not missing else f"public sizes missing from hidden: {missing}")

    if not exercise.solution_path.is_file():
        out.add(False, f"no reference solution at {exercise.solution_path}")
        return out
    progress("solution.cu")
    ref = api.grade(exercise.root, exercise.solution_path, backend=chosen, seed=seed)
    bad = [f"{t.name}: {t.output.splitlines()[0] if t.output else ''}" for t in ref.tests if not t.passed]
    bad += [f"{n.name} not run: {n.reason}" for n in ref.grader_faults]
    full = ref.score == ref.max_score
    out.add(not bad and full, f"reference scores {ref.score:g} / {ref.max_score:g}" + (": " + "; ".join(bad) if bad else ""))

    if exercise.skeleton_path.is_file():
        progress("skeleton.cu")
        skel = api.grade(exercise.root, exercise.skeleton_path, backend=chosen, seed=seed)
        compiled = any(t.category == "compile" and t.passed for t in skel.tests)
        wrong = "correctness" in failing(skel)
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
        report = api.grade(exercise.root, path, backend=chosen, seed=seed)
        failed = failing(report)
        skipped = {n.category for n in report.not_run}
        if exp.expect in skipped:
            out.add(True, f"wrong/{path.name}: {exp.expect} cannot run on this backend (skipped)")
            continue
        undeclared = failed - {exp.expect} - exp.also
        ok = exp.expect in failed and not undeclared
        text = f"wrong/{path.name}: fails {exp.expect}" if exp.expect in failed else f"wrong/{path.name}: should fail {exp.expect} but passed it"
        if undeclared:
            text += f"; also fails {', '.join(sorted(undeclared))} (not declared in `// also:`)"
        out.add(ok, text)
    return out

