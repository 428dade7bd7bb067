"""grader.staff.conventions: each convention finds what it names, and every one is documented."""
from __future__ import annotations

import shutil
from pathlib import Path

from grader.exercise import load
from grader.staff import conventions

ROOT = Path(__file__).resolve().parent.parent


def _copy(tmp_path: Path) -> Path:
    folder = tmp_path / "exercises" / "vector_add"
    shutil.copytree(ROOT / "exercises" / "vector_add", folder)
    shutil.copytree(ROOT / "reference" / "vector_add", tmp_path / "reference" / "vector_add")
    return folder


def test_layout_names_each_missing_piece(tmp_path):
    folder = _copy(tmp_path)
    assert conventions.layout(load(folder)) == []
    (folder / "skeleton.cu").unlink()
    (tmp_path / "reference" / "vector_add" / "solution.cu").unlink()
    problems = conventions.layout(load(folder))
    assert len(problems) == 2 and "skeleton.cu" in problems[0] and "reference solution" in problems[1]


def test_a_spec_the_bundle_writer_cannot_write_back_breaks_the_round_trip(tmp_path, monkeypatch):
    from grader import toml_writer  # the writer both student bundles use, and the one the convention reads through

    folder = _copy(tmp_path)
    assert conventions.spec_round_trips(load(folder)) == []
    monkeypatch.setattr(toml_writer, "dumps_toml", lambda raw: 'id = "vector_add"\n')
    assert "does not read back unchanged" in conventions.spec_round_trips(load(folder))[0]


def test_a_hidden_size_in_the_readme_leaks_into_the_bundle(tmp_path):
    folder = _copy(tmp_path)
    assert conventions.bundle_hides_hidden(load(folder)) == []
    (folder / "README.md").write_text((folder / "README.md").read_text() + "\nWe also grade n = 31.\n")
    assert any("n = 31" in p for p in conventions.bundle_hides_hidden(load(folder)))


def test_every_convention_is_documented_in_the_exercise_format_guide():
    guide = (ROOT / "docs" / "exercise-format.md").read_text()
    missing = [c.name for c in conventions.CONVENTIONS if f"**{c.name}**" not in guide]
    assert not missing, "docs/exercise-format.md does not describe: " + ", ".join(missing)


def test_validate_reports_each_convention(tmp_path):
    from grader.staff.validate import Validation, check_conventions

    folder = _copy(tmp_path)
    (tmp_path / "reference" / "vector_add" / "solution.cu").unlink()
    out = Validation("vector_add", "emu")
    check_conventions(load(folder), out)
    assert len(out.items) == len(conventions.CONVENTIONS)
    failed = [text for ok, text in out.items if not ok]
    assert len(failed) == 1 and failed[0].startswith("convention 'layout'") and "reference solution" in failed[0]
