"""bench/compare_results.py: two folders of results documents compared file by file; a change of
score, of a test's outcome or of the counts a counter check shows is printed, times are not."""
from __future__ import annotations

import copy
import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

DOC = {"score": 85.0, "execution_time": 3.2, "tests": [
    {"name": "Correctness", "score": 50, "max_score": 50, "status": "passed", "extra_data": {}},
    {"name": "Global memory traffic", "score": 15, "max_score": 15, "status": "passed",
     "extra_data": {"ratio": 1.0, "sizes": {"N": 1000}, "summed": ["ld"], "submission": {"ld": 10.0}, "reference": {"ld": 10.0}}}],
    "extra_data": {"not_run": [], "seeds": {"base": 1}, "stages": [{"name": "compile", "start": 0.0, "seconds": 0.1}]}}


def _script():
    spec = importlib.util.spec_from_file_location("compare_results", ROOT / "bench" / "compare_results.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("compare_results", module)
    spec.loader.exec_module(module)
    return module


def _folders(tmp_path, change):
    before, after = tmp_path / "before", tmp_path / "after"
    before.mkdir()
    after.mkdir()
    for name in ("s1.json", "s2.json"):
        (before / name).write_text(json.dumps(DOC))
        doc = copy.deepcopy(DOC)
        if name == "s2.json":
            change(doc)
        (after / name).write_text(json.dumps(doc))
    return before, after


def test_times_and_seeds_are_not_differences(tmp_path, capsys):
    def retimed(doc):
        doc["execution_time"] = 9.9
        doc["extra_data"]["seeds"] = {"base": 2}
        doc["extra_data"]["stages"] = []
    assert _script().main([str(p) for p in _folders(tmp_path, retimed)]) == 0
    assert "no difference in 2 results documents" in capsys.readouterr().out


def test_a_score_an_outcome_or_a_count_that_changed_is_printed(tmp_path, capsys):
    def worse(doc):
        doc["score"] = 80.0
        doc["tests"][1].update(status="failed", score=10)
        doc["tests"][1]["extra_data"]["reference"] = {"ld": 11.0}
    before, after = _folders(tmp_path, worse)
    (after / "s3.json").write_text("{not json")
    assert _script().main([str(before), str(after)]) == 1
    out = capsys.readouterr().out
    assert "s2.json: score: 85.0 -> 80.0" in out and "s2.json: test 'Global memory traffic' status: passed -> failed" in out
    assert "s2.json: test 'Global memory traffic' reference: {'ld': 10.0} -> {'ld': 11.0}" in out
    assert "s3.json: only in" in out and "s1.json" not in out
    assert _script().main([str(before), str(after), "--scores-only"]) == 1
    assert "reference:" not in capsys.readouterr().out
