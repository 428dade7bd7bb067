"""Hints from evidence: each exercise hint is tried on a kernel with the same symptom for another
cause (it must not show) and on one with the cause (it must show); correctness names the cause the
emulator saw; counter advice comes from the submission's own code and per-line counts."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from grader import api, results
from grader.checks import counters, evidence
from grader import exercise
from grader.errors import SpecError
from grader.report import submission_page
from grader.spec import Hint, parse_hints

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "hints"
EX = ROOT / "exercises"
ATOMIC_HINT = "Combine the blocks with atomicAdd"
MAX_HINT = "Subtract the row maximum"


def _grade(tmp_path: Path, exercise: str, submission: Path):
    report = api.grade(EX / exercise, submission, backend="emu", seed=1, workdir=tmp_path / "work")
    return {t.name: t for t in report.tests}, report


# --- the spec form ---------------------------------------------------------------------------------

def test_hints_parse_plain_table_and_list_forms():
    parsed = parse_hints({"ragged": "plain", "fails": [{"text": "a", "when": ["atomics"]}, "b"]}, "spec.toml: hints")
    assert parsed["ragged"] == (Hint("plain"),)
    assert parsed["fails"] == (Hint("a", when=("atomics",)), Hint("b"))


def test_a_hint_naming_an_unknown_fact_is_a_spec_error():
    with pytest.raises(SpecError, match="unknown fact 'atomicz'"):
        parse_hints({"fails": {"text": "a", "unless": ["atomicz"]}}, "spec.toml: hints")


def test_when_and_unless():
    hint = Hint("x", when=("above_one_block",), unless=("global_atomics",))
    assert hint.applies({"above_one_block"})
    assert not hint.applies({"above_one_block", "global_atomics"})
    assert not hint.applies(set())


# --- facts of the code -------------------------------------------------------------------------------

def test_code_facts_tell_the_atomics_space_apart():
    facts, kinds = evidence.code_facts("\tatom.shared.add.u32 \t%r1, [%r2], 1;\n", "")
    assert {"atomics", "shared_atomics"} <= facts and "global_atomics" not in facts and kinds == ("atom.shared.add.u32",)
    facts, _ = evidence.code_facts("\t@%p1 red.global.add.f32 \t[%rd1], %f1;\n", "")
    assert "global_atomics" in facts and "shared_atomics" not in facts
    facts, _ = evidence.code_facts("\tld.global.f32 %f1, [%rd1];\n", "// atomicAdd(out, s[0]) in a comment\n")
    assert "atomics" not in facts


def test_a_two_dimensional_tile_comes_from_the_source():
    facts, _ = evidence.code_facts("", "__shared__ float tile[32][33];")
    assert "tile_2d" in facts
    facts, _ = evidence.code_facts("", "__shared__ float s[256];  // not [32][32]")
    assert "tile_2d" not in facts


def test_the_width_of_a_shared_access_sets_its_conflict_free_wavefronts():
    ptx = ".loc 1 5 3\n\tld.shared.v4.f32 {%f1, %f2, %f3, %f4}, [%r1];\n.loc 1 6 3\n\tst.shared.f32 [%r2], %f1;\n"
    assert evidence.natural_wavefronts(ptx) == {5: 4, 6: 1}


# --- correctness: the hint shows only for its cause ------------------------------------------------------

def test_the_atomicadd_hint_shows_for_a_kernel_without_atomics(tmp_path):
    tests, _ = _grade(tmp_path, "reduction", ROOT / "reference" / "reduction" / "wrong" / "first_block_stores.cu")
    out = tests["Correctness"].output
    assert "Only the sizes that need more than one block fail" in out and ATOMIC_HINT in out


def test_the_atomicadd_hint_stays_away_from_a_kernel_that_has_atomics(tmp_path):
    tests, _ = _grade(tmp_path, "reduction", DATA / "reduction_every_block_sums_block0.cu")
    out = tests["Correctness"].output
    assert "Only the sizes that need more than one block fail" in out  # the same symptom ...
    assert ATOMIC_HINT not in out                                       # ... for another cause
    assert "global_atomics" in tests["Correctness"].extra["facts"]


def test_the_max_hint_shows_for_a_kernel_that_does_not_subtract_it(tmp_path):
    tests, _ = _grade(tmp_path, "softmax", ROOT / "reference" / "softmax" / "wrong" / "no_max_subtraction.cu")
    assert MAX_HINT in tests["Correctness"].output


def test_the_max_hint_stays_away_from_nans_the_kernel_never_wrote(tmp_path):
    tests, _ = _grade(tmp_path, "softmax", DATA / "softmax_writes_first_columns_only.cu")
    out = tests["Correctness"].output
    assert "never written" in out and MAX_HINT not in out
    assert "[256..999] of y never written" in out  # where the wrong elements lie


def test_the_histogram_atomic_hints_stay_away_from_a_kernel_with_atomics(tmp_path):
    tests, _ = _grade(tmp_path, "histogram", ROOT / "reference" / "histogram" / "wrong" / "atomic_wrong_bin.cu")
    out = tests["Correctness"].output
    assert not tests["Correctness"].passed
    assert "Count with atomicAdd" not in out and "Merge the private bins" not in out


def test_the_histogram_hints_follow_the_facts():
    spec_hints = exercise.load(EX / "histogram").spec.checks["correctness"].hints["fails"]
    no_atomics = evidence.applicable(spec_hints, {"shared_memory"})
    assert any("Count with atomicAdd" in h for h in no_atomics)
    only_shared = evidence.applicable(spec_hints, {"atomics", "shared_atomics", "shared_memory"})
    assert [h for h in only_shared if "Merge" in h] and not [h for h in only_shared if "Count with" in h]
    both = evidence.applicable(spec_hints, {"atomics", "shared_atomics", "global_atomics", "shared_memory"})
    assert both == []


# --- correctness names the cause ----------------------------------------------------------------------

def test_an_out_of_bounds_read_is_named_under_correctness_and_fails_memory_safety(tmp_path):
    tests, report = _grade(tmp_path, "reduction", DATA / "reduction_reads_before_x.cu")
    out = tests["Correctness"].output
    assert "What the emulator saw that explains it" in out
    assert "out of bounds read of global memory at reduction_reads_before_x.cu:8" in out
    assert "12 bytes before the start of" in out and "buffer x" in out
    mem = tests["Memory safety"]
    # right at no size, so memory safety could not pass; the read it saw fails it outright
    assert not mem.passed and not mem.extra.get("gated") and "Unsafe memory accesses" in mem.output
    assert "reduction_reads_before_x.cu:8" in mem.output and mem.extra["findings"]
    # The HTML page lists the read once, though two checks report it.
    page = submission_page.build(results.to_json(report), (DATA / "reduction_reads_before_x.cu").read_text())
    assert len(page.findings) == 1 and page.findings[0].lines == (8,)
    assert set((page.findings[0].check,) + page.findings[0].also) == {"Correctness", "Memory safety"}


# --- counter advice ----------------------------------------------------------------------------------------

def _ctx_with(facts, conflicts=(), backend="emu"):
    found = evidence.Evidence(frozenset(facts), conflict_lines=tuple(conflicts))
    return SimpleNamespace(results={}, evidence=(0, found), backend=backend, quote=lambda line: f"k.cu:{line}")


def test_traffic_advice_names_atomics_only_for_a_kernel_with_global_atomics():
    conf = SimpleNamespace(hints={})
    check = counters.CountersCheck("traffic", counters.TRAFFIC)
    assert "atomic" not in check.advice(_ctx_with({"shared_memory"}), conf)
    assert "one atomic per block" in check.advice(_ctx_with({"global_atomics", "atomics"}), conf)


def test_bank_conflict_advice_names_conflicting_lines_and_pads_only_a_tile():
    conf = SimpleNamespace(hints={})
    check = counters.CountersCheck("bank-conflicts", counters.BANKS)
    none = check.advice(_ctx_with(set()), conf)
    assert "No shared-memory access line has bank conflicts" in none and "[32][33]" not in none
    flat = check.advice(_ctx_with({"bank_conflicts"}, [(18, 3.9)]), conf)
    assert "k.cu:18 averages 3.9" in flat and "[32][33]" not in flat
    tile = check.advice(_ctx_with({"bank_conflicts", "tile_2d"}, [(12, 16.0)]), conf)
    assert "[32][33]" in tile


def test_bank_conflict_advice_for_extra_accesses_without_conflicts(tmp_path):
    tests, _ = _grade(tmp_path, "reduction", DATA / "reduction_tree_twice.cu")
    out = tests["Shared-memory bank conflicts"].output
    assert not tests["Shared-memory bank conflicts"].passed
    assert "No shared-memory access line has bank conflicts" in out and "[32][33]" not in out


def test_bank_conflict_advice_names_the_interleaved_line(tmp_path):
    tests, _ = _grade(tmp_path, "reduction", ROOT / "reference" / "reduction" / "wrong" / "interleaved_addressing.cu")
    out = tests["Shared-memory bank conflicts"].output
    assert "interleaved_addressing.cu:18" in out and "[32][33]" not in out


def test_the_stencil_exercise_names_the_read_before_x_and_its_page_counts_it(tmp_path):
    """A TA's 7-point stencil (tests/data/hints/exercises/stencil7) whose block 0 reads x[-3]: the
    three NaN it writes are explained by the read, with its line, and the page lists it once."""
    wrong = DATA / "reference" / "stencil7" / "wrong" / "left_edge_unguarded.cu"
    report = api.grade(DATA / "exercises" / "stencil7", wrong, backend="emu", seed=1, workdir=tmp_path / "work")
    tests = {t.name: t for t in report.tests}
    out = tests["Correctness"].output
    assert "3 NaN written by the kernel" in out
    assert "out of bounds read of global memory at left_edge_unguarded.cu:15" in out and "before the start of" in out
    assert "elements 0..2 of out wrong" in out
    assert "Guard every neighbour" not in out  # the exercise's hint is for when no out-of-bounds read explains it
    page = submission_page.build(results.to_json(report), wrong.read_text())
    assert len(page.findings) == 1


@pytest.mark.gpu
def test_on_a_gpu_the_emulator_still_names_the_cause_and_the_hints_follow_the_facts(tmp_path):
    """On the GPU backend the emulated memory-safety launch (emu_size) names the read before x under
    correctness, and the atomicAdd hint follows the PTX as on the emulator."""
    reduction = EX / "reduction"
    report = api.grade(reduction, DATA / "reduction_reads_before_x.cu", backend="gpu", seed=1, workdir=tmp_path / "a")
    out = {t.name: t for t in report.tests}["Correctness"].output
    assert "out of bounds read of global memory at reduction_reads_before_x.cu:8" in out
    report = api.grade(reduction, DATA / "reduction_every_block_sums_block0.cu", backend="gpu", seed=1, workdir=tmp_path / "b")
    assert ATOMIC_HINT not in {t.name: t for t in report.tests}["Correctness"].output
    report = api.grade(reduction, ROOT / "reference" / "reduction" / "wrong" / "first_block_stores.cu", backend="gpu",
                       seed=1, workdir=tmp_path / "c")
    assert ATOMIC_HINT in {t.name: t for t in report.tests}["Correctness"].output


def test_a_read_a_whole_length_past_x_is_out_of_bounds_of_x_not_a_read_of_the_next_buffer(tmp_path):
    tests, _ = _grade(tmp_path, "vector_add", DATA / "vector_add_reads_past_x.cu")
    out = tests["Correctness"].output
    assert "out of bounds read of global memory at vector_add_reads_past_x.cu:7" in out and "buffer x" in out
    assert "before the kernel has written it" not in out


def test_the_size_pattern_names_the_variable_that_splits_the_sizes():
    ctx = SimpleNamespace(spec=exercise.load(EX / "softmax").spec)
    passing = [{"rows": 2, "cols": 256}]
    failing = [{"rows": 3, "cols": 17}, {"rows": 3, "cols": 257}]
    assert evidence.size_pattern(ctx, passing, failing) == (
        "ragged", "Only the sizes where cols is not a multiple of 256 (the block's width) fail.")
    assert evidence.size_pattern(ctx, [], failing)[0] == "all_sizes"
    ctx = SimpleNamespace(spec=exercise.load(EX / "reduction").spec)
    assert evidence.size_pattern(ctx, [{"n": 1}, {"n": 256}], [{"n": 512}, {"n": 1024}])[0] == "above_one_block"
    assert evidence.size_pattern(ctx, [{"n": 256}, {"n": 512}], [{"n": 256 * 3}])[0] == ""


def test_every_fact_a_hint_may_name_is_documented():
    from grader.spec import HINT_FACTS
    doc = (ROOT / "docs" / "exercise-format.md").read_text()
    assert [f for f in HINT_FACTS if f"| `{f}` |" not in doc] == []


def test_the_spec_schema_rejects_a_hint_table_with_an_unknown_key():
    from grader import spec as spec_module
    raw = spec_module.read_toml(EX / "reduction" / "spec.toml")
    raw["checks"]["correctness"]["hints"]["fails"] = [{"text": "x", "whenever": ["atomics"]}]
    with pytest.raises(SpecError, match="checks.correctness.hints.fails"):
        spec_module.from_dict(raw, source="spec.toml")


# --- one piece of advice, said once ------------------------------------------------------------------

def test_a_hint_shown_covers_the_facts_it_is_written_for():
    conf = SimpleNamespace(hints=parse_hints({
        "ragged": {"text": "guard the tile", "when": ["shared_memory"]},
        "fails": [{"text": "zero C first", "when": ["early_output_read"]},
                  {"text": "keep nothing", "when": ["second_launch"], "unless": ["atomics"]}]}, "spec.toml: hints"))
    seen = evidence.Evidence(frozenset({"ragged", "shared_memory", "early_output_read", "second_launch", "atomics"}))
    assert seen.covered(conf, ("ragged", "fails")) == {"ragged", "shared_memory", "early_output_read"}
    not_ragged = evidence.Evidence(frozenset({"shared_memory", "second_launch"}))
    assert not_ragged.covered(conf, ("ragged", "fails")) == {"second_launch"}  # a ragged hint is not shown: covers nothing
    assert not_ragged.covered(SimpleNamespace(hints={}), ("ragged", "fails")) == frozenset()


def test_a_causes_remedy_gives_way_to_a_hint_for_its_fact():
    cause = evidence.Cause("early_output_read", None, "line 3 reads C first.", "Write C before reading it.")
    assert cause.said() == "line 3 reads C first. Write C before reading it."
    assert cause.said(frozenset({"early_output_read"})) == "line 3 reads C first."
    assert cause.said(frozenset({"race"})) == "line 3 reads C first. Write C before reading it."


def _level2_with_hint(tmp_path: Path, hint: str) -> Path:
    import shutil

    folder = tmp_path / "level2"
    shutil.copytree(EX / "level2", folder)
    spec = folder / "spec.toml"
    text = spec.read_text()
    anchor = "[checks.correctness.hints]"
    assert anchor in text
    spec.write_text(text.replace(anchor, f"{anchor}\nfails = {hint}", 1))
    return folder


def test_the_graders_remedy_for_an_early_read_is_left_out_where_the_exercise_hints_at_it(tmp_path):
    source = (ROOT / "reference" / "level2" / "solution.cu").read_text()
    beta = tmp_path / "beta_zero.cu"  # C = A*B + 0 * C: reads C, which holds no data yet
    beta.write_text(source.replace("C[row * N + col] = acc;", "C[row * N + col] = acc + 0.0f * C[row * N + col];"))
    remedy = "Write each element of C before reading it"

    def correctness(folder: Path) -> str:
        report = api.grade(folder, beta, backend="emu", seed=1, workdir=tmp_path / f"work-{folder.parent.name}")
        return next(t.output for t in report.tests if t.name == "Correctness")

    plain = correctness(EX / "level2")
    assert "reads C before the kernel has written it" in plain and remedy in plain
    hinted = correctness(_level2_with_hint(tmp_path, '{ text = "C is NaN on entry: never read it.", when = ["early_output_read"] }'))
    assert "reads C before the kernel has written it" in hinted  # what was seen stays
    assert "C is NaN on entry: never read it." in hinted and remedy not in hinted


def test_the_graders_question_about_a_second_launch_is_left_out_where_the_exercise_hints_at_it():
    from grader.checks.correctness import case_problem

    cmp_bad = {"ok": False, "bad": 3, "total": 8, "first": {"param": "out", "index": [5], "got": 1.0, "want": 2.0, "tol": 1e-6}}
    result = SimpleNamespace(status="ok", launches=[{"compare": {"ok": True}}, {"compare": cmp_bad}])
    asked = case_problem(result, {"n": 8})
    assert "second launch, new inputs" in asked and "kept across launches" in asked
    told = case_problem(result, {"n": 8}, ask_why=False)
    assert "second launch, new inputs" in told and "kept across launches" not in told
