"""Every shipped exercise keeps its promises on the emulator: `grade validate` in CI (no GPU)."""
from __future__ import annotations

from pathlib import Path

import pytest

from grader.validate import read_expectation, validate

ROOT = Path(__file__).resolve().parent.parent
EXERCISES = sorted(p.parent.name for p in (ROOT / "exercises").glob("*/spec.toml"))


@pytest.mark.slow
@pytest.mark.parametrize("exercise", EXERCISES)
def test_exercise_validates_on_the_emulator(exercise):
    result = validate(ROOT / "exercises" / exercise, backend="emu", seed=1)
    failures = [text for ok, text in result.items if not ok]
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("exercise", EXERCISES)
def test_each_exercise_has_a_corpus_with_an_edge_size_bug(exercise):
    wrong = sorted((ROOT / "reference" / exercise / "wrong").glob("*.cu")) + sorted((ROOT / "reference" / exercise / "wrong").glob("*.py"))
    assert len(wrong) >= 5
    headers = [read_expectation(p) for p in wrong]
    assert all(h is not None for h in headers)
    # At least one bug that only shows when the size is not a multiple of the block or tile.
    assert any("multiple" in p.read_text()[:600] or "% " in p.read_text()[:600] for p in wrong)
