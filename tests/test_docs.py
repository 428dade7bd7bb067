"""The docs keep their promises: every link resolves and every documented spec example validates."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from grader import spec as spec_module

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "exercises").glob("*/README.md")])
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", text))


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    return {_slug(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", text, re.MULTILINE)}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(doc: Path):
    text = re.sub(r"```.*?```", "", doc.read_text(encoding="utf-8"), flags=re.DOTALL)
    for match in LINK.finditer(text):
        target = match.group(1) or match.group(2)
        if re.match(r"[a-z]+:", target):  # http(s), mailto: not checked offline
            continue
        path_part, _, anchor = target.partition("#")
        resolved = (doc.parent / path_part).resolve() if path_part else doc
        assert resolved.exists(), f"{doc.relative_to(ROOT)}: link to {target} does not resolve"
        if anchor and resolved.suffix == ".md":
            assert anchor in _anchors(resolved), f"{doc.relative_to(ROOT)}: no heading for #{anchor} in {path_part or doc.name}"


def _spec_examples() -> list[tuple[Path, str]]:
    found = []
    for doc in DOCS:
        for block in re.findall(r"```toml\n(.*?)```", doc.read_text(encoding="utf-8"), flags=re.DOTALL):
            if re.search(r"^id\s*=", block, re.MULTILINE):
                found.append((doc, block))
    return found


def test_the_format_guide_has_a_spec_example():
    assert any(doc.name == "exercise-format.md" for doc, _ in _spec_examples())


@pytest.mark.parametrize("doc, block", _spec_examples(), ids=lambda x: x.name if isinstance(x, Path) else "")
def test_every_documented_spec_validates_and_adds_up(doc: Path, block: str):
    raw = tomllib.loads(block)
    if raw.get("kind") == "python":  # a Python exercise's contract (docs/python-exercises.md)
        from grader.pyexercise import spec as pyspec

        spec = pyspec.from_dict(raw, source=str(doc))
    else:
        spec = spec_module.from_dict(raw, source=str(doc))
    assert spec.max_score == 100, f"{doc.name}: the example's points add up to {spec.max_score:g}, not 100"


def test_every_spec_field_of_a_check_is_in_the_format_guide():
    guide = (ROOT / "docs" / "exercise-format.md").read_text(encoding="utf-8")
    fields = spec_module.schema()["$defs"]["check"]["properties"]
    missing = [f for f in fields if f"`{f}`" not in guide and not re.search(rf"^{f}\s*=", guide, re.MULTILINE)]
    assert not missing, f"docs/exercise-format.md does not mention {missing}"
