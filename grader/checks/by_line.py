"""The emulator's findings and counters as data keyed by source line, for the tests' extra_data.

The checks' messages say the same things in words; these records let a reader (the HTML report,
grader/report) mark the lines in the source without parsing those words. Everything here reads
launches the checks already ran: nothing is launched again.

    extra_data["findings"]  [{"kind", "category", "lines": [int, ...], "sizes", "text"}, ...]
    extra_data["per_line"]  {"sizes": {...}, "lines": {"<line>": {metric: count}}}
"""
from __future__ import annotations

from typing import Any, Mapping

from ..tools import PROFILE_METRICS
from .base import Context, sizes_text
from .findings import memory_items, race_items

MAX_FINDINGS = 50
# The counters `grade profile` prints per line (Nsight Compute's names), and nothing else the
# emulator records (its own bank-conflict tallies are derived from these).
LINE_METRICS = PROFILE_METRICS
_HAZARDS = {"RAW": "read-after-write race", "WAR": "write-after-read race", "WAW": "write-after-write race"}


def _hazard_kind(h: Mapping[str, Any]) -> str:
    """A hazard's title: its kind, and where it is when not between warps on shared memory."""
    kind = _HAZARDS.get(h["kind"], f"{h['kind']} race")
    scope, space = h.get("scope", "block"), h.get("space", "shared")
    if space == "global" and scope == "grid" and h.get("cause") == "block-atomic":
        return f"{kind} between blocks (block-scoped atomics, global memory)"
    if space == "global" and scope == "grid":
        return f"{kind} between blocks (global memory)"
    if space == "global":
        return f"{kind} on global memory"
    if scope == "warp" and h.get("cause") == "volatile":
        return f"{kind} inside a warp (volatile warp-synchronous code)"
    if scope == "warp":
        return f"{kind} inside a warp"
    return kind


def race_findings(ctx: Context) -> list[dict[str, Any]]:
    """Hazards between warps (both lines, earlier access first) and barrier errors, the ones the race
    check judges (findings.race_items)."""
    out = []
    for what, item, sizes in race_items(ctx):
        if what == "barrier":
            kind = "barrier deadlock" if item["kind"] == "deadlock" else "divergent barrier"
            out.append(_record(kind, "race", [item.get("line")], sizes,
                               f"{kind} in block {tuple(item['block'])}: {item.get('detail', '')}".rstrip(": ")))
        else:
            kind = _hazard_kind(item)
            out.append(_record(kind, "race", [item["first_line"], item["second_line"]], sizes,
                               f"{kind} between line {item['first_line']} and line {item['second_line']}: {item['count']:,} bytes, "
                               f"e.g. block {tuple(item['block'])}: {item.get('example', '')}".rstrip(": ")))
    return out[:MAX_FINDINGS]


def memory_findings(ctx: Context) -> list[dict[str, Any]]:
    """Out-of-bounds and misaligned accesses and reads of unwritten shared memory, deduplicated as
    memory_messages deduplicates them."""
    out = []
    for what, item, sizes in memory_items(ctx):
        if what == "mem":
            kind = f"{item['kind'].replace('-', ' ')} of {item['space']} memory"
            out.append(_record(kind, "memory-safety", [item.get("line")], sizes,
                               f"{kind} by block {tuple(item['block'])}, thread {tuple(item['thread'])}: "
                               f"{item.get('detail', '')}".rstrip(": ")))
        else:
            out.append(_record("read of unwritten shared memory", "memory-safety", [item.get("line")], sizes,
                               f"{item['count']:,} bytes of shared memory read before any thread of the block wrote "
                               f"them (e.g. block {tuple(item['block'])}, offset {item['offset']})"))
    return out[:MAX_FINDINGS]


def per_line(counters_by_line: Mapping[str, Mapping[str, Any]], sizes: Mapping[str, int]) -> dict[str, Any]:
    """An emulated launch's per-line counters, kept to LINE_METRICS and lines with a count."""
    lines = {}
    for line, counters in counters_by_line.items():
        kept = {m: int(counters[m]) for m in LINE_METRICS if counters.get(m)}
        if kept and str(line).isdigit() and int(line) > 0:
            lines[str(int(line))] = kept
    return {"sizes": dict(sizes), "lines": dict(sorted(lines.items(), key=lambda item: int(item[0])))}


def launch_per_line(ctx: Context, task_id: str) -> dict[str, Any] | None:
    """per_line() of the first launch of an emulated task, or None when it left no counters."""
    result, task = ctx.results.get(task_id), ctx.planned.get(task_id)
    if result is None or task is None or not result.launches:
        return None
    emu = result.launches[0].get("emu") or {}
    if not emu.get("per_line"):
        return None
    return per_line(emu["per_line"], task.sizes)


def _record(kind: str, category: str, lines: list[Any], sizes: Mapping[str, int], text: str) -> dict[str, Any]:
    return {"kind": kind, "category": category, "lines": [int(n) for n in lines if n], "sizes": sizes_text(sizes), "text": text}
