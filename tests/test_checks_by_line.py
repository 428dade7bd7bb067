"""grader.checks.by_line: the emulator's findings and per-line counters as extra_data records."""
from __future__ import annotations

from types import SimpleNamespace

from grader.checks import by_line
from grader.run.tasks import Task, TaskResult

LD = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
WAVES = "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"


def _ctx(emu: dict, sizes=None) -> SimpleNamespace:
    sizes = sizes or {"N": 33}
    task = Task(id="emu:N = 33", kind="run", backend="emu", sizes=sizes, seeds=(1,))
    result = TaskResult(task.id, "ok", launches=({"seed": 1, "emu": emu},))
    return SimpleNamespace(planned={task.id: task}, results={task.id: result})


def test_hazards_keep_both_lines_and_barriers_their_one():
    ctx = _ctx({"hazards": [{"kind": "WAR", "first_line": 34, "second_line": 29, "count": 4096, "block": [0, 0, 0],
                             "example": "thread (0, 0, 0) wrote"}] * 2,  # the same hazard twice: reported once
                "barrier_errors": [{"kind": "divergent-block", "line": 40, "block": [1, 0, 0], "detail": "3 of 4 warps"}]})
    found = by_line.race_findings(ctx)
    assert [(f["kind"], f["lines"]) for f in found] == [("divergent barrier", [40]), ("write-after-read race", [34, 29])]
    assert found[1]["sizes"] == "N = 33" and "4,096 bytes" in found[1]["text"] and found[1]["category"] == "race"


def test_memory_findings_name_their_line():
    ctx = _ctx({"memory_errors": [{"space": "global", "kind": "out-of-bounds-write", "line": 38, "block": [0, 1, 0],
                                   "thread": [3, 0, 0], "address": 1, "detail": "4 bytes past C"}],
                "uninit_reads": [{"line": 33, "block": [0, 0, 0], "thread": [0, 0, 0], "offset": 128, "count": 64}]})
    found = by_line.memory_findings(ctx)
    assert [(f["kind"], f["lines"]) for f in found] == [("out of bounds write of global memory", [38]),
                                                        ("read of unwritten shared memory", [33])]
    assert "4 bytes past C" in found[0]["text"]


def test_no_findings_without_emulated_launches():
    ctx = SimpleNamespace(planned={}, results={})
    assert by_line.race_findings(ctx) == [] and by_line.memory_findings(ctx) == []


def test_per_line_keeps_the_profile_metrics_of_lines_with_counts():
    counts = {"12": {LD: 10, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": 3}, "3": {WAVES: 7},
              "0": {LD: 5}, "9": {LD: 0}}
    assert by_line.per_line(counts, {"N": 100}) == {"sizes": {"N": 100}, "lines": {"3": {WAVES: 7}, "12": {LD: 10}}}
    ctx = _ctx({"per_line": counts})
    assert by_line.launch_per_line(ctx, "emu:N = 33")["lines"]["12"] == {LD: 10}
    assert by_line.launch_per_line(ctx, "missing") is None
