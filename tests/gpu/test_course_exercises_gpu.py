"""The course exercises (reduction, softmax, histogram, half_gemv) on a real GPU: each validates,
and the float-atomic reduction passes the race check (compare = "tolerance") while its racy
variants fail it."""
from __future__ import annotations

from pathlib import Path

import pytest

from grader.api import grade
from grader.staff.validate import validate

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("exercise", ["reduction", "softmax", "histogram", "half_gemv"])
def test_exercise_validates_on_the_gpu(exercise):
    result = validate(ROOT / "exercises" / exercise, backend="gpu", seed=1)
    failures = [text for ok, text in result.items if not ok]
    assert not failures, "\n".join(failures)


def _race(path: Path):
    report = grade(ROOT / "exercises" / "reduction", path, backend="gpu", seed=5)
    return next(t for t in report.tests if t.category == "race")


def test_a_correct_float_atomic_reduction_passes_the_race_check():
    race = _race(ROOT / "reference" / "reduction" / "solution.cu")
    assert race.passed, race.output


@pytest.mark.parametrize("name", ["plain_add_across_blocks", "warp_tail_without_sync", "missing_tree_barrier",
                                  "block_scoped_atomic_across_blocks", "volatile_warp_tail"])
def test_racy_reductions_fail_it(name):
    race = _race(ROOT / "reference" / "reduction" / "wrong" / f"{name}.cu")
    assert not race.passed, race.output


def test_racecheck_reports_the_volatile_warp_synchronous_tail(tmp_path):
    """What warp_synchronous = "race" (the default) rests on, besides the programming guide: with
    the sanitizers forced on, compute-sanitizer racecheck itself reports the legacy volatile tail."""
    import shutil

    exercise = tmp_path / "reduction"
    shutil.copytree(ROOT / "exercises" / "reduction", exercise, ignore=shutil.ignore_patterns("__pycache__"))
    spec = exercise / "spec.toml"
    spec.write_text(spec.read_text().replace("[checks.race]\n", "[checks.race]\nsanitizer = \"always\"\n"))
    report = grade(exercise, ROOT / "reference" / "reduction" / "wrong" / "volatile_warp_tail.cu", backend="gpu", seed=5)
    race = next(t for t in report.tests if t.category == "race")
    assert not race.passed
    assert "compute-sanitizer racecheck" in race.output, race.output
