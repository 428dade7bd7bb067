"""`grade student` for a Triton exercise: the public files and a Colab notebook, nothing hidden.

OUT/<id>/ holds README.md (the task and how to grade yourself), skeleton.py (the kernel and launcher
with their TODOs), harness.py (inputs and the float64 reference), checks.py (runs the launcher at
the public sizes and compares with the reference), spec.toml without the hidden sizes, and <id>.ipynb:
the task, a set-up cell (Triton's interpreter when the runtime has no GPU), the skeleton's cell and a
check cell. The hidden sizes and everything under reference/ stay behind.
"""
from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path

import nbformat
from nbformat import v4

from .. import __version__
from ..errors import SpecError, UsageError
from ..exercise import Exercise
from ..toml_writer import dumps_toml
from ..pyexercise.student_bundle import write_bundle
from . import spec as tritonspec

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

PRIVATE_KEYS = ("hidden_cases",)

GRADING_SECTION = """## Grading your work

`{id}.ipynb` runs on Colab as it is (torch and Triton are preinstalled there): on a GPU runtime
your kernel runs on the GPU, on a CPU runtime under Triton's interpreter. Its check cell runs your
launcher at the public sizes and compares with the float64 reference (`checks.py`, `harness.py`).
The final grading runs more sizes (hidden ones, awkward ones included), fills every output and the
memory around every tensor with NaN, and watches each `tl.load` and `tl.store`: a lane outside its
tensor, a misaligned pointer and the memory traffic of each line are graded too.

Submit your `.py` file with the kernel and the launcher, or the notebook itself (in Colab: File >
Download > Download .ipynb): the grader reads the definitions (`def`, `@triton.jit`, `import`,
assignments) from its code cells and never runs anything else. With the grader installed
(`pip install 'kernel-grader[triton]'`), grade yourself with `grade {id} my_kernel.py`.
"""

CHECKS_PY = '''"""Runs a launcher at the public sizes and compares with harness.py's float64 reference.

    from checks import check; check(my_launcher)

On a machine without a GPU set TRITON_INTERPRET=1 before importing triton (the notebook's set-up cell
does). This is a quick check, not the grading: the grader also watches every load and store."""
import numpy as np
import torch

import harness

PARAMS = @PARAMS@
CASES = @CASES@
RTOL, ATOL = @RTOL@, @ATOL@
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def _dim(d, sizes):
    return sizes[d] if isinstance(d, str) else d


def check(launcher):
    """Call `launcher` at every public size; print and return whether each output is right."""
    rng = np.random.default_rng(0)
    all_ok = True
    for sizes in CASES:
        inputs = harness.make_inputs(dict(sizes), rng)
        want = harness.reference({k: np.array(v) for k, v in inputs.items()}, dict(sizes))
        args, outs = [], {}
        for name, role, dtype, shape, value in PARAMS:
            if role == "in":
                args.append(torch.tensor(np.ascontiguousarray(inputs[name]), device=DEVICE).to(getattr(torch, dtype)))
            elif role == "out":
                fill = float("nan") if dtype.startswith(("float", "bfloat")) else -1
                outs[name] = torch.full([_dim(d, sizes) for d in shape], fill, dtype=getattr(torch, dtype), device=DEVICE)
                args.append(outs[name])
            else:
                v = _dim(value, sizes)
                args.append(int(v) if role == "int" else float(v))
        launcher(*args)
        for name, out in outs.items():
            got = out.double().cpu().numpy().ravel()
            exp = np.asarray(want[name], dtype=np.float64).ravel()
            bad = ~np.isclose(got, exp, rtol=RTOL, atol=ATOL)
            all_ok &= not bad.any()
            where = f", first at [{int(np.nonzero(bad)[0][0])}]" if bad.any() else ""
            print(f"{sizes}: {name} {'ok' if not bad.any() else f'WRONG at {int(bad.sum())} elements' + where}")
    return all_ok
'''

SETUP_CELL = """import os
import torch

# Without a GPU, Triton's interpreter runs the kernel on the CPU: it must be chosen before triton is imported.
if not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"
"""


def public_spec_text(path: Path) -> str:
    """spec.toml without its hidden sizes, re-serialised (no comments), checked to load."""
    raw = tomllib.loads(path.read_text(encoding="utf-8"))
    public = {k: v for k, v in raw.items() if k not in PRIVATE_KEYS}
    text = "# The exercise's contract, as the grader reads it (student copy).\n\n" + dumps_toml(public)
    if tomllib.loads(text) != public:
        raise SpecError(f"{path}: could not write a faithful student copy of the spec")
    tritonspec.from_dict(public, source=f"student copy of {path}")
    return text


def checks_text(exercise: Exercise) -> str:
    """checks.py: the public cases, the launcher's parameters and the tolerance, filled in."""
    spec = exercise.spec
    params = [(p.name, p.role, p.dtype, list(p.shape), p.value) for p in spec.params]  # type: ignore[union-attr]
    return (CHECKS_PY.replace("@PARAMS@", repr(params))
            .replace("@CASES@", json.dumps([dict(c) for c in spec.public_cases]))
            .replace("@RTOL@", repr(spec.rtol)).replace("@ATOL@", repr(spec.atol)))  # type: ignore[union-attr]


def build_bundle(exercise: Exercise, out: Path) -> tuple[Path, tuple[Path, ...], Path]:
    """Write OUT/<id>/ for a Triton exercise; returns (folder, files, notebook)."""
    for name in ("README.md", "skeleton.py", "harness.py"):
        if not (exercise.root / name).is_file():
            raise SpecError(f"{exercise.root}: missing {name}; a student bundle needs it")
    folder = Path(out) / exercise.id
    if folder.resolve() == exercise.root:
        raise UsageError(f"--out {out}: that would overwrite the exercise itself; choose another folder")
    readme = (exercise.root / "README.md").read_text(encoding="utf-8").rstrip() + "\n\n" + GRADING_SECTION.format(id=exercise.id)
    texts = {"README.md": readme, "spec.toml": public_spec_text(exercise.root / "spec.toml"),
             "skeleton.py": (exercise.root / "skeleton.py").read_text(encoding="utf-8"),
             "harness.py": (exercise.root / "harness.py").read_text(encoding="utf-8"),
             "checks.py": checks_text(exercise)}
    notebook = build_notebook(exercise, readme, texts)
    return write_bundle(folder, texts, notebook, exercise.id)


def build_notebook(exercise: Exercise, readme: str, texts: dict[str, str]) -> nbformat.NotebookNode:
    """The Colab notebook: the task, set-up (interpreter or GPU, the public files), the skeleton, the check."""
    spec = exercise.spec
    task = readme.split("\n## Grading your work", 1)[0].strip()
    cells = [
        v4.new_markdown_cell(task),
        v4.new_markdown_cell("## Set up\n\nRun these cells once. Colab has torch and Triton; on a CPU runtime the "
                             "first cell picks Triton's interpreter (restart the runtime if you imported triton "
                             "before running it). The next cells write `harness.py` and `checks.py`: do not edit them."),
        v4.new_code_cell(SETUP_CELL.rstrip("\n")),
        v4.new_code_cell("%%writefile harness.py\n" + texts["harness.py"].rstrip("\n")),
        v4.new_code_cell("%%writefile checks.py\n" + texts["checks.py"].rstrip("\n")),
        v4.new_markdown_cell(f"## Your kernel and launcher\n\nFill in the TODOs. The grader calls "
                             f"`{spec.signature}` with torch tensors.".replace("def ", "", 1)),  # type: ignore[union-attr]
        v4.new_code_cell(texts["skeleton.py"].rstrip("\n")),
        v4.new_code_cell(f"%run checks.py\ncheck({spec.launcher})"),  # type: ignore[union-attr]
        v4.new_markdown_cell(
            "## Hand in\n\nWhen the check passes, download this notebook (File > Download > Download .ipynb) and submit "
            "it, or submit your kernel and launcher as a `.py` file. The grader reads your definitions; it never runs "
            "the notebook's other cells."),
    ]
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


def hidden_material(exercise: Exercise) -> list[str]:
    """What of the hidden material a freshly built bundle holds: a hidden-only size, a line of the
    solution or of a wrong file that the skeleton lacks."""
    with tempfile.TemporaryDirectory(prefix="kg-triton-bundle-") as tmp:
        folder, files, notebook = build_bundle(exercise, Path(tmp))
        texts = [p.read_text(encoding="utf-8", errors="replace") for p in files if p != notebook]
        texts.append("\n".join(c.source for c in nbformat.read(str(notebook), as_version=4).cells))
    return leaks(exercise, "\n".join(texts))


def leaks(exercise: Exercise, everywhere: str) -> list[str]:
    """The hidden material found in `everywhere` (all of a bundle's text)."""
    spec = exercise.spec
    problems = []
    public = list(spec.public_cases) + ([spec.traffic_size] if spec.traffic_size else [])  # type: ignore[union-attr]
    for case in spec.hidden_cases:
        if case in public:
            continue
        as_json = json.dumps(dict(case))
        inline = "{" + ", ".join(f"{k} = {v}" for k, v in case.items()) + "}"
        if as_json in everywhere or inline in everywhere:
            problems.append(f"hidden size {dict(case)} is in the student bundle")
        for name, value in case.items():
            if re.search(rf"\b{re.escape(name)}\s*=\s*{value}\b", everywhere) and all(c.get(name) != value for c in public):
                problems.append(f"hidden size {name} = {value} is named in the student bundle")
    if "hidden_cases" in everywhere:
        problems.append("`hidden_cases` is in the student bundle")
    lines = _lines(everywhere)
    skeleton = _lines(_read(exercise.skeleton_path))
    for path in [exercise.solution_path, *sorted((exercise.reference_dir / "wrong").glob("*.py"))]:
        for line in sorted(_lines(_read(path)) - skeleton):
            # Comments and imports say nothing of the solution (the bundle's own checks import torch).
            if line in lines and not line.startswith(("#", "import ", "from ")):
                problems.append(f"{path.name}: {line!r} (not in the skeleton) is in the student bundle")
    return list(dict.fromkeys(problems))


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""


def _lines(text: str) -> set[str]:
    return {line.strip() for line in text.splitlines() if line.strip()}
