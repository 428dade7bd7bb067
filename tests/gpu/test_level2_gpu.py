"""The level2 exercise graded on a real GPU: reference full marks, skeleton zero, each wrong file caught."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from grader.api import grade

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]
EXERCISE = ROOT / "exercises" / "level2"
WRONG = sorted((ROOT / "reference" / "level2" / "wrong").glob("*.cu"))


def _by_category(report):
    return {t.category: t for t in report.tests}


def test_reference_scores_full_marks():
    report = grade(EXERCISE, ROOT / "reference/level2/solution.cu", backend="gpu", seed=1)
    failed = [(t.name, t.output) for t in report.tests if not t.passed]
    assert not failed
    assert report.score == pytest.approx(report.max_score, rel=0.02)


def test_skeleton_scores_zero_on_correctness():
    report = grade(EXERCISE, EXERCISE / "skeleton.cu", backend="gpu", seed=2)
    assert _by_category(report)["correctness"].score == 0


@pytest.mark.parametrize("path", WRONG, ids=[p.stem for p in WRONG])
def test_wrong_submission_fails_its_category(path):
    expected = re.search(r"//\s*expect:\s*([\w-]+)", path.read_text()).group(1)
    report = grade(EXERCISE, path, backend="gpu", seed=3)
    test = _by_category(report).get(expected)
    assert test is not None and not test.passed, f"{path.name} should fail {expected}: {[(t.category, t.passed, t.output[:200]) for t in report.tests]}"
