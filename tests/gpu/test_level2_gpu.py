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


def test_a_batch_profiles_in_groups_and_each_submission_gets_its_lone_counts(tmp_path):
    """`grade batch` profiles many submissions per ncu run (grader.run.parent.profile_broker): every counter
    verdict, down to the counts, is the one the same file gets graded alone with the same seed."""
    import json

    from grader.staff import batch
    from grader.results import to_json

    files = [ROOT / "reference/level2/solution.cu"] + [p for p in WRONG if p.stem in ("no_tiling", "unguarded_loads")]
    subs = tmp_path / "subs"
    subs.mkdir()
    for path in files:
        for k in range(3):
            (subs / f"{path.stem}_{k}.cu").write_bytes(path.read_bytes())
    out = tmp_path / "out"
    batch.run_batch(EXERCISE, subs, out, batch.Options(backend="gpu", per_gpu=9, profile_group=8, seed=1))
    stages = {s["name"] for s in json.loads((out / "results" / "solution_0.json").read_text())["extra_data"]["stages"]}
    assert "ncu (batch profiler)" in stages and "ncu" not in stages  # the profiler answered; no ncu run of its own

    def counters(doc):
        return {t["name"]: (t["score"], t["status"], t["extra_data"].get("submission"), t["extra_data"].get("reference"))
                for t in doc["tests"] if t["tags"][0] in ("traffic", "bank-conflicts")}

    for path in files:
        alone = counters(json.loads(json.dumps(to_json(grade(EXERCISE, path, backend="gpu", seed=1)))))
        assert alone
        for k in range(3):
            assert counters(json.loads((out / "results" / f"{path.stem}_{k}.json").read_text())) == alone, f"{path.stem}_{k}"
