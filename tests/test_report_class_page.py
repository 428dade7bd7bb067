"""grader.report.class_page: the class page and the students' pages of a batch, from results files."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from grader.staff.batch import intake, record
from grader import results
from grader import exercise as exercise_module
from grader.report import class_page, plots

ROOT = Path(__file__).resolve().parent.parent
LD, ST = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"


def _doc(score: float, race_ok: bool, *, timing: tuple[float, float] | None = None, sectors: float = 1000.0) -> dict:
    def test(name, category, passed, extra=None, points=10.0):
        return {"name": name, "score": points if passed else 0.0, "max_score": points, "status": "passed" if passed else "failed",
                "output": "", "visibility": "visible", "tags": [category], "extra_data": extra or {}}

    race = {} if race_ok else {"findings": [{"kind": "write-after-read race", "category": "race", "lines": [3, 5], "sizes": "N = 33", "text": "x"}]}
    tests = [test("Correctness", "correctness", True),
             test("Races and barriers", "race", race_ok, race),
             test("Global memory traffic", "traffic", True, {"submission": {LD: sectors, ST: 10}, "reference": {LD: 900, ST: 10}})]
    not_run = [{"name": "Performance", "category": "performance", "reason": "timing needs a GPU"}]
    if timing:
        tests.append(test("Performance", "performance", True, {"median_ms": {"submission": timing[0], "reference": timing[1],
                                                                             "baseline": 0.5}}))
        not_run = []
    doc = {"score": score, "execution_time": 1.0, "output": "", "output_format": "md", "visibility": "visible",
           "stdout_visibility": "hidden", "tests": tests,
           "extra_data": {"max_score": 40.0, "grader_version": "0.1.0", "backend": "gpu" if timing else "emu", "device": "d",
                          "exercise": "level2", "submission": "s.cu", "submission_sha256": None, "seeds": {}, "not_run": not_run,
                          "batch": {"status": "graded"}}}
    results.validate(doc)
    return doc


def _batch(tmp_path: Path, docs: dict[str, dict], sources: dict[str, str]):
    out = tmp_path / "out"
    (out / "results").mkdir(parents=True)
    subs = tmp_path / "subs"
    subs.mkdir()
    entries = []
    for student, doc in docs.items():
        (out / "results" / f"{student}.json").write_text(json.dumps(doc))
        path = subs / f"{student}.cu"
        path.write_text(sources[student])
        entries.append(intake.Entry(student, f"{student}.cu", path))
    exercise = exercise_module.load(ROOT / "exercises" / "level2")
    rows, stale = record.read_rows(out, entries)
    return out, exercise, entries, record.summarize(rows, entries, exercise, stale)


SOLUTION = (ROOT / "reference/level2/solution.cu").read_text()
OTHER = (ROOT / "reference/level2/wrong/no_tiling.cu").read_text()


def test_class_page_links_every_failure_to_the_students_pages(tmp_path: Path):
    docs = {"alice": _doc(40, True), "bob": _doc(30, False), "carol": _doc(30, False)}
    sources = {"alice": OTHER, "bob": SOLUTION.replace("float acc = 0.0f;", "float acc = 0.0f; if (N < 0) return;"),
               "carol": SOLUTION.replace("float acc = 0.0f;", "float acc = -0.0f;") + "\n// mine\n"}
    out, exercise, entries, summary = _batch(tmp_path, docs, sources)
    html = class_page.write_reports(out, exercise, entries, summary).read_text()
    for student in docs:
        page = (out / "reports" / f"{student}.html").read_text()
        assert 'href="../report.html"' in page
    failure = re.search(r'<li class="failure"><strong>Races and barriers</strong>: 2 student\(s\)(.*?)</li>\s*</ul>', html, re.S)
    assert failure and 'href="reports/bob.html"' in failure.group(1) and 'href="reports/carol.html"' in failure.group(1)
    assert "write-after-read race" in html
    # Pass rates: every test, with its counts.
    assert re.search(r"<td>Races and barriers</td><td>race</td><td class=\"num\">1</td><td class=\"num\">2</td>", html)
    assert "not run for 3: timing needs a GPU" in html
    # bob and carol changed a line each of the reference solution: near-identical to it and each other.
    near = re.search(r'<table class="near">(.*?)</table>', html, re.S).group(1)
    assert re.search(r'reports/bob.html">bob</a></td><td><a class="student" href="reports/carol.html"', near)
    assert near.count("the reference solution") == 2 and "reports/alice.html" not in near
    assert "No submission in these results was timed" in html
    assert html.count("<img") == 2  # histogram and pass rates


def test_gpu_timings_give_a_scatter_with_the_reference(tmp_path: Path):
    docs = {"alice": _doc(40, True, timing=(2.0, 1.0), sectors=5000), "bob": _doc(40, True, timing=(1.2, 1.1), sectors=1000)}
    out, exercise, entries, summary = _batch(tmp_path, docs, {"alice": OTHER, "bob": SOLUTION})
    html = class_page.write_reports(out, exercise, entries, summary).read_text()
    section = re.search(r'<section id="speed">(.*?)</section>', html, re.S).group(1)
    assert "<img" in section and "reference at 910, 1.05" in section  # the median of the reference's timings
    rows = re.findall(r'href="reports/(\w+)\.html"', re.search(r'<table class="timings">(.*?)</table>', section, re.S).group(1))
    assert rows == ["bob", "alice"]  # fastest first
    page = (out / "reports" / "alice.html").read_text()
    assert "Median kernel time" in page and "baseline 0.5" in page  # the time against reference and cuBLAS


def test_without_matplotlib_the_class_page_keeps_its_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(plots, "available", lambda: "matplotlib is not installed, so the page has no charts")
    out, exercise, entries, summary = _batch(tmp_path, {"alice": _doc(40, True)}, {"alice": OTHER})
    html = class_page.write_reports(out, exercise, entries, summary).read_text()
    assert "<img" not in html and "matplotlib is not installed" in html and "<td>0-4</td>" in html


def test_a_missing_results_file_is_listed_not_fatal(tmp_path: Path):
    out, exercise, entries, summary = _batch(tmp_path, {"alice": _doc(40, True)}, {"alice": OTHER})
    ghost = intake.Entry("ghost", "ghost.cu", None, problem="No .cu file was submitted")
    html = class_page.write_reports(out, exercise, [*entries, ghost], summary).read_text()
    assert re.search(r'<span class="student">ghost</span></td><td class="file">ghost.cu</td><td>grader-error</td>', html)


def test_the_page_stream_writes_pages_that_write_reports_then_keeps(tmp_path):
    """Pages drawn while the batch grades (grader.report.page_stream) are the pages write_reports
    would draw: it finds them fresh and leaves them. A student the stream failed (no results file
    yet) gets a page at the end all the same."""
    from grader.report.page_stream import PageStream

    out, exercise, entries, summary = _batch(tmp_path, {"ann": _doc(40, True), "bo": _doc(30, False)},
                                             {"ann": SOLUTION, "bo": OTHER})
    late = out / "results" / "bo.json"
    kept = late.read_text()
    late.unlink()
    stream = PageStream(out)
    for entry in entries:
        stream.submit(entry)
    stream.close(timeout=60)
    ann = out / class_page.REPORTS / "ann.html"
    assert ann.is_file() and not (out / class_page.REPORTS / "bo.html").exists()
    streamed = ann.read_text()
    written = ann.stat().st_mtime_ns
    late.write_text(kept)
    class_page.write_reports(out, exercise, entries, summary)
    assert ann.stat().st_mtime_ns == written  # fresh: not drawn twice
    assert "write-after-read race" in (out / class_page.REPORTS / "bo.html").read_text()
    (out / class_page.REPORTS / "ann.html").unlink()
    class_page.write_reports(out, exercise, entries, summary)
    assert (out / class_page.REPORTS / "ann.html").read_text() == streamed  # the same page either way


def test_a_page_stream_that_cannot_start_a_process_leaves_the_pages_to_the_end(tmp_path, monkeypatch):
    from grader.report import page_stream

    def refuse(*args, **kwargs):
        raise ImportError("This platform lacks a functioning sem_open implementation")

    monkeypatch.setattr(page_stream, "ProcessPoolExecutor", refuse)
    out, exercise, entries, summary = _batch(tmp_path, {"ann": _doc(40, True)}, {"ann": SOLUTION})
    stream = page_stream.PageStream(out)
    stream.submit(entries[0])  # no process: nothing raised, nothing written
    stream.close(timeout=5)
    assert not (out / class_page.REPORTS / "ann.html").exists()
    class_page.write_reports(out, exercise, entries, summary)
    assert (out / class_page.REPORTS / "ann.html").is_file()

