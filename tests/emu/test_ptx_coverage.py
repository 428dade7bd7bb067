"""The emulator's PTX coverage, measured: every construct in the corpus is emulated or refused on purpose."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.emu import Emulator, coverage
from grader.emu.ptx import parse

ROOT = Path(__file__).resolve().parents[2]
CORPUS = sorted((ROOT / "tests" / "emu" / "ptx_corpus").glob("*.cu"))
REFERENCE = sorted(ROOT.glob("reference/*/solution.cu")) + sorted(ROOT.glob("reference/*/wrong/*.cu"))

HEAD = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 k_param_0)
{
.reg .b32 %r<4>;
.reg .b64 %rd<3>;
.loc 1 3 0
ld.param.u64 %rd1, [k_param_0];
"""


def _census(body: str) -> coverage.Census:
    return coverage.census({"k.ptx": HEAD + body + "ret;\n}\n"})


def _expects_compile_error(path: Path) -> bool:
    return "expect: compile" in path.read_text(encoding="utf-8", errors="replace").splitlines()[0]


@pytest.mark.slow
def test_every_construct_in_the_corpus_is_emulated_or_refused():
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    files = [p for p in CORPUS + REFERENCE if not _expects_compile_error(p)]
    c = coverage.census_of_files(files)
    assert c.problems == (), c.problems
    missing = [(m.kind, m.name, m.note, m.files[:2]) for m in c.missing()]
    assert missing == [], "constructs neither emulated nor in REFUSED:\n" + "\n".join(map(str, missing))
    counts = coverage.summary_counts(c)
    # the corpus really exercises what it claims to
    names = {k.name for k in c.constructs}
    for needed in ("WARP_SZ", "%laneid", "dp4a.s32.s32", "atom.add.noftz.f16x2", "call recursive",
                   ".maxntid", "shfl.sync.down.b32", "match.any.sync.b32", "vote.sync.ballot.b32"):
        assert any(n == needed or n.startswith(needed) for n in names), needed
    assert counts["opcode"]["emulated"] > 200


def test_an_unknown_opcode_is_missing_and_a_texture_fetch_refused():
    c = _census("frobnicate.u32 %r1, %r2;\n"
                "tex.1d.v4.f32.s32 {%r1, %r2, %r3, %r3}, [%rd1, {%r1}];\n"
                "add.s32 %r1, %r2, %r3;\n")
    by = {k.name: k for k in c.of("opcode")}
    assert by["frobnicate.u32"].status == "missing"
    assert by["tex.1d.v4.f32.s32"].status == "refused"
    assert "texture" in by["tex.1d.v4.f32.s32"].note
    assert by["add.s32"].status == "emulated"
    assert [m.name for m in c.missing()] == ["frobnicate.u32"]


def test_special_registers_directives_and_spaces_are_counted():
    c = _census("mov.u32 %r1, %laneid;\nmov.u32 %r2, %clusterid.x;\nmov.u32 %r3, WARP_SZ;\n"
                "ld.shared.u32 %r1, [%r2];\n")
    sp = {k.name: k.status for k in c.of("special register")}
    assert sp == {"%laneid": "emulated", "%clusterid.x": "refused", "WARP_SZ": "emulated"}
    dirs = {k.name: k.status for k in c.of("directive")}
    assert dirs[".entry"] == "emulated" and dirs[".loc"] == "emulated"
    spaces = {k.name for k in c.of("state space")}
    assert {".param", ".reg", ".shared"} <= spaces


def test_cache_hints_do_not_make_new_forms():
    c = _census("ld.global.nc.L1::no_allocate.v2.u32 {%r1, %r2}, [%rd1];\nld.global.ca.u32 %r1, [%rd1];\n")
    assert {k.name for k in c.of("opcode")} >= {"ld.global.nc.v2.u32", "ld.global.u32"}


def test_an_unknown_directive_is_missing():
    c = coverage.census({"k.ptx": HEAD.replace(".visible .entry", ".frobdirective 3\n.visible .entry") + "ret;\n}\n"})
    assert [(m.kind, m.name) for m in c.missing()] == [("directive", ".frobdirective")]


def test_markdown_has_the_summary_and_tables():
    c = _census("add.s32 %r1, %r2, %r3;\n")
    md = coverage.render_markdown(c, 1)
    assert "| opcode forms | " in md and "### opcodes" in md and "`add.s32`" in md


def test_a_refused_opcode_names_itself_and_its_line_when_it_runs():
    emu = Emulator(HEAD + ".loc 1 7 2\nwmma.load.a.sync.aligned.row.m16n16k16.f16 {%r1, %r2}, [%rd1];\nret;\n}\n")
    a = emu.alloc(64)
    r = emu.launch("k", grid=(1,), block=(32,), args=[a])
    assert r.status == "unsupported"
    assert "tensor-core" in r.message and "wmma" in r.message and "line 7" in r.message


def test_every_refusal_message_names_its_construct():
    for key, msg in coverage.REFUSED.items():
        word = key.split()[-1].lstrip(".%")
        assert word.split(".")[0].split("::")[0] in msg or key.startswith("call "), (key, msg)


def test_the_census_reads_inlined_function_bodies():
    ptx = """.version 8.0
.target sm_90
.address_size 64
.func (.param .b32 func_retval0) f(.param .b32 f_param_0)
{
.reg .b32 %r<3>;
ld.param.u32 %r1, [f_param_0];
frobnicate.u32 %r2, %r1;
st.param.b32 [func_retval0+0], %r2;
ret;
}
.visible .entry k(.param .u64 k_param_0)
{
.reg .b32 %r<3>;
{
.param .b32 param0;
st.param.b32 [param0+0], %r1;
.param .b32 retval0;
call.uni (retval0), f, (param0);
ld.param.b32 %r2, [retval0+0];
}
ret;
}
"""
    assert "f" in parse(ptx).funcs
    c = coverage.census({"f.ptx": ptx})
    assert [m.name for m in c.missing()] == ["frobnicate.u32"]


def test_the_docs_list_every_refusal_as_the_code_words_it():
    doc = (ROOT / "docs" / "emulator.md").read_text(encoding="utf-8")
    for key, msg in coverage.REFUSED.items():
        assert f"| `{key}` | {msg} |" in doc, key
