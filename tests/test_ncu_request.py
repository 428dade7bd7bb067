"""What a grading asks ncu for (grader.checks.counters.ncu_request): the profile launches on the class's
seed (the reference measured on the same inputs for every student), and no global atomic metrics
where neither module's PTX can make a global atomic (grader.checks.atomic_free), their zeros filled
in so the counts are the ones a run of every metric gives."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from grader.checks import counters
from grader.checks.atomic_free import atomic_free, may_make_global_atomics
from grader.checks.base import Context
from grader.exercise import load
from grader.grading.seed import class_seed, derive_seed
from grader.run.tasks import Task, TaskResult
from grader.tools import Tools

ROOT = Path(__file__).resolve().parent.parent
LEVEL2 = ROOT / "exercises" / "level2"

HEAD = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 k_param_0)
{
\t.reg .b32 \t%r<9>;
\t.reg .b64 \t%rd<5>;
\t.shared .align 4 .b8 tile[4096];
\tld.param.u64 \t%rd1, [k_param_0];
\tcvta.to.global.u64 \t%rd2, %rd1;
\tbar.sync \t0;
\tbar.red.popc.u32 \t%r3, 0, %p1;
\tredux.sync.add.s32 \t%r4, %r3, -1;
\tld.global.f32 \t%f1, [%rd2];
\tst.global.v2.f32 \t[%rd2], {%f1, %f2};
"""
TAIL = "\tret;\n}\n"


def _ptx(*lines: str) -> str:
    return HEAD + "".join(f"\t{line}\n" for line in lines) + TAIL


@pytest.mark.parametrize("lines, may", [
    ((), False),                                                          # loads, stores, barriers only
    (("atom.shared.add.u32 \t%r1, [tile], 1;",), False),                 # a block's own shared memory
    (("@%p1 red.shared::cta.add.u32 \t[tile], %r2;",), False),
    (("atom.relaxed.cta.shared::cta.add.u32 \t%r1, [tile], 1;",), False),
    (("atom.global.add.f32 \t%f3, [%rd2], %f1;",), True),                 # global
    (("@!%p2 atom.add.u32 \t%r1, [%rd1], 1;",), True),                    # generic: may be global
    (("red.global.add.f32 \t[%rd2], %f1;",), True),
    (("red.add.u32 \t[%rd1], 1;",), True),
    (("atom.shared::cluster.add.u32 \t%r1, [%rd1], 1;",), True),          # another block's shared memory
    (("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%rd2], [tile], 16;",), True),  # unclassified
    (("mov.u32 %r5, 1; atom.global.inc.u32 %r1, [%rd2], %r5;",), True),    # inline assembly, two on a line
    (("// atom.global.add.f32 %f3, [%rd2], %f1;",), False),               # a comment is no instruction
])
def test_global_atomics_are_read_from_the_ptx(lines, may):
    assert may_make_global_atomics(_ptx(*lines)) is may


def test_code_outside_the_ptx_may_make_atomics():
    text = ".extern .func  (.param .b32 func_retval0) vprintf\n(\n\t.param .b64 vprintf_param_0\n)\n;\n" + _ptx()
    assert may_make_global_atomics(text)


def test_any_doubt_keeps_every_metric(tmp_path):
    clean, dirty = tmp_path / "clean.ptx", tmp_path / "dirty.ptx"
    clean.write_text(_ptx())
    dirty.write_text(_ptx("atom.global.add.f32 \t%f3, [%rd2], %f1;"))
    assert atomic_free([clean, clean])
    assert not atomic_free([clean, dirty])
    assert not atomic_free([clean, None])                     # a module without PTX
    assert not atomic_free([clean, tmp_path / "missing.ptx"])  # unreadable
    assert not atomic_free([])


def test_the_class_seed_is_the_exercise_s_not_the_student_s():
    assert class_seed("level2", None, secret="") == class_seed("level2", None, secret="")
    assert len({class_seed("level2", None, secret=""), class_seed("level1", None, secret=""),
                class_seed("level2", None, secret="course")}) == 3
    assert class_seed("level2", 42, secret="course") == 42  # a fixed --seed is the class's too


def _context(seed: int, shared: int | None, modules: dict | None = None, backend: str = "gpu") -> Context:
    runner = SimpleNamespace(modules=modules or {}, workdir=Path("/nonexistent"))
    return Context(exercise=load(LEVEL2), backend=backend, runner=runner, seed=seed, class_seed=shared, tools=Tools(),
                   source_name="k.cu", source="", has_reference=True, emu_available=True)


def test_every_student_s_profile_launches_share_the_class_seed():
    shared = class_seed("level2", None, secret="")
    one, two = _context(derive_seed("level2", "ab" * 32, ""), shared), _context(derive_seed("level2", "cd" * 32, ""), shared)
    assert one.seed_for("correctness:0:0") != two.seed_for("correctness:0:0")  # the student's own inputs elsewhere
    assert one.class_seed_for(counters.PROFILE_SEED) == two.class_seed_for(counters.PROFILE_SEED)
    # With --seed S the class seed is S: the profile seed is what seed_for gave before.
    fixed = _context(7, class_seed("level2", 7))
    assert fixed.class_seed_for(counters.PROFILE_SEED) == fixed.seed_for(counters.PROFILE_SEED)
    for ctx in (one, two):
        assert {t.seeds for t in counters.ncu_request(ctx).tasks} == {(one.class_seed_for(counters.PROFILE_SEED),)}
    # On the emulator too, so a lone grading and a batch profile the same launches on either backend.
    check = counters.CountersCheck("traffic", counters.TRAFFIC)
    for ctx in (_context(1, shared, backend="emu"), _context(2, shared, backend="emu")):
        planned = check.plan(ctx, ctx.spec.checks["traffic"])
        assert [t.module for t in planned] == ["submission", "reference"]
        assert {t.seeds for t in planned} == {(one.class_seed_for(counters.PROFILE_SEED),)}


def _request_for(tmp_path, submission_ptx: str | None) -> counters.NcuRequest:
    ptx = {}
    for name, text in (("submission", submission_ptx), ("reference", _ptx())):
        if text is not None:
            (tmp_path / f"{name}.ptx").write_text(text)
            ptx[name] = str(tmp_path / f"{name}.ptx")
    return counters.ncu_request(_context(1, 1, {"gpu": {"submission": "s.cubin", "reference": "r.cubin"}, "emu": ptx}))


def test_ncu_is_not_asked_for_atomics_that_neither_module_has(tmp_path):
    request = _request_for(tmp_path, _ptx())
    assert set(request.zero) == set(counters.ATOMIC_METRICS) and set(request.metrics) >= set(counters.ATOMIC_METRICS)
    asked = request.wrapper("ncu")[request.wrapper("ncu").index("--metrics") + 1].split(",")
    assert asked == list(request.asked) and not set(asked) & set(counters.ATOMIC_METRICS)
    assert counters.NcuRequest.from_json(request.to_json()) == request
    # A submission with a global atomic, or without PTX here: every metric.
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for full in (_request_for(tmp_path / "a", _ptx("red.global.add.f32 \t[%rd2], %f1;")), _request_for(tmp_path / "b", None)):
        assert full.zero == () and full.asked == full.metrics
    # A request written before `zero` existed reads as asking for every metric.
    old = {k: v for k, v in request.to_json().items() if k != "zero"}
    assert counters.NcuRequest.from_json(old).zero == ()


def _csv(metrics, rows) -> str:
    lines = [",".join(f'"{c}"' for c in ["ID", "Kernel Name", *metrics]), ",".join(f'"{c}"' for c in ["", "", *["x"] * len(metrics)])]
    lines += [",".join(f'"{c}"' for c in [str(i), "matmul_tiled", *row]) for i, row in enumerate(rows)]
    return "\n".join(lines) + "\n"


def test_the_known_zeros_give_the_counts_a_run_of_every_metric_gives(tmp_path):
    request = _request_for(tmp_path, _ptx())
    full = counters.NcuRequest(request.exercise_root, request.modules, request.tasks, request.metrics, request.kernels)
    value = {m: ("0" if m in request.zero else f"{1000 + i:,}") for i, m in enumerate(request.metrics)}
    rows_full = [[value[m] for m in full.metrics]] * len(request.tasks)
    rows_asked = [[value[m] for m in request.asked]] * len(request.tasks)
    results = {t.id: TaskResult(t.id, "ok") for t in request.tasks}
    by_full = counters.counts_from(full, results, full.parse(_csv(full.metrics, rows_full)))
    by_zero = counters.counts_from(request, results, request.parse(_csv(request.asked, rows_asked)))
    assert by_zero == by_full and by_full[1] is None
    some = next(iter(by_zero[0].values()))["reference"]
    assert list(some) == list(request.metrics)  # the same keys in the same order: the results JSON is alike
    assert some[counters.ATOM_SECTORS] == 0.0 and some[counters.LD_SECTORS] == 1000.0
    # ncu not knowing an asked metric is still a problem, whatever is filled in.
    missing = counters.counts_from(request, results, request.parse(_csv(request.asked[1:], [r[1:] for r in rows_asked])))
    assert missing[0] is None and request.asked[0] in missing[1]
