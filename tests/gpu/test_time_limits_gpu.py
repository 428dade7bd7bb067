"""Time limits on a GPU: a grading's verdict does not depend on which size hit its limit first, and a
true hang is reported within seconds (grader.run.child.launch_budget, grader.run.parent.supervisor)."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from grader.api import grade

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]
LEVEL2 = ROOT / "exercises" / "level2"
PRINTF = ROOT / "tests" / "data" / "level2_printf_every_thread.cu"
SPIN = ROOT / "tests" / "hostile" / "endless_loop_all.cu"


def test_a_kernel_that_prints_from_every_thread_gets_one_score_in_five_gradings(tmp_path):
    """Slow at the large sizes only because of its printf: wherever it is stopped, it is stopped at the
    same sizes (a stop fails that size and every larger one), and the rest of the grading ends by the
    grading's deadline, so five gradings with the same seed give the same score and verdicts."""
    scores, verdicts, took = [], [], []
    for i in range(5):
        started = time.monotonic()
        report = grade(LEVEL2, PRINTF, backend="gpu", seed=7, workdir=tmp_path / f"g{i}")
        took.append(time.monotonic() - started)
        scores.append(report.score)
        verdicts.append(tuple((t.name, t.passed, round(t.score, 4)) for t in report.tests if t.category != "performance"))
    print(f"scores {scores}, seconds {[round(t, 1) for t in took]}")
    assert len(set(scores)) == 1, scores
    assert len(set(verdicts)) == 1, verdicts
    assert max(took) < 60, took


def test_an_endless_loop_is_reported_within_ten_seconds(tmp_path):
    started = time.monotonic()
    report = grade(LEVEL2, SPIN, backend="gpu", seed=1, workdir=tmp_path)
    took = time.monotonic() - started
    correctness = next(t for t in report.tests if t.category == "correctness" and not t.name.startswith("Hidden"))
    print(f"endless_loop_all.cu graded on the GPU in {took:.1f} s")
    assert not correctness.passed and "did not finish" in correctness.output and "endless loop" in correctness.output
    assert took < 10, took
