"""docs/architecture.md names the code as it is: every module it names exists, and every function it
names as `package/module.function` is defined there (the walk of a .cu from the CLI to its results)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
# Files the Python kind's child sees under other names (copied there as pyworker.py, pyvalues.py, pytripwire.py).
RENAMED = {"pyworker.py", "pyvalues.py", "pytripwire.py"}


def _defined(path: Path) -> set[str]:
    """The top-level names a module defines or imports."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def test_every_module_named_exists():
    text = DOC.read_text(encoding="utf-8")
    named = set(re.findall(r"`((?:grader/)?[\w/]+\.py)\b", text)) - RENAMED
    assert "kinds/cuda_compile.py" in named  # the pattern reads the walk-through's names
    grader = ROOT / "grader"
    missing = [n for n in sorted(named) if not ((ROOT / n).exists() or (grader / n).exists() or any(grader.rglob(n)))]
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"


def test_every_function_named_by_its_module_is_defined_there():
    text = DOC.read_text(encoding="utf-8")
    refs = set(re.findall(r"`([a-z_]+(?:/[a-z_]+)+)\.([A-Za-z_]\w*)(?:\(\))?`", text))
    refs = {(module, name) for module, name in refs if name != "py"}
    assert ("grading/seed", "derive_seed") in refs
    wrong = [f"{m}.{n}" for m, n in sorted(refs)
             if not (ROOT / "grader" / f"{m}.py").exists() or n not in _defined(ROOT / "grader" / f"{m}.py")]
    assert not wrong, f"docs/architecture.md names functions that are not where it says: {wrong}"
