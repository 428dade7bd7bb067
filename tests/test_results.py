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
