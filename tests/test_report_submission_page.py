"""grader.report: the page of one submission, from a results document and the source text.

Student-supplied text (the file name, the source, the kernel's printed output) is hostile here:
it must reach the page as text, never as markup.
"""
from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from grader import results
from grader.report import display, plots, submission_page

HOSTILE = "</script><script>alert(1)</script>\"'&<b>"
LD, ST = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
LDR = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
WAVES, INST = "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "smsp__sass_inst_executed_op_shared_ld.sum"


def document(name: str = f"{HOSTILE}.cu") -> dict:
    """A results document as grade --json writes it, with findings and per-line counts."""
    def test(name, category, passed, extra=None, output="ok"):
        return {"name": name, "score": 10.0 if passed else 0.0, "max_score": 10.0, "status": "passed" if passed else "failed",
                "output": output, "visibility": "visible", "tags": [category], "extra_data": extra or {}}

    race = {"findings": [{"kind": "write-after-read race", "category": "race", "lines": [4, 2], "sizes": "N = 33",
                          "text": f"between line 4 and line 2 {HOSTILE}"}]}
    traffic = {"ratio": 2.0, "sizes": {"N": 100}, "submission": {LD: 200, ST: 20}, "reference": {LD: 100, ST: 10},
               "per_line": {"sizes": {"N": 100}, "lines": {"2": {LD: 200, LDR: 50}, "4": {WAVES: 64, INST: 32}}}}
    doc = {"score": 10.0, "execution_time": 1.0, "output": f"**x**: printed {HOSTILE}\x1b[31m", "output_format": "md",
           "visibility": "visible", "stdout_visibility": "hidden",
           "tests": [test("Compiles", "compile", True), test("Races and barriers", "race", False, race, f"race {HOSTILE}"),
                     test("Global memory traffic", "traffic", True, traffic)],
           "extra_data": {"max_score": 30.0, "grader_version": "0.1.0", "backend": "emu", "device": "CPU emulator",
                          "exercise": "level2", "submission": name, "submission_sha256": "ab", "seeds": {"base": 1},
                          "not_run": [{"name": "Performance", "category": "performance", "reason": "timing needs a GPU"}]}}
    results.validate(doc)
    return doc


SOURCE = "// one\nint a = 1; // " + HOSTILE + "\n\x1b[2J\u202e evil\n__syncthreads();\n"


def test_student_text_is_escaped_everywhere():
    html = submission_page.page_html(document(), SOURCE)
    assert "<script>" not in html.lower().replace("<script>alert", "")  # no script element of ours either
    assert "alert(1)</script>" not in html and "<b>" not in html
    assert html.count("&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;") >= 4  # name, source, finding, output
    assert "\x1b" not in html and "\u202e" not in html
    assert "\u241b[2J" in html and "[U+202E]" in html  # shown, visibly, as what they are


def test_findings_and_lines_link_both_ways():
    html = submission_page.page_html(document(), SOURCE)
    ids = set(re.findall(r'id="([^"]+)"', html))
    targets = re.findall(r'href="#([^"]+)"', html)
    assert targets and all(t in ids for t in targets)
    assert 'href="#L2"' in html and 'href="#L4"' in html  # the finding points at both lines
    row = re.search(r'<tr id="L4" class="flagged".*?</tr>', html, re.S).group(0)
    assert 'href="#f-1"' in row  # and the line back at the finding
    assert 'id="L3" class=""' in html  # a line without findings is not flagged


def test_per_line_counts_and_heat():
    page = submission_page.build(document(), SOURCE)
    by_number = {line.number: line for line in page.lines}
    assert by_number[2].sectors == 200 and by_number[2].per_request == "4.0" and by_number[2].sector_heat == 1.0 and by_number[2].wave_heat == 0
    assert by_number[4].waves == 64 and by_number[4].per_instruction == "2.0" and by_number[4].heat == 1.0 and by_number[4].conflicted
    assert by_number[1].heat == 0 and not by_number[1].counters
    assert "N = 100" in page.counted_at and "Global memory traffic" in page.counted_at


def test_traffic_chart_is_an_inline_svg_image():
    html = submission_page.page_html(document(), SOURCE)
    images = re.findall(r'<img src="([^"]+)"', html)
    assert images and all(uri.startswith("data:image/svg+xml;base64,") for uri in images)
    assert "http://" not in html.replace('http://www.w3.org', '') and "https://" not in html


def test_without_matplotlib_the_page_says_why(monkeypatch):
    monkeypatch.setattr(plots, "available", lambda: "matplotlib is not installed, so the page has no charts")
    html = submission_page.page_html(document(), SOURCE)
    assert "<img" not in html and "matplotlib is not installed" in html
    assert "load sectors: submission 200, reference 100" in html  # the numbers are still there, as text


def test_unreadable_source_and_missing_data_still_render():
    doc = document("plain.cu")
    for t in doc["tests"]:
        t["extra_data"] = {}
    html = submission_page.page_html(doc, None, source_problem="The source is not shown: binary file")
    assert "binary file" in html and "No per-line counts" in html
    html = submission_page.page_html(document("plain.cu"), None, source_problem="The source is not shown: binary file")
    assert 'href="#L' not in html and '<span class="line-link">line 4</span>' in html  # no link to a line not shown


def test_compiler_errors_mark_their_line():
    doc = document("plain.cu")
    doc["tests"][0].update(status="failed", output="plain.cu does not compile:\nplain.cu(3): error: identifier \"x\" is undefined")
    page = submission_page.build(doc, SOURCE)
    assert [f.kind for f in page.lines[2].findings] == ["compiler error"]


def test_display_makes_controls_visible():
    assert display.shown("a\tb\nc\x07\x7f\u2066") == "a\tb\nc\u2407\u2421[U+2066]"
    assert display.one_line("x\ny" * 300).count("\n") == 0 and len(display.one_line("x" * 500)) == 200


@pytest.mark.slow
def test_a_built_wheel_ships_the_templates(tmp_path: Path, root: Path):
    """A non-editable install has the templates: build the wheel, render a page from it alone."""
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(root)],
                           capture_output=True, text=True)
    if built.returncode != 0:
        pytest.skip(f"pip could not build the wheel here: {built.stderr.strip()[-300:]}")
    wheel = next(tmp_path.glob("*.whl"))
    zipfile.ZipFile(wheel).extractall(tmp_path / "site")
    code = ("import json,sys; from grader.report import submission_page as s; "
            "print(s.__file__, len(s.page_html(json.load(sys.stdin), 'int x;')))")
    import json

    run = subprocess.run([sys.executable, "-c", code], input=json.dumps(document()), capture_output=True, text=True,
                         cwd=tmp_path, env={"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr
    where, size = run.stdout.split()
    assert where.startswith(str(tmp_path / "site")) and int(size) > 1000


def test_grade_html_marks_the_two_lines_of_a_race(tmp_path: Path, root: Path):
    """grade EXERCISE SUBMISSION --html: the page of a real grading on the emulator."""
    from click.testing import CliRunner

    from grader.cli import main

    sub = root / "reference/level2/wrong/missing_second_barrier.cu"
    out = tmp_path / "r.html"
    run = CliRunner().invoke(main, [str(root / "exercises/level2"), str(sub), "--backend", "emu", "--seed", "1", "--html", str(out)])
    assert run.exit_code == 0, run.output
    html = out.read_text(encoding="utf-8")
    lines = sub.read_text().splitlines()
    write = next(i for i, text in enumerate(lines, 1) if "Bs[ty][tx] =" in text)
    read = next(i for i, text in enumerate(lines, 1) if "acc = fmaf" in text)
    # the As store races too: with the loop's second barrier missing, lanes of one warp overwrite the
    # As elements their neighbours still read (a race inside a warp, reported with its own two lines)
    write_a = next(i for i, text in enumerate(lines, 1) if "As[ty][tx] =" in text)
    assert sorted(int(n) for n in re.findall(r'<tr id="L(\d+)" class="flagged"', html)) == sorted([write_a, write, read])
    assert f'href="#L{write}"' in html and f'href="#L{read}"' in html and "write-after-read race" in html
    assert re.search(rf'<tr id="L{write}" class="flagged"[^>]*>\s*<td class="ln">.*?<td class="num cell"[^>]*>[\d,]+</td>', html, re.S)



@pytest.mark.parametrize("draw", [
    lambda: plots.bars("Global memory traffic at N = 100", ["load sectors", "store sectors"],
                       {"submission": [42_000, 1_200], "reference": [30_000, 1_000]}, "32-byte sectors"),
    lambda: plots.rates("Pass rate of every check", ["Compiles", "Hidden test: test_rectangular_block_of_ones_" + "x" * 40,
                                                     "Races and barriers"], [1.0, 0.5, 0.25]),
], ids=["bars", "rates-with-a-long-name"])
def test_a_category_chart_keeps_its_labels_title_and_axis_inside_the_image(monkeypatch, draw):
    # The category charts are laid out from their labels' measured width, not by constrained layout:
    # nothing drawn may fall off the image, and the labels may not cover the bars, whatever the names.
    pytest.importorskip("matplotlib")
    seen = []
    finish = plots._finish

    def check(plt, fig, alt):
        renderer = fig.canvas.get_renderer()
        fig.draw(renderer)
        (ax,) = fig.axes
        drawn = ax.get_tightbbox(renderer)  # the axes with every label, tick label, title and legend
        assert drawn.x0 >= 0 and drawn.y0 >= 0 and drawn.x1 <= fig.bbox.width and drawn.y1 <= fig.bbox.height
        labels = [t for t in ax.get_yticklabels() if t.get_text()]
        assert labels and max(t.get_window_extent(renderer).x1 for t in labels) <= ax.get_window_extent(renderer).x0
        seen.append([t.get_text() for t in labels])
        return finish(plt, fig, alt)

    monkeypatch.setattr(plots, "_finish", check)
    chart = draw()
    assert chart.uri and seen
    assert all(len(label) <= plots.MAX_LABEL for label in seen[0])
    assert "x" * 40 in chart.alt or "load sectors" in chart.alt  # the alt text keeps whole names
