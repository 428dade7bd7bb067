"""Student text on its way out: compiler output that quotes the source, and everything the terminal
shows. A source may hold escape sequences (clear the screen, rewrite a line, set the clipboard
through OSC 52) or bidirectional overrides; none may reach a terminal or a results file working."""
from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from grader import api
from grader.cli import main
from grader.results import NotRun, Report, TestResult, inert, summary_lines, to_json

ROOT = Path(__file__).resolve().parent.parent
LEVEL2 = ROOT / "exercises" / "level2"
# Clear the screen, home the cursor, print a fake verdict in green, and set the clipboard (OSC 52).
ESCAPES = "\x1b[2J\x1b[H\x1b[32mPASS  all checks 100 / 100\x1b[0m\x1b]52;c;cm0gLXJmIH4=\x07\r\u202e"
PAINT = re.compile(r"\x1b\[\d+m")  # the only escapes summary_lines writes: its own colours


def no_control(text: str) -> bool:
    return not any((not ch.isprintable()) and ch not in "\n\t" for ch in text)


def test_inert_keeps_lines_and_tabs_and_nothing_else():
    assert inert("a\tb\nc") == "a\tb\nc"
    assert inert("x" + ESCAPES) == "x?[2J?[H?[32mPASS  all checks 100 / 100?[0m?]52;c;cm0gLXJmIH4=???"


def test_the_terminal_summary_prints_no_escape_sequence_of_the_students():
    report = Report(exercise="level2", submission="k.cu", sha256=None, backend="emu", device="CPU emulator",
                    tests=(TestResult("Compiles", "compile", 0, 10, False, f"k.cu(3): error: x\n  int a = \"{ESCAPES}\";"),),
                    not_run=(NotRun("Performance", "performance", f"needs a GPU {ESCAPES}"),), max_score=10, seconds=1,
                    seeds={}, notes=(f"note {ESCAPES}",))
    plain = "\n".join(summary_lines(report))
    assert no_control(plain) and "PASS  all checks" in plain  # shown, never obeyed
    coloured = "\n".join(summary_lines(report, color=True))
    assert no_control(PAINT.sub("", coloured))


def test_a_compile_error_quoting_escape_sequences_is_inert_everywhere(tmp_path):
    path = tmp_path / "k.cu"
    path.write_text(f'__device__ int broken = "{ESCAPES}" + ;\n', encoding="utf-8")
    report = api.grade(LEVEL2, path, backend="emu", seed=1)
    compiled = report.tests[0]
    assert not compiled.passed and "does not compile" in compiled.output and "[2J" in compiled.output
    document = to_json(report)
    assert all(no_control(t["output"]) for t in document["tests"])
    assert no_control(document["output"])


def test_the_profile_table_quotes_source_lines_inertly(tmp_path, monkeypatch):
    from grader import profile as profile_module

    source = f"// line 1\nout[i] = 1; // {ESCAPES}\n"
    fake = profile_module.Profile("emu", {"N": 33}, {}, {2: {profile_module.METRICS[0]: 4.0}}, source, "k.cu")
    monkeypatch.setattr(profile_module, "profile", lambda *args, **kwargs: fake)
    path = tmp_path / "k.cu"
    path.write_text(source, encoding="utf-8")
    result = CliRunner().invoke(main, ["profile", str(LEVEL2), str(path), "--size", "33", "--backend", "emu"])
    assert result.exit_code == 0, result.output
    assert "out[i] = 1;" in result.output and no_control(result.output)
