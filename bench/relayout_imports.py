"""Rewrite names of the grader's modules from the flat layout to the layered one (docs/architecture.md).

    python bench/relayout_imports.py FILE...     # .py, .md, .sh (any text file): rewritten in place
    python bench/relayout_imports.py --check FILE...   # exit 1 and list the files that would change
    python bench/relayout_imports.py --old-form FILE...  # moved files still hold their pre-move text
    python bench/relayout_imports.py --move grader.x=grader.run.parent.x FILE...   # one more move (repeatable)

To move a module written for the flat layout (one added beside these moves): `git mv` it, then run
this script with `--move OLD=NEW` for it over every file: its own relative imports are read from its
old place, and every import of it elsewhere follows.

What it rewrites, and nothing else:
  - Python imports of a moved module, absolute (`from grader.stages import Runner`, `import
    grader.tasks`) and relative (`from .stages import ...`, `from . import pyvalues`, `from ..tasks
    import Task`). A relative import is read from the file's own place in grader/; in a file that was
    itself moved (it lies at a new path but was written for the old one) an import that names nothing
    from the new place is read from the old place. The result is written relative again. One
    ambiguity: in grader/pyexercise/, `from .spec`, `from .sandbox` and `from .hidden_tests` name that
    package's own modules; a line merged in from before the move that meant grader.spec (now
    `from ..spec`) is not told apart and must be fixed by hand.
  - Dotted names and paths of moved modules anywhere in the text: "grader.runner" in an argv,
    `-m grader.gradescope`, grader.stages.Runner in a comment, grader/stages.py in a doc.
  - The one class renamed with its module: stages.Runner is run.parent.supervisor.TaskSupervisor
    (in files that import that module, and in the module itself).

After merging a branch written for the flat layout: resolve conflicts in import blocks by taking that
branch's side (its old names), then run this script over every .py, .md and .sh file.

Idempotent: a file already in the new layout is left byte for byte as it is. Run from anywhere; the
grader's package is found next to this script (../grader).
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# A file that holds this text is skipped (this script's own table, and its test, name old modules).
KEEP_MARK = "relayout_imports: leave this file as it is"

# Old dotted module -> new dotted module. `grader.cli` itself stays importable (grader/cli/__init__.py
# re-exports main), so only its path and its `from .cli import X` forms move (to grader.cli.commands).
MOVES = {
    "grader.cli": "grader.cli.commands",
    "grader.cli_guard": "grader.cli.guard",
    "grader.cli_staff": "grader.cli.staff",
    "grader.tasks": "grader.run.tasks",
    "grader.gpu_lock": "grader.run.gpu_lock",
    "grader.runner": "grader.run.child.runner",
    "grader.launch": "grader.run.child.launch",
    "grader.timing": "grader.run.child.timing",
    "grader.launch_budget": "grader.run.child.launch_budget",
    "grader.hidden_tests": "grader.run.child.hidden_tests",
    "grader.stages": "grader.run.parent.supervisor",
    "grader.sandbox": "grader.run.parent.sandbox",
    "grader.isolated": "grader.run.parent.isolated",
    "grader.stage_clock": "grader.run.parent.stage_clock",
    "grader.compile_cache": "grader.run.parent.compile_cache",
    "grader.math_threads": "grader.run.parent.math_threads",
    "grader.device_probe": "grader.run.parent.device_probe",
    "grader.batch": "grader.staff.batch",
    "grader.batch_ray": "grader.staff.batch.ray",
    "grader.gradescope": "grader.staff.gradescope",
    "grader.student": "grader.staff.student_bundle",
    "grader.validate": "grader.staff.validate",
    "grader.pygrade": "grader.pyexercise.grade",
    "grader.pyhidden": "grader.pyexercise.hidden_tests",
    "grader.pysandbox": "grader.pyexercise.sandbox",
    "grader.pyspec": "grader.pyexercise.spec",
    "grader.pystudent": "grader.pyexercise.student_bundle",
    "grader.pyvalues": "grader.pyexercise.values",
    "grader.pyworker": "grader.pyexercise.child_worker",
}
BACK = {new: old for old, new in MOVES.items()}
# Classes renamed with their module: (new module, old name) -> new name.
CLASS_RENAMES = {("grader.run.parent.supervisor", "Runner"): "TaskSupervisor"}
# Dotted names rewritten in text: all but grader.cli, which is still a valid name (the package).
TEXT_MOVES = {old: new for old, new in MOVES.items() if old != "grader.cli"}


def existing_modules() -> set[str]:
    """Every module and package under ROOT/grader as it is now (moved modules at their new place)."""
    found = set(MOVES.values())
    for path in (ROOT / "grader").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        found.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


def module_of(path: Path) -> tuple[str, bool] | None:
    """The dotted module a file under ROOT/grader is, and whether it is a package's __init__."""
    try:
        parts = path.resolve().relative_to(ROOT).with_suffix("").parts
    except ValueError:
        return None
    if not parts or parts[0] != "grader":
        return None
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def _package(module: str, is_package: bool) -> str:
    return module if is_package else module.rpartition(".")[0]


def _resolve(package: str, level: int, name: str | None) -> str | None:
    parts = package.split(".")
    if level - 1 > len(parts) - 1:
        return None
    base = parts[: len(parts) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _relative(package: str, target: str) -> str:
    """`target` written relative to `package` (both dotted, inside grader)."""
    pkg, tgt = package.split("."), target.split(".")
    common = 0
    while common < min(len(pkg), len(tgt)) and pkg[common] == tgt[common]:
        common += 1
    return "." * (len(pkg) - common + 1) + ".".join(tgt[common:])


def _render(indent: str, module: str, names: list[tuple[str, str | None]]) -> str:
    listed = ", ".join(n if a is None or a == n else f"{n} as {a}" for n, a in names)
    return f"{indent}from {module} import {listed}"


def bound_names(module: str) -> set[str]:
    """The names a module of ROOT/grader binds at its top level (defined or imported)."""
    if module not in _BOUND:
        base = ROOT.joinpath(*module.split("."))
        path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
        names: set[str] = set()
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError):
            tree = ast.Module(body=[], type_ignores=[])
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        _BOUND[module] = names
    return _BOUND[module]


_BOUND: dict[str, set[str]] = {}


def _current(module: str | None, names: list[str], modules: set[str]) -> bool:
    """Does `from MODULE import NAMES` mean something in the new layout, as it is written?"""
    if module is None or module not in modules:
        return False
    if module in MOVES:  # an old name that is also a new package (grader.cli): only for what it binds
        return all(n in bound_names(module) or f"{module}.{n}" in modules for n in names)
    return True


def rewrite_imports(text: str, path: Path, modules: set[str], old_form: bool = False) -> str:
    """The `from ... import ...` statements of a Python file, rewritten to the new layout where needed.

    A relative import is read from the file's place now and, failing that, from its place before the
    move (for a moved file); with old_form, a moved file is read from its old place only (its text
    predates the move: `from .spec import Limits` in pyexercise/grade.py means grader.spec).
    """
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    here = module_of(path)
    new_pkg = old_pkg = None
    if here:
        new_pkg = _package(*here)
        moved_from = BACK.get(here[0])
        old_pkg = _package(moved_from, here[1]) if moved_from else None
    lines = text.splitlines(keepends=True)
    edits: list[tuple[int, int, str]] = []  # (first line, last line, replacement), 0-based inclusive
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        names = [(a.name, a.asname) for a in node.names]
        if node.level:
            if new_pkg is None:
                continue
            packages = [] if (old_form and old_pkg) else [new_pkg]
            packages += [old_pkg] if old_pkg else []
            readings = [_resolve(p, node.level, node.module) for p in packages]
        else:
            readings = [node.module]
        as_written = readings[0] if packages_first_is_new(node, old_form, old_pkg) else None

        def write(module: str) -> str:
            return _relative(new_pkg, module) if node.level else module

        grouped: dict[str, list[tuple[str, str | None]]] = {}
        changed = False
        for name, alias in names:
            place = _place(readings, name, alias, modules)
            if place is None or (place[0] == as_written and place[1] == name):
                grouped.setdefault(("." * node.level) + (node.module or ""), []).append((name, alias))
                continue
            grouped.setdefault(write(place[0]), []).append(place[1:])
            changed = True
        if not changed:
            continue
        indent = re.match(r"[ \t]*", lines[node.lineno - 1]).group(0)
        comment = re.search(r"#.*$", lines[node.end_lineno - 1].rstrip("\n"))
        tail = "  " + comment.group(0) if comment else ""
        rendered = "\n".join(_render(indent, m, ns) for m, ns in grouped.items())
        edits.append((node.lineno - 1, node.end_lineno - 1, rendered + tail + "\n"))
    for first, last, replacement in sorted(edits, reverse=True):
        lines[first:last + 1] = [replacement]
    return "".join(lines)


def _place(readings: list[str | None], name: str, alias: str | None,
           modules: set[str]) -> tuple[str, str, str | None] | None:
    """Where `from READING import name [as alias]` finds `name` in the new layout: (module, name, alias).

    The first reading that means something wins: a moved module (the name follows it), a module or
    package of the new layout that has the name (as a submodule or a top-level binding), or a
    package whose submodule `name` moved (then the import names the submodule's new place).
    """
    for reading in readings:
        if reading is None:
            continue
        sub = f"{reading}.{name}"
        if reading in MOVES and not _current(reading, [name], modules):
            return MOVES[reading], name, alias
        if reading not in modules:
            continue
        if (sub in modules and sub not in MOVES) or name in bound_names(reading) or name == "*":
            return reading, name, alias
        if sub in MOVES:
            parent, _, leaf = MOVES[sub].rpartition(".")
            return parent, leaf, alias or (name if leaf != name else None)
    return None


def packages_first_is_new(node: ast.ImportFrom, old_form: bool, old_pkg: str | None) -> bool:
    """Is the first reading of this import the one its text already means (the new layout's)?"""
    return not node.level or not (old_form and old_pkg)


def rewrite_text(text: str) -> str:
    """Dotted names (grader.stages) and paths (grader/stages.py) of moved modules, anywhere in the text."""
    for old in sorted(TEXT_MOVES, key=len, reverse=True):
        new = TEXT_MOVES[old]
        text = re.sub(rf"(?<![\w.]){re.escape(old)}(?!\w)", new, text)
    for old in sorted(MOVES, key=len, reverse=True):
        new = MOVES[old]
        text = re.sub(rf"(?<![\w.]){re.escape(old.replace('.', '/'))}\.py\b", new.replace(".", "/") + ".py", text)
    return text


def rename_classes(text: str, path: Path) -> str:
    """Renamed classes, in files that import their module (in any form) and in the module itself."""
    here = module_of(path)
    for (module, old), new in CLASS_RENAMES.items():
        leaf = module.rpartition(".")[2]
        imports_it = (here and here[0] == module) or module in text or re.search(
            rf"from\s+\.+(?:[\w.]*\.)?{leaf}\s+import|from\s+\.+[\w.]*\s+import\s+[^\n]*\b{leaf}\b", text)
        if imports_it:
            text = re.sub(rf"\b{old}\b", new, text)
    return text


def rewrite(path: Path, modules: set[str], old_form: bool = False) -> str:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        text = rewrite_imports(text, path, modules, old_form)
    text = rewrite_text(text)
    if path.suffix == ".py":
        text = rename_classes(text, path)
    return text


def main(argv: list[str]) -> int:
    check = "--check" in argv
    old_form = "--old-form" in argv
    files = []
    args = iter(argv)
    for arg in args:
        if arg == "--move":  # a module moved after this script was written: --move grader.x=grader.run.parent.x
            old, _, new = next(args, "").partition("=")
            if not (old.startswith("grader.") and new.startswith("grader.")):
                print(f"--move wants OLD=NEW dotted module names, not {old}={new}", file=sys.stderr)
                return 2
            MOVES[old] = new
            BACK[new] = old
            TEXT_MOVES[old] = new
        elif arg not in ("--check", "--old-form"):
            files.append(Path(arg))
    if not files:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    modules = existing_modules()
    changed = []
    for path in files:
        before = path.read_text(encoding="utf-8")
        if KEEP_MARK in before:  # this script and its test name the old modules on purpose
            continue
        after = rewrite(path, modules, old_form)
        if after != before:
            changed.append(path)
            if not check:
                path.write_text(after, encoding="utf-8")
    for path in changed:
        print(("would rewrite " if check else "rewrote ") + str(path))
    return 1 if check and changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
