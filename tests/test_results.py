import json

import jsonschema
import pytest

from grader.results import NotRun, Report, TestResult, summary_lines, to_json, validate, write_atomic


def _report(**kw):
    base = dict(exercise="level2", submission="s.cu", sha256="ab" * 32, backend="emu", device="CPU emulator",
                tests=(TestResult("Correctness", "correctness", 20, 40, False, "wrong at N = 33"),
                       TestResult("Races and barriers", "race", 15, 15, True, "none")),
                not_run=(NotRun("Performance", "performance", "timing needs a GPU"),),
                max_score=100, seconds=1.5, seeds={"base": 7})
    base.update(kw)
    return Report(**base)


def test_document_is_schema_valid_and_gradescope_shaped(tmp_path):
    doc = to_json(_report())
    validate(doc)
    assert doc["score"] == 35
    assert doc["tests"][0]["tags"][0] == "correctness"
    assert doc["tests"][0]["status"] == "failed"
    assert doc["extra_data"]["not_run"][0]["category"] == "performance"
    path = tmp_path / "out" / "results.json"
    write_atomic(doc, path)
    assert json.loads(path.read_text()) == doc
    assert [p.name for p in path.parent.iterdir()] == ["results.json"]


def test_an_unknown_category_is_rejected_before_writing(tmp_path):
    doc = to_json(_report(tests=(TestResult("X", "speed", 1, 1, True, ""),)))
    with pytest.raises(jsonschema.ValidationError):
        write_atomic(doc, tmp_path / "r.json")
    assert not (tmp_path / "r.json").exists()


def test_summary_has_a_line_per_test_and_what_to_fix():
    text = "\n".join(summary_lines(_report()))
    assert "FAIL  Correctness" in text and "wrong at N = 33" in text
    assert "not run: timing needs a GPU" in text and "35 / 100" in text


def test_results_file_is_readable_by_others(tmp_path):
    import os
    import stat

    path = tmp_path / "r.json"
    old = os.umask(0o022)
    try:
        write_atomic(to_json(_report()), path)
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def _perfect(**kw):
    conf = dict(tests=(TestResult("Correctness", "correctness", 35, 35, True, "right"),
                       TestResult("Traffic", "traffic", 15, 15, True, "ok")),
                max_score=65)
    conf.update(kw)
    return _report(**conf)


def test_a_check_that_cannot_run_here_leaves_the_denominator_by_default():
    report = _perfect(not_run=(NotRun("Performance", "performance", "needs a GPU", points=15),))
    assert (report.score, report.raw_score, report.raw_max) == (65, 50, 50)
    assert report.score_line().startswith("score: 65 / 65 (performance not run here: needs a GPU; 50 of the 50")
    doc = to_json(report)
    validate(doc)
    assert (doc["score"], doc["extra_data"]["raw_score"], doc["extra_data"]["raw_max_score"]) == (65, 50, 50)
    assert doc["extra_data"]["not_run"][0] == {"name": "Performance", "category": "performance", "reason": "needs a GPU",
                                               "points": 15, "policy": "exclude", "grader_fault": False}
    half = _perfect(tests=(TestResult("Correctness", "correctness", 10, 35, False, "wrong"),
                           TestResult("Traffic", "traffic", 15, 15, True, "ok")),
                    not_run=(NotRun("Performance", "performance", "needs a GPU", points=15),))
    assert half.score == 32.5  # 25 of 50, scaled to 65


def test_the_award_and_zero_policies():
    award = NotRun("Performance", "performance", "needs a GPU", points=15, policy="award")
    assert _perfect(not_run=(award,)).score == 65
    # Awarded only when everything that ran passed: a check that cannot run is no free points.
    wrong = (TestResult("Correctness", "correctness", 0, 35, False, "wrong"), TestResult("Traffic", "traffic", 15, 15, True, ""))
    assert _perfect(tests=wrong, not_run=(award,)).score == 15
    zero = NotRun("Performance", "performance", "needs a GPU", points=15, policy="zero")
    assert _perfect(not_run=(zero,)).score == 50 and not _perfect(not_run=(zero,)).excluded


def test_a_grader_fault_never_costs_points_and_says_whose_problem_it_is():
    fault = NotRun("Hidden tests", "correctness", "pytest is not installed", points=15, policy="zero", grader_fault=True)
    report = _perfect(not_run=(fault,))
    assert report.score == 65 and report.grader_faults == (fault,)
    assert "the grader's problem" in "\n".join(summary_lines(report))
    assert "not counted against you" in to_json(report)["output"]


def test_nothing_could_run_scores_zero():
    nothing = NotRun("Correctness", "correctness", "the emulator cannot run this kernel", points=65, policy="exclude")
    assert _report(tests=(), not_run=(nothing,), max_score=65).score == 0


def test_points_read_as_a_person_adds_them():
    """1.25 must not print as 1.2 (Python rounds the binary value half to even)."""
    from grader.results import points_text
    assert points_text(1.25) == "1.25"
    assert points_text(2.675) == "2.68"
    assert points_text(40) == "40.0"
    assert points_text(40, min_decimals=0) == "40"
    assert points_text(13.333333) == "13.33"
    assert points_text(-0.0) == "0.0"
