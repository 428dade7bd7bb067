"""The compile cache: keyed by everything that decides a compile, used only when readable."""
from __future__ import annotations

from pathlib import Path

from grader.run.parent import compile_cache

ROOT = Path(__file__).resolve().parent.parent


def _entry(tmp_path: Path) -> dict:
    for suffix in ("ptx", "cubin"):
        (tmp_path / f"made.{suffix}").write_text(suffix)
    return {"ok": True, "log": "", "seconds": 0.2, "ptx": str(tmp_path / "made.ptx"), "cubin": str(tmp_path / "made.cubin")}


def test_key_changes_with_everything_that_decides_the_compile():
    base = compile_cache.key("src", "a.cu", "sm_90", (), 1)
    assert base == compile_cache.key("src", "a.cu", "sm_90", (), 1)
    others = {compile_cache.key("src2", "a.cu", "sm_90", (), 1), compile_cache.key("src", "b.cu", "sm_90", (), 1),
              compile_cache.key("src", "a.cu", "sm_80", (), 1), compile_cache.key("src", "a.cu", "sm_90", ("x.h",), 1),
              compile_cache.key("src", "a.cu", "sm_90", (), 2)}
    assert base not in others and len(others) == 5


def test_store_then_load_copies_the_artifacts(tmp_path):
    root = tmp_path / "cache"
    compile_cache.store(root, "ab" * 32, _entry(tmp_path))
    hit = compile_cache.load(root, "ab" * 32, str(tmp_path / "out"))
    assert hit["ok"] and hit["cached"] and Path(hit["ptx"]).read_text() == "ptx" and Path(hit["cubin"]).read_text() == "cubin"
    assert compile_cache.load(root, "cd" * 32, str(tmp_path / "out")) is None


def test_an_unwritable_or_disabled_cache_is_not_used(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    compile_cache.store(blocker / "cache", "ab" * 32, _entry(tmp_path))  # no exception
    assert compile_cache.load(blocker / "cache", "ab" * 32, str(tmp_path / "out")) is None
    monkeypatch.setenv(compile_cache.VARIABLE, "off")
    assert compile_cache.cache_root() is None


def test_a_second_grading_of_the_same_file_compiles_nothing(tmp_path, monkeypatch):
    from grader import exercise as exercise_module
    from grader.kinds import cuda_compile

    monkeypatch.setenv(compile_cache.VARIABLE, str(tmp_path / "cache"))
    source = tmp_path / "mine.cu"
    source.write_text((ROOT / "reference" / "level2" / "solution.cu").read_text())
    calls = []
    real = cuda_compile._compile_in_child
    monkeypatch.setattr(cuda_compile, "_compile_in_child", lambda todo, *a: calls.append([t["label"] for t in todo]) or real(todo, *a))
    exercise = exercise_module.load(ROOT / "exercises" / "level2")
    from grader.submission import read_checked

    sub, _ = read_checked(source, exercise.spec.limits)
    first = cuda_compile.compile_submission(exercise, sub, "sm_90", tmp_path)
    second = cuda_compile.compile_submission(exercise, sub, "sm_90", tmp_path)
    assert calls == [["submission", "reference"]]
    assert first["submission"]["ok"] and second["submission"]["cached"] and second["reference"]["cached"]


def test_a_changed_grader_header_is_not_answered_from_the_cache(monkeypatch, tmp_path):
    """The key holds the text of the grader's own headers (and the toolkit folder standing in for an
    NVRTC bundle): a submission that failed on an old <float.h> is compiled again with the new one."""
    from grader import headers
    from grader.run.parent import compile_cache

    own = tmp_path / "include"
    own.mkdir()
    (own / "float.h").write_text("/* old */")
    monkeypatch.setattr(headers, "own_dir", lambda: own)
    compile_cache._headers.cache_clear()
    before = compile_cache.key("src", "a.cu", "sm_90", ("cfloat",), 1)
    (own / "float.h").write_text("/* new: FLT_MAX defined */")
    compile_cache._headers.cache_clear()
    assert compile_cache.key("src", "a.cu", "sm_90", ("cfloat",), 1) != before
    compile_cache._headers.cache_clear()
