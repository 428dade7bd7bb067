"""`grade student`: the bundle students get. Public material only, written out fresh.

OUT/<id>/ holds README.md (the task plus how to grade yourself), skeleton.cu, spec.toml (hidden
cases and [hidden_tests] removed, re-serialised so no comment can carry them along), harness.py,
and <id>.ipynb, a Colab notebook. The exercise's tests/ folder and everything under reference/
stay behind. The reference's memory counters (numbers measured on the emulator, never its code)
go in as reference_counters.json, so traffic and bank conflicts are graded locally too; the
performance check, which needs the reference itself, is listed as not run.
"""
from __future__ import annotations

import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import nbformat
from nbformat import v4

from .. import __version__
from .. import exercise as exercise_module
from .. import shipped_counters
from .. import spec as spec_module
from ..errors import SpecError, UsageError
from ..toml_writer import dumps_toml

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

PLACEHOLDER_PIP_SOURCE = f"https://YOUR-COURSE-SITE.example.edu/kernel_grader-{__version__}-py3-none-any.whl"
# On a CUDA 12 machine (Colab) the grader's CUDA 13 wheels are swapped for these.
CUDA12_SWAPS = {"cupy-cuda13x": "cupy-cuda12x>=13.3", "nvidia-cuda-nvrtc": "nvidia-cuda-nvrtc-cu12>=12.2,<13"}


def runtime_requirements() -> list[str]:
    """The grader's own runtime dependencies: from the checkout's pyproject.toml, else the installed metadata."""
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"  # beside grader/
    if pyproject.is_file():
        return list(tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["dependencies"])
    import importlib.metadata

    return [r for r in importlib.metadata.requires("kernel-grader") or [] if "extra ==" not in r]


def cuda12_requirements() -> str:
    """Everything grading needs on a CUDA 12 machine, quoted for the notebook's shell line: the
    grader's dependencies, with CuPy and NVRTC as their CUDA 12 wheels, and no requirement whose
    marker cannot hold on Colab's Python (3.11 or later)."""
    out = []
    for req in runtime_requirements():
        name = re.split(r"[<>=!~;\[\s]", req, maxsplit=1)[0].strip()
        if "python_version < '3.11'" in req.replace('"', "'"):
            continue
        out.append(CUDA12_SWAPS.get(name, req))
    return " ".join(f'"{r}"' for r in out)
PRIVATE_KEYS = ("hidden_tests",)  # top-level spec tables that describe hidden material


@dataclass(frozen=True)
class StudentBundle:
    """A written student bundle."""

    folder: Path
    files: tuple[Path, ...]
    notebook: Path


def build_bundle(exercise_dir: Path, out: Path, *, pip_source: str = PLACEHOLDER_PIP_SOURCE) -> StudentBundle:
    """Write OUT/<id>/ for one kernel exercise; the notebook is validated with nbformat before it is
    written. (`grade student` asks the exercise's kind: Kind.student_bundle; this is the CUDA kind's.)"""
    exercise = exercise_module.load(Path(exercise_dir))
    if not re.fullmatch(r"[^\s\"'`$;&|<>]+", pip_source):  # it goes into a shell line in the notebook
        raise UsageError("--pip-source must be one line: a wheel URL, a git+https URL or a package name")
    for name in ("README.md", "skeleton.cu", "harness.py"):
        if not (exercise.root / name).is_file():
            raise SpecError(f"{exercise.root}: missing {name}; a student bundle needs it")
    ex_id = exercise.id
    folder = Path(out) / ex_id
    if folder.resolve() == exercise.root:
        raise UsageError(f"--out {out}: that would overwrite the exercise itself; choose another folder")
    spec_text = public_spec_text(exercise.root / "spec.toml")
    points = local_points(exercise, spec_text)
    headers = ", ".join(f"`<{h}>`" for h in exercise.spec.limits.allowed_includes) or "none"
    readme = (exercise.root / "README.md").read_text(encoding="utf-8").rstrip() + "\n\n" + \
        GRADING_SECTION.format(id=ex_id, headers=headers, hidden=points.readme_line())
    skeleton = (exercise.root / "skeleton.cu").read_text(encoding="utf-8")
    harness = (exercise.root / "harness.py").read_text(encoding="utf-8")
    counters = shipped_counters.text_for(exercise)  # the reference's counts (numbers, never its code)
    notebook = build_notebook(ex_id, exercise.spec.title, readme, skeleton, spec_text, harness, pip_source, counters,
                              points=points)
    if folder.exists():
        shutil.rmtree(folder)  # a bundle is generated: stale files from an older one must not linger
    folder.mkdir(parents=True)
    written = []
    for name, text in (("README.md", readme), ("skeleton.cu", skeleton), ("spec.toml", spec_text), ("harness.py", harness)):
        (folder / name).write_text(text, encoding="utf-8")
        written.append(folder / name)
    if counters is not None:
        (folder / shipped_counters.FILE_NAME).write_text(counters, encoding="utf-8")
        written.append(folder / shipped_counters.FILE_NAME)
    nb_path = folder / f"{ex_id}.ipynb"
    nbformat.write(notebook, str(nb_path))
    written.append(nb_path)
    return StudentBundle(folder, tuple(written), nb_path)


@dataclass(frozen=True)
class LocalPoints:
    """What a student can earn with the bundle against what the course grades out of: the hidden
    tests' points stay behind with the tests, so the bundle's maximum is lower by exactly those."""

    course: float   # the exercise's maximum, as the final grading counts it
    local: float    # the bundle's maximum (the hidden tests' points left out)

    @property
    def hidden(self) -> float:
        """The points only the final grading can give (its hidden tests)."""
        return self.course - self.local

    def readme_line(self) -> str:
        """The README's bullet on hidden tests: with the two maximums where they differ."""
        if not self.hidden:
            return "- **Hidden tests.** The final grading may run extra tests that are not in this bundle."
        return (f"- **Hidden tests ({self.hidden:g} points).** The final grading runs tests that are not in this "
                f"bundle, worth {self.hidden:g} of its {self.course:g} points. Here you grade out of the "
                f"{self.local:g} points you can check yourself, so the score line reads `/ {self.local:g}`, and "
                f"the course grades out of {self.course:g}: full marks here are {self.local:g} of those {self.course:g}.")

    def notebook_line(self) -> str:
        """The grading cell's comment on the maximum (empty where nothing is left out)."""
        if not self.hidden:
            return ""
        return (f"# Out of {self.local:g} here: the final grading adds hidden tests worth {self.hidden:g} points "
                f"(out of {self.course:g} there).\n")


def local_points(exercise: exercise_module.Exercise, spec_text: str) -> LocalPoints:
    """The course's maximum and the maximum of the bundle's spec (its student copy, `spec_text`)."""
    local = spec_module.from_dict(tomllib.loads(spec_text), source="student copy of spec.toml").max_score
    return LocalPoints(float(exercise.spec.max_score), float(local))


def public_spec(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The spec mapping without hidden cases or hidden tests."""
    public = {k: v for k, v in raw.items() if k not in PRIVATE_KEYS}
    public["cases"] = {k: v for k, v in raw["cases"].items() if k != "hidden"}
    return public


def public_spec_text(path: Path) -> str:
    """spec.toml for students: re-serialised from the parsed file (no comments), checked to load."""
    raw = tomllib.loads(path.read_text(encoding="utf-8"))
    public = public_spec(raw)
    text = ("# The exercise's contract, as the grader reads it (student copy).\n"
            "# The final grading also runs sizes that are not listed here.\n\n" + dumps_toml(public))
    if tomllib.loads(text) != public:  # the writer below is small; prove it round-trips
        raise SpecError(f"{path}: could not write a faithful student copy of the spec")
    spec_module.from_dict(public, source=f"student copy of {path}")
    return text


def build_notebook(ex_id: str, title: str, readme: str, skeleton: str, spec_text: str, harness: str,
                   pip_source: str, counters: str | None = None, points: LocalPoints | None = None) -> nbformat.NotebookNode:
    """A Colab notebook: the task, the install, the exercise files, the kernel, the grading cell."""
    install = f"""# Installs the grader. Your course staff chose where it comes from:
#   a wheel they host ({"https://.../kernel_grader-X.Y.Z-py3-none-any.whl"}), a git+https URL, or a package name.
# Colab's runtime has CUDA 12: CuPy and NVRTC come as their CUDA 12 wheels, then the grader without
# its own CUDA 13 pins (--no-deps). pytest runs the exercise's tests. Takes about a minute.
!pip install -q {cuda12_requirements()}
!pip install -q --no-deps "{pip_source}"
!grade --version"""
    cells = [
        v4.new_markdown_cell(readme),
        v4.new_markdown_cell(
            "## Set up\n\nIn Colab, choose **Runtime > Change runtime type > T4 GPU** first. Without a GPU the "
            "grader still works: it runs your kernel on its CPU emulator, which checks correctness, races, "
            "memory safety and memory traffic exactly, but cannot time it."),
        v4.new_code_cell(install),
        v4.new_markdown_cell(f"The exercise's public files, which the grader reads: `{ex_id}/spec.toml` (the contract) "
                             f"and `{ex_id}/harness.py` (inputs and the float64 reference). Run these cells as they are."),
        v4.new_code_cell(f"!mkdir -p {ex_id}"),
        v4.new_code_cell(f"%%writefile {ex_id}/spec.toml\n" + spec_text.rstrip("\n")),
        v4.new_code_cell(f"%%writefile {ex_id}/harness.py\n" + harness.rstrip("\n")),
        *([v4.new_code_cell(f"%%writefile {ex_id}/{shipped_counters.FILE_NAME}\n" + counters.rstrip("\n"))] if counters else []),
        v4.new_markdown_cell(
            "## Your kernel\n\nEdit the cell below (it is `skeleton.cu`) and run it: `%%writefile` saves it as "
            "`submission.cu`. Then run the grading cell. Repeat until every check passes."),
        v4.new_code_cell("%%writefile submission.cu\n" + skeleton.rstrip("\n")),
        v4.new_code_cell(
            f"# Grades submission.cu: on the GPU when the runtime has one, else on the CPU emulator.\n"
            f"# Each failing check says what went wrong and on which line of submission.cu.\n"
            + (points.notebook_line() if points else "") +
            f"!grade {ex_id} submission.cu"),
        v4.new_markdown_cell(
            "When you are happy with it, submit either `submission.cu` (Files panel on the left) or this notebook "
            "(File > Download > Download .ipynb): the grader reads the kernel from the `%%writefile submission.cu` "
            "cell and never runs the notebook. Keep exactly one such cell. "
            "The final grading runs more sizes than this notebook, and times your kernel against the "
            "course's reference solution."),
    ]
    notebook = v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
        "accelerator": "GPU",
        "colab": {"provenance": [], "gpuType": "T4", "name": f"{ex_id}.ipynb"},
        "kernel_grader": {"exercise": ex_id, "title": title, "version": __version__},
    })
    for i, cell in enumerate(notebook.cells):
        cell["id"] = f"{ex_id}-{i}"  # stable ids: the same exercise gives the same notebook
    nbformat.validate(notebook)
    return notebook


GRADING_SECTION = """## Grading your work

Install the grader (your course staff say from where), then, in this folder's parent:

```sh
grade {id} my_kernel.cu                  # on your GPU if CuPy sees one, else on the CPU emulator
grade {id} my_kernel.cu --backend emu    # force the emulator (no GPU needed)
```

Or open `{id}.ipynb` in Colab and follow it.

What differs from the final grading:

- **Sizes.** `spec.toml` lists the public sizes; the final grading also runs sizes that are not
  listed. Make the kernel right for every size, not just these.
- **Traffic and bank conflicts are graded against numbers.** The reference solution is not in
  this bundle, but its memory counters are (`reference_counters.json`, measured on the emulator):
  your kernel is measured on the emulator too, at the same size, and compared with them. See where
  your traffic goes per line with `grade profile {id} my_kernel.cu --size ...`.
- **Performance is not graded here.** It times your kernel against the reference solution, so the
  grader lists it under "not run" (`extra_data.not_run` in the JSON) instead of scoring it.
{hidden}

How points are counted:

- **A check that cannot run where you grade** (performance without a GPU) is listed as not run,
  and by default its points leave the total: passing everything that does run gives full marks,
  and the score line says so.
- **The same file always gets the same score.** Inputs are drawn from the exercise and your file's
  content, so grading it again gives the same numbers. A kernel with a race (a missing
  `__syncthreads()`, say) earns no correctness points even at sizes where it happened to be
  right, since its results depend on timing.
- **Headers.** You may include what nvcc users include by habit: {headers}. Every other
  `#include` is refused before compiling; the CUDA built-ins need none.
"""


def hidden_material(exercise: exercise_module.Exercise) -> list[str]:
    """What of a kernel exercise's hidden material its student bundle holds (grader.staff.conventions'
    "student bundle" convention): the bundle is built in a scratch folder and all its text read."""
    with tempfile.TemporaryDirectory(prefix="kg-conventions-") as tmp:
        bundle = build_bundle(exercise.root, Path(tmp))
        texts = [p.read_text(encoding="utf-8", errors="replace") for p in bundle.folder.rglob("*") if p.is_file()]
        texts.append("\n".join(cell.source for cell in nbformat.read(str(bundle.notebook), as_version=4).cells))
    return bundle_leaks(exercise, "\n".join(texts))


def wrong_files(exercise: exercise_module.Exercise) -> list[Path]:
    """The exercise's known-bad submissions: reference/<id>/wrong/*.cu (or *.py for a Python exercise)."""
    return sorted((exercise.reference_dir / "wrong").glob(f"*{exercise.suffix}"))


def bundle_leaks(exercise: exercise_module.Exercise, everywhere: str) -> list[str]:
    """What of the exercise's hidden material appears in `everywhere` (all the bundle's text)."""
    spec, folder = exercise.spec, exercise.root
    lines = _lines(everywhere)
    problems = []
    public = list(spec.public_cases) + list(spec.emu_cases)
    public += [s for c in spec.checks.values() for s in (c.size, c.emu_size) if s]
    for case in spec.hidden_cases:
        if case in public:
            continue
        inline = "{ " + ", ".join(f"{k} = {v}" for k, v in case.items()) + " }"
        as_json = "{" + ", ".join(f'"{k}": {v}' for k, v in case.items()) + "}"
        if inline in everywhere or as_json in everywhere:
            problems.append(f"hidden size {dict(case)} is in the student bundle")
            continue
        values = [str(v) for v in case.values()]
        if len(values) == 1:  # in prose: "N = 129", or a list of sizes such as "1, 17, 129, 1000"
            (name, value), = ((k, str(v)) for k, v in case.items())
            if re.search(rf"\b{re.escape(name)}\s*=\s*{value}\b", everywhere):
                problems.append(f"hidden size {name} = {value} is named in the student bundle")
            for listed in re.findall(r"\d+(?:,\s*\d+){2,}", everywhere):
                if value in re.split(r",\s*", listed):
                    problems.append(f"hidden size {name} = {value} is in the list of sizes {listed!r} in the student bundle")
        else:  # "(1003, 4099)" or "1003 x 1025"
            for form in ("(" + ", ".join(values) + ")", " x ".join(values)):
                if form in everywhere:
                    problems.append(f"hidden size {form} is in the student bundle")
    for marker in ("hidden =", "[hidden_tests]"):
        if marker in everywhere:
            problems.append(f"`{marker}` is in the student bundle")
    skeleton = _lines(_read(exercise.skeleton_path))
    for path in [exercise.solution_path, *wrong_files(exercise)]:
        for line in sorted(_lines(_read(path)) - skeleton):
            if line in lines:
                problems.append(f"{path.name}: {line!r} (not in the skeleton) is in the student bundle")
    public_lines = set().union(*(_lines(_read(folder / n)) for n in ("README.md", "skeleton.cu", "harness.py")))
    tests = folder / "tests"
    for path in sorted(tests.glob("**/*")) if tests.is_dir() else []:
        if path.is_file() and path.suffix in (".py", ".toml", ".json", ".txt"):
            for line in sorted(_lines(_read(path)) - public_lines):
                if line in lines:
                    problems.append(f"tests/{path.name}: {line!r} is in the student bundle")
    return problems



def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""


def _lines(text: str) -> set[str]:
    return {line.strip() for line in text.splitlines() if line.strip()}
