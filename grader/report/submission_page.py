"""The page for one graded submission, built from its results document and its source.

Everything comes from the results document (grade --json, or results/<student>.json of a batch):
the verdict per check, the findings by source line (tests' extra_data.findings) and the counters
per line (extra_data.per_line), which the checks recorded from launches they ran anyway. The page
never runs the emulator again, so it shows exactly what was graded.
"""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from . import plots
from .display import one_line, shown
from .pages import render, write_page

LD_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
ST_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
LD_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
ST_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
SH_LD_INST = "smsp__sass_inst_executed_op_shared_ld.sum"
SH_ST_INST = "smsp__sass_inst_executed_op_shared_st.sum"
SH_LD_WAVES = "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"
SH_ST_WAVES = "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum"
# Which check's per-line counts the source view shows, first found wins: the counter checks'
# launches are the ones graded on traffic; the race check's (on a GPU) is the only emulated one there.
_PER_LINE_FROM = ("traffic", "bank-conflicts", "race", "memory-safety")
_CHARTED = {
    "traffic": ("Global memory traffic", (("load sectors", LD_SECTORS), ("store sectors", ST_SECTORS)), "32-byte sectors"),
    "bank-conflicts": ("Shared-memory wavefronts", (("load wavefronts", SH_LD_WAVES), ("store wavefronts", SH_ST_WAVES)),
                       "wavefronts (more than the instructions: bank conflicts)"),
}
# NVRTC's "name.cu(12): error: ..." lines in the compile test's output.
_COMPILER_LINE = re.compile(r"\((\d+)\): (error|warning)[^:\n]*:?\s*(.*)")
MAX_SOURCE_LINES = 5000


@dataclass(frozen=True)
class Finding:
    """A problem pinned to source lines: a hazard, an out-of-bounds access, a compiler error."""

    id: str
    check: str
    kind: str
    lines: tuple[int, ...]
    sizes: str
    text: str
    also: tuple[str, ...] = ()  # other checks that reported the same finding (correctness names a cause too)


@dataclass(frozen=True)
class Line:
    """One source line with what the emulator measured there."""

    number: int
    text: str
    counters: Mapping[str, int]
    sector_heat: float               # 0..1: the line's global sectors against the most any line has
    wave_heat: float                 # 0..1: the same for shared-memory wavefronts
    findings: tuple[Finding, ...] = ()

    @property
    def heat(self) -> float:
        """The row's shade: the larger of the two, so a line costly in either kind stands out."""
        return max(self.sector_heat, self.wave_heat)

    @property
    def conflicted(self) -> bool:
        """More than one wavefront per shared instruction: a bank conflict on this line."""
        return self.instructions > 0 and self.waves > self.instructions

    @property
    def sectors(self) -> int:
        return self.counters.get(LD_SECTORS, 0) + self.counters.get(ST_SECTORS, 0)

    @property
    def requests(self) -> int:
        return self.counters.get(LD_REQUESTS, 0) + self.counters.get(ST_REQUESTS, 0)

    @property
    def waves(self) -> int:
        return self.counters.get(SH_LD_WAVES, 0) + self.counters.get(SH_ST_WAVES, 0)

    @property
    def instructions(self) -> int:
        return self.counters.get(SH_LD_INST, 0) + self.counters.get(SH_ST_INST, 0)

    @property
    def per_request(self) -> str:
        return f"{self.sectors / self.requests:.1f}" if self.requests else ""

    @property
    def per_instruction(self) -> str:
        return f"{self.waves / self.instructions:.1f}" if self.instructions else ""

    @property
    def detail(self) -> str:
        """The line's counters in full, for the tooltip."""
        return "; ".join(f"{name.split('__', 1)[1]}: {value:,}" for name, value in self.counters.items())


@dataclass(frozen=True)
class CheckRow:
    """One test of the results: its verdict and, for the counter checks and timing, a chart."""

    name: str
    category: str
    score: float
    max_score: float
    passed: bool
    gated: bool
    output: str
    findings: tuple[Finding, ...] = ()
    chart: plots.Plot | None = None


@dataclass(frozen=True)
class SubmissionPage:
    """Everything the template shows."""

    exercise: str
    submission: str
    score: float
    max_score: float
    backend: str
    device: str
    checks: tuple[CheckRow, ...]
    not_run: tuple[tuple[str, str], ...]
    findings: tuple[Finding, ...]
    lines: tuple[Line, ...]
    counted_at: str                  # where the per-line counts come from, in words ("" if none)
    source_problem: str
    summary: str
    outside: tuple[Finding, ...] = ()  # findings whose lines are not in the shown source
    plots_missing: str = ""
    back: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)


def build(document: Mapping[str, Any], source: str | None, *, source_problem: str = "", back: str | None = None) -> SubmissionPage:
    """The page's content from a results document and the submission's text (None: not readable)."""
    extra = document.get("extra_data", {})
    tests = document.get("tests", [])
    findings = _findings(tests)
    by_line: dict[int, list[Finding]] = {}
    for f in findings:
        for n in f.lines:
            by_line.setdefault(n, []).append(f)
    counts, counted_at = _per_line(tests)
    lines: list[Line] = []
    if source is not None:
        raw = source.splitlines()
        if len(raw) > MAX_SOURCE_LINES:
            source_problem = source_problem or f"only the first {MAX_SOURCE_LINES:,} of {len(raw):,} lines are shown"
            raw = raw[:MAX_SOURCE_LINES]
        top_sectors = max((_sum(c, LD_SECTORS, ST_SECTORS) for c in counts.values()), default=0)
        top_waves = max((_sum(c, SH_LD_WAVES, SH_ST_WAVES) for c in counts.values()), default=0)
        for i, text in enumerate(raw, start=1):
            c = counts.get(i, {})
            sectors = _sum(c, LD_SECTORS, ST_SECTORS) / top_sectors if top_sectors else 0.0
            waves = _sum(c, SH_LD_WAVES, SH_ST_WAVES) / top_waves if top_waves else 0.0
            lines.append(Line(i, shown(text, keep_newlines=False), c, round(sectors, 3), round(waves, 3),
                              tuple(by_line.get(i, ()))))
    shown_lines = len(lines)
    outside = tuple(f for f in findings if any(n > shown_lines for n in f.lines) or not f.lines)
    checks = tuple(_check_row(t, [f for f in findings if t.get("name") in (f.check,) + f.also]) for t in tests)
    missing = plots.available()
    return SubmissionPage(
        exercise=one_line(extra.get("exercise", "")), submission=one_line(extra.get("submission", "submission.cu")),
        score=float(document.get("score", 0)), max_score=float(extra.get("max_score", 0)),
        backend=one_line(extra.get("backend", "")), device=one_line(extra.get("device", "")), checks=checks,
        not_run=tuple((one_line(n.get("name", "")), shown(n.get("reason", ""))) for n in extra.get("not_run", [])),
        findings=tuple(findings), lines=tuple(lines), counted_at=counted_at, source_problem=shown(source_problem),
        summary=shown(document.get("output", "")), outside=outside, plots_missing=missing, back=back,
        meta={"sha256": one_line(extra.get("submission_sha256") or ""), "version": one_line(extra.get("grader_version", ""))})


def render_page(page: SubmissionPage) -> str:
    """The page as one self-contained HTML document."""
    return render("submission.html.j2", page=page, title=f"{page.submission} - {page.exercise}")


def page_html(document: Mapping[str, Any], source: str | None, *, source_problem: str = "", back: str | None = None) -> str:
    """build() then render_page(): the HTML of one submission's report."""
    return render_page(build(document, source, source_problem=source_problem, back=back))


def _findings(tests: Sequence[Mapping[str, Any]]) -> list[Finding]:
    """Every test's findings, each once: the same record from two checks (an out-of-bounds read that
    correctness names as the cause and memory safety reports) is one finding of both."""
    out: list[Finding] = []
    index: dict[tuple[str, tuple[int, ...], str, str], int] = {}
    for t in tests:
        name = one_line(t.get("name", ""))
        extra = t.get("extra_data") or {}
        records = list(extra.get("findings") or [])
        if (t.get("tags") or [""])[0] == "compile" and t.get("status") == "failed":
            records += _compiler_findings(str(t.get("output", "")))
        for r in records:
            if not isinstance(r, Mapping):
                continue
            lines = tuple(sorted({int(n) for n in r.get("lines", []) if isinstance(n, int) and n > 0}))
            kind, sizes, text = one_line(r.get("kind", "finding")), one_line(r.get("sizes", "")), shown(r.get("text", ""))
            key = (kind, lines, sizes, text)
            if key in index:
                first = out[index[key]]
                if name != first.check and name not in first.also:
                    out[index[key]] = dataclasses.replace(first, also=first.also + (name,))
                continue
            index[key] = len(out)
            out.append(Finding(f"f-{len(out) + 1}", name, kind, lines, sizes, text))
    return out


def _compiler_findings(output: str) -> list[dict[str, Any]]:
    found = []
    for m in _COMPILER_LINE.finditer(output):
        found.append({"kind": f"compiler {m.group(2)}", "lines": [int(m.group(1))], "text": m.group(3) or m.group(0)})
    return found[:50]


def _per_line(tests: Sequence[Mapping[str, Any]]) -> tuple[dict[int, dict[str, int]], str]:
    by_category = {(t.get("tags") or [""])[0]: t for t in tests}
    for category in _PER_LINE_FROM:
        t = by_category.get(category)
        data = (t or {}).get("extra_data", {}).get("per_line") if t else None
        if not isinstance(data, Mapping) or not isinstance(data.get("lines"), Mapping):
            continue
        counts = {}
        for key, counters in data["lines"].items():
            if str(key).isdigit() and isinstance(counters, Mapping):
                counts[int(key)] = {str(k): int(v) for k, v in counters.items() if isinstance(v, (int, float))}
        sizes = ", ".join(f"{k} = {v}" for k, v in (data.get("sizes") or {}).items())
        where = f"measured by the emulator at {one_line(sizes)}, in the launch the {one_line(t.get('name', category))} check ran"
        return counts, where
    return {}, ""


def _check_row(t: Mapping[str, Any], findings: Sequence[Finding]) -> CheckRow:
    category = (t.get("tags") or [""])[0]
    extra = t.get("extra_data") or {}
    chart = None
    if category in _CHARTED and isinstance(extra.get("submission"), Mapping) and isinstance(extra.get("reference"), Mapping):
        title, metrics, unit = _CHARTED[category]
        sizes = ", ".join(f"{k} = {v}" for k, v in (extra.get("sizes") or {}).items())
        chart = plots.bars(f"{title} at {sizes}" if sizes else title, [label for label, _ in metrics],
                           {side: [float(extra[side].get(m, 0)) for _, m in metrics] for side in ("submission", "reference")}, unit)
    if category == "performance" and isinstance(extra.get("median_ms"), Mapping):
        ms = {k: float(v) for k, v in extra["median_ms"].items() if isinstance(v, (int, float))}
        order = [k for k in ("submission", "reference", "baseline") if k in ms]
        chart = plots.bars("Median kernel time (CUDA events)", ["time"], {k: [ms[k]] for k in order}, "milliseconds (shorter is faster)")
    return CheckRow(one_line(t.get("name", "")), one_line(category), float(t.get("score", 0)), float(t.get("max_score", 0)),
                    t.get("status") == "passed", bool(extra.get("gated")), shown(t.get("output", "")), tuple(findings), chart)


def _sum(counters: Mapping[str, int], *names: str) -> int:
    return sum(counters.get(n, 0) for n in names)


def write_for(report: Any, submission: Path, path: Path, *, python: bool = False) -> Path:
    """The page of a Report just graded (grade --html): its results document and the file's text
    (`python`: the exercise's kind has Python sources, so a notebook's graded text is its definitions)."""
    from ..notebook import graded_source
    from ..results import to_json

    # A notebook shows what was graded (its kernel cell), not its JSON.
    source, problem = graded_source(submission, python=python)
    document = to_json(report)
    html = page_html(document, source, source_problem="" if source is not None else f"The source is not shown: {problem}")
    return write_page(html, path)
