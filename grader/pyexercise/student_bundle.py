"""`grade student` for a Python exercise: the public files and a Colab notebook, nothing hidden.

OUT/<id>/ holds README.md, skeleton.py, checks.py, the exercise's public modules, spec.toml
(without [hidden_tests]) and <id>.ipynb: the task text, a cell per public file, then for each
function its part of the task, a code cell with its skeleton (the TODOs) and a check cell that runs
its public checks. The hidden tests and everything under reference/ stay behind.
"""
from __future__ import annotations

import ast
import re
import shutil
import sys
from pathlib import Path

import nbformat
from nbformat import v4

from .. import __version__
from ..errors import SpecError, UsageError
from ..exercise import Exercise
from ..toml_writer import dumps_toml

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

GRADING_SECTION = """## Grading your work

Each function has a check cell in `{id}.ipynb`: run it after the function's cell. The checks are
the public ones; the final grading runs more inputs (hidden tests), including awkward ones.

Submit the notebook itself (in Colab: File > Download > Download .ipynb). The grader reads the
definitions (`def`, `class`, `import`, assignments) from its code cells and never runs anything
else: calls, `!` shell commands and `%%` cells are ignored. Or submit a `.py` file with the
functions, and grade it yourself with `grade {id} my_functions.py`.
"""


def build_bundle(exercise: Exercise, out: Path) -> tuple[Path, tuple[Path, ...], Path]:
    """Write OUT/<id>/ for a Python exercise; returns (folder, files, notebook)."""
    spec = exercise.spec
    for name in ("README.md", "skeleton.py", "checks.py") + spec.public_modules:
        if not (exercise.root / name).is_file():
            raise SpecError(f"{exercise.root}: missing {name}; a student bundle needs it")
    folder = Path(out) / exercise.id
    if folder.resolve() == exercise.root:
        raise UsageError(f"--out {out}: that would overwrite the exercise itself; choose another folder")
    readme = (exercise.root / "README.md").read_text(encoding="utf-8").rstrip() + "\n\n" + GRADING_SECTION.format(id=exercise.id)
    texts = {"README.md": readme, "spec.toml": public_spec_text(exercise.root / "spec.toml")}
    for name in ("skeleton.py", "checks.py") + spec.public_modules:
        texts[name] = (exercise.root / name).read_text(encoding="utf-8")
    notebook = build_notebook(exercise, readme, texts)
    return write_bundle(folder, texts, notebook, exercise.id)


def write_bundle(folder: Path, texts: dict[str, str], notebook: nbformat.NotebookNode,
                 exercise_id: str) -> tuple[Path, tuple[Path, ...], Path]:
    """Write a Python-source bundle afresh: its files, then its notebook (<id>.ipynb); what was written."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    written = []
    for name, text in texts.items():
        (folder / name).write_text(text, encoding="utf-8")
        written.append(folder / name)
    nb_path = folder / f"{exercise_id}.ipynb"
    nbformat.write(notebook, str(nb_path))
    written.append(nb_path)
    return folder, tuple(written), nb_path


def public_spec_text(path: Path) -> str:
    """spec.toml without [hidden_tests], re-serialised (no comments), checked to load."""
    from . import spec as pyspec

    raw = tomllib.loads(path.read_text(encoding="utf-8"))
    public = {k: v for k, v in raw.items() if k != "hidden_tests"}
    text = "# The exercise's contract, as the grader reads it (student copy).\n\n" + dumps_toml(public)
    if tomllib.loads(text) != public:
        raise SpecError(f"{path}: could not write a faithful student copy of the spec")
    pyspec.from_dict(public, source=f"student copy of {path}")
    return text


def skeleton_parts(text: str, names: tuple[str, ...]) -> tuple[str, dict[str, str]]:
    """(the skeleton's lines before its first function, each required function's source)."""
    tree = ast.parse(text)
    lines = text.split("\n")
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    missing = [n for n in names if n not in functions]
    if missing:
        raise SpecError(f"skeleton.py: no function {', '.join(missing)}")
    first = min(min([n.lineno] + [d.lineno for d in n.decorator_list]) for n in functions.values())
    prelude = "\n".join(lines[:first - 1]).strip("\n")
    parts = {}
    for name in names:
        node = functions[name]
        start = min([node.lineno] + [d.lineno for d in node.decorator_list])
        parts[name] = "\n".join(lines[start - 1:node.end_lineno])
    return prelude, parts


def task_sections(readme: str, names: tuple[str, ...]) -> tuple[str, dict[str, str]]:
    """(the README before its first `## ` section, the section that first names each function)."""
    chunks = re.split(r"(?m)^(?=## )", readme)
    intro, sections = chunks[0].strip(), [c.strip() for c in chunks[1:]]
    found: dict[str, str] = {}
    for name in names:
        for section in sections:
            heading = section.split("\n", 1)[0]
            if re.search(rf"\b{re.escape(name)}\b", heading):
                found[name] = section if section not in found.values() else f"### `{name}`\n\n(See the task above.)"
                break
        else:
            found[name] = f"### `{name}`"
    return intro, found


def build_notebook(exercise: Exercise, readme: str, texts: dict[str, str]) -> nbformat.NotebookNode:
    """The Colab notebook: task, public files, then per function its task, its TODO cell and its check cell."""
    spec = exercise.spec
    names = spec.names
    intro, sections = task_sections(readme.split("\n## Grading your work", 1)[0], names)
    prelude, parts = skeleton_parts(texts["skeleton.py"], names)
    cells = [
        v4.new_markdown_cell(intro),
        v4.new_markdown_cell("## Set up\n\nRun these cells once: NumPy, and the exercise's public files "
                             f"({', '.join(f'`{n}`' for n in spec.public_modules + ('checks.py',))}), which the "
                             "functions and the check cells use. Do not edit them."),
        v4.new_code_cell("!pip install -q numpy"),
    ]
    for name in spec.public_modules + ("checks.py",):
        cells.append(v4.new_code_cell(f"%%writefile {name}\n" + texts[name].rstrip("\n")))
    cells.append(v4.new_code_cell(prelude + "\n\nfrom checks import run_checks"))
    for name in names:
        cells.append(v4.new_markdown_cell(sections[name]))
        cells.append(v4.new_code_cell(parts[name]))
        cells.append(v4.new_code_cell(f"run_checks({name!r}, {name})"))
    cells.append(v4.new_markdown_cell(
        "## Hand in\n\nWhen every check passes, download this notebook (File > Download > Download .ipynb) and submit "
        "it. The grader reads your function cells; it never runs the notebook. The final grading runs more inputs "
        "than these checks."))
    notebook = v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
        "colab": {"provenance": [], "name": f"{exercise.id}.ipynb"},
        "kernel_grader": {"exercise": exercise.id, "title": spec.title, "version": __version__},
    })
    for i, cell in enumerate(notebook.cells):
        cell["id"] = f"{exercise.id}-{i}"
    nbformat.validate(notebook)
    return notebook


def hidden_material_in(text: str, exercise: Exercise) -> list[str]:
    """Lines of the hidden tests or the reference solution (and its wrong files) found in `text`
    that are in none of the exercise's public files: what a student bundle must never hold."""
    public = "\n".join((exercise.root / n).read_text(encoding="utf-8") for n in
                       ("README.md", "skeleton.py", "checks.py") + exercise.spec.public_modules)
    public_lines = {line.strip() for line in public.splitlines()}
    secret_files = sorted((exercise.root / "tests").glob("*.py"))
    secret_files += [exercise.solution_path] + sorted((exercise.reference_dir / "wrong").glob("*.py"))
    found = []
    for path in secret_files:
        if not path.is_file():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            line = line.strip()
            if len(line) >= 24 and line not in public_lines and line in text:
                found.append(f"{path.name}: {line[:80]}")
    return found


def filled_in(notebook: nbformat.NotebookNode, skeleton: str, solution: str, names: tuple[str, ...]) -> nbformat.NotebookNode:
    """The notebook as a student who wrote `solution` would hand it in: each function's TODO cell
    replaced by that function's source in `solution`, nothing else touched."""
    _, todo = skeleton_parts(skeleton, names)
    _, done = skeleton_parts(solution, names)
    filled = nbformat.from_dict(notebook)
    for cell in filled.cells:
        for name in names:
            if cell.cell_type == "code" and cell.source == todo[name]:
                cell.source = done[name]
    return filled
