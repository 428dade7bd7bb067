"""docs/exercise-format.md documents every field of the spec schema: a field added to the schema
and not to the guide fails here."""
from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CATEGORIES = ("compile", "correctness", "race", "memory-safety", "traffic", "bank-conflicts", "performance")


def _fields(node: dict, path: str, defs: dict, out: list[str]) -> None:
    if "$ref" in node:
        node = {**defs[node["$ref"].rsplit("/", 1)[-1]], **{k: v for k, v in node.items() if k != "$ref"}}
    for key, child in node.get("properties", {}).items():
        here = f"{path}.{key}" if path else key
        out.append(here)
        _fields(child, here, defs, out)
    items = node.get("items")
    if isinstance(items, dict):
        _fields(items, path + "[]", defs, out)


def schema_fields() -> list[str]:
    schema = json.loads((ROOT / "grader" / "schemas" / "spec.schema.json").read_text())
    out: list[str] = []
    _fields(schema, "", schema["$defs"], out)
    # every check takes the same fields: the guide documents them once, as checks.<category>.field
    folded = []
    for f in out:
        for c in CATEGORIES:
            if f == f"checks.{c}" or f.startswith(f"checks.{c}."):
                f = "checks.<category>" + f[len(f"checks.{c}"):]
        folded.append(f)
    return list(dict.fromkeys(folded))


def test_every_schema_field_is_in_the_guide():
    guide = (ROOT / "docs" / "exercise-format.md").read_text()
    missing = [f for f in schema_fields() if f"`{f}`" not in guide]
    assert not missing, "docs/exercise-format.md does not document: " + ", ".join(missing)


def test_the_field_walk_sees_nested_and_shared_fields():
    fields = schema_fields()
    assert "kernel.params[].role" in fields and "checks.<category>.compare" in fields
    assert "limits.step_limit" in fields and "hidden_tests.category" in fields


def _seed_example() -> str:
    """The hidden test that docs/exercise-format.md gives for seeds, as written there."""
    guide = (ROOT / "docs" / "exercise-format.md").read_text()
    after = guide.split("<!-- hidden-test-seed-example -->", 1)[1]
    return after.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_guides_seed_example_runs_as_a_hidden_test(tmp_path):
    """The example passes the reference solution and fails a wrong kernel, with its own message."""
    import shutil

    from grader import api

    folder = tmp_path / "level2"
    shutil.copytree(ROOT / "exercises" / "level2", folder)
    for old in (folder / "tests").glob("test_*.py"):
        old.unlink()
    (folder / "tests" / "test_seeds.py").write_text("import numpy as np\n\n\n" + _seed_example())

    def hidden(submission: Path):
        report = api.grade(folder, submission, backend="emu", seed=1, workdir=tmp_path / f"work-{submission.stem}")
        return next(t for t in report.tests if t.name == "Hidden tests")

    right = hidden(ROOT / "reference" / "level2" / "solution.cu")
    assert right.passed, right.output
    wrong = hidden(ROOT / "reference" / "level2" / "wrong" / "wrong_index.cu")
    assert not wrong.passed and "wrong at seed 1" in wrong.output, wrong.output

