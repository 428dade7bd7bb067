"""`grade gradescope`: a Gradescope autograder zip for one exercise, and the code it runs there.

The zip (see build_bundle) unpacks to /autograder/source:

    setup.sh          installs Python and this grader (from kernel-grader/) into /autograder/venv
    run_autograder    grades /autograder/submission/*.cu or *.ipynb; always writes /autograder/results/results.json
    README.md         for course staff: what runs, what does not (no GPU there)
    bundle.json       what run_autograder grades: exercise folder, expected file name, time limit
    kernel-grader/    the grader's source (pyproject.toml, grader/)
    exercises/<id>/   the exercise, hidden cases and hidden tests included
    reference/<id>/solution.cu   the reference solution (traffic is graded against it)

`python -m grader.staff.gradescope BUNDLE_JSON` is run_autograder's Python half. The root (`/autograder`)
comes from $KERNEL_GRADER_AUTOGRADER_ROOT when set, so tests can lay out a tree in a temp folder.

Its last 100 lines are the text it writes into the zip (setup.sh, run_autograder), kept beside the
code that fills them in; the zip's README.md is the exercise kind's (Kind.gradescope_readme).
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import __version__
from .. import exercise as exercise_module
from ..errors import UsageError
from ..kinds.registry import kind_of
from ..run.parent.isolated import grade_in_child
from ..results import validate, write_atomic
from ..submission import printable
from ..ungraded import ungraded_document

ROOT_VARIABLE = "KERNEL_GRADER_AUTOGRADER_ROOT"
SECRET_VARIABLE = "KERNEL_GRADER_SECRET"  # the course's seed secret (grader.api.derive_seed)
PYTHON_VARIABLE = "KERNEL_GRADER_PYTHON"
DEFAULT_ROOT = "/autograder"
GRADER_DIR = "kernel-grader"
DEFAULT_FILENAME = "submission.cu"  # --filename's default, which the exercise's kind may change


@dataclass(frozen=True)
class Bundle:
    """A written autograder zip."""

    path: Path
    exercise: str
    members: tuple[str, ...]
    size: int


@dataclass(frozen=True)
class Choice:
    """Which submitted file to grade (or why none), and a note for the student."""

    source: Path | None
    note: str = ""
    problem: str = ""


# ---------------------------------------------------------------------------------------------
# Building the zip

def build_bundle(exercise_dir: Path, out: Path, *, filename: str = DEFAULT_FILENAME, timeout: float = 480.0) -> Bundle:
    """Write the autograder zip for one exercise; validates the exercise and the reference first."""
    exercise = exercise_module.load(Path(exercise_dir))
    traits = kind_of(exercise).traits
    if filename.endswith(".cu") and not filename.endswith(traits.suffix):
        filename = traits.default_filename  # the .cu default, for an exercise whose submissions are not .cu
    if not filename.endswith((".cu", ".py", ".ipynb")) or "/" in filename or filename.startswith("."):
        raise UsageError(f"--filename {filename!r}: expected a plain file name ending in .cu, .py or .ipynb")
    if not exercise.solution_path.is_file():
        raise UsageError(f"{exercise.solution_path}: missing; the bundle needs the reference solution "
                         "(the traffic check compares with it)")
    files: dict[str, bytes] = {}
    ex_id = exercise.id
    for path in sorted(exercise.root.rglob("*")):
        parts = path.relative_to(exercise.root).parts
        if path.is_file() and not any(part == "__pycache__" or part.startswith(".") for part in parts):
            files[f"exercises/{ex_id}/{path.relative_to(exercise.root).as_posix()}"] = path.read_bytes()
    files[f"reference/{ex_id}/{exercise.solution_path.name}"] = exercise.solution_path.read_bytes()
    files.update(grader_source())
    config = {"exercise": f"exercises/{ex_id}", "filename": filename, "timeout": float(timeout), "backend": "emu"}
    secret = os.environ.get(SECRET_VARIABLE)
    if secret:  # the course's seed secret travels with the bundle (which holds the hidden tests anyway)
        config["secret"] = secret
    files["bundle.json"] = (json.dumps(config, indent=2) + "\n").encode()
    files["setup.sh"] = SETUP_SH.replace("@ID@", ex_id).replace(
        "@REQUIRES@\n", kind_installs(exercise, '"$ROOT/venv/bin/python" -m pip install')).encode()
    files["run_autograder"] = RUN_AUTOGRADER.replace("@FALLBACK@", json.dumps(fallback_document(ex_id), indent=1)).encode()
    template = kind_of(exercise).gradescope_readme
    files["README.md"] = template.format(id=ex_id, title=exercise.spec.title, filename=filename, timeout=timeout,
                                         version=__version__).encode()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    os.close(fd)
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for name, data in sorted(files.items()):
                info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))  # reproducible bytes
                executable = name in ("setup.sh", "run_autograder")
                info.external_attr = (0o100755 if executable else 0o100644) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Bundle(out, ex_id, tuple(sorted(files)), out.stat().st_size)


def grader_source() -> dict[str, bytes]:
    """The grader package plus a pyproject.toml, under kernel-grader/ (pip-installable)."""
    package = Path(__file__).resolve().parents[1]  # grader/, this file being grader/staff/gradescope.py
    files = {}
    for path in sorted(package.rglob("*")):
        # Code, schemas and the headers submissions may include (grader/include: names without a suffix).
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo"):
            files[f"{GRADER_DIR}/grader/{path.relative_to(package).as_posix()}"] = path.read_bytes()
    checkout = package.parent
    if (checkout / "pyproject.toml").is_file():
        files[f"{GRADER_DIR}/pyproject.toml"] = (checkout / "pyproject.toml").read_bytes()
        readme = checkout / "README.md"
        files[f"{GRADER_DIR}/README.md"] = readme.read_bytes() if readme.is_file() else b"# kernel-grader\n"
    else:  # an installed grader, not a checkout: describe the project from its metadata
        try:
            requires = [r for r in importlib.metadata.requires("kernel-grader") or [] if "extra ==" not in r]
        except importlib.metadata.PackageNotFoundError:
            requires = ["click>=8.1", "numpy>=1.26", "jsonschema>=4.18", "nbformat>=5.9", "cupy-cuda13x>=13.3",
                        "nvidia-cuda-nvrtc>=13.0,<14"]
        deps = ",\n".join(f"    {json.dumps(r)}" for r in requires)
        files[f"{GRADER_DIR}/pyproject.toml"] = (
            '[build-system]\nrequires = ["setuptools>=68"]\nbuild-backend = "setuptools.build_meta"\n\n'
            f'[project]\nname = "kernel-grader"\nversion = "{__version__}"\nrequires-python = ">=3.10"\n'
            f"dependencies = [\n{deps}\n]\n\n[project.scripts]\ngrade = \"grader.cli:main\"\n\n"
            '[tool.setuptools.packages.find]\ninclude = ["grader*"]\n\n'
            '[tool.setuptools.package-data]\ngrader = ["schemas/*.json", "include/*"]\n').encode()
        files[f"{GRADER_DIR}/README.md"] = b"# kernel-grader\n"
    return files


def kind_installs(exercise: exercise_module.Exercise, pip: str) -> str:
    """The lines an image's build runs, before the grader's own install, for what the exercise's kind
    needs beyond the base install (KindTraits.requires): `pip` followed by each requirement."""
    return "".join(f"{pip} {requirement}\n" for requirement in kind_of(exercise).traits.requires)


def fallback_document(exercise_id: str) -> dict[str, Any]:
    """The results.json run_autograder writes if Python itself cannot run (a broken image)."""
    doc = {
        "score": 0.0, "execution_time": 0.0,
        "output": ("The autograder could not start, so this submission was not graded. This is not a verdict on "
                   "your work: the course staff have been told and will regrade it."),
        "output_format": "md", "visibility": "visible", "stdout_visibility": "hidden", "tests": [],
        "extra_data": {"max_score": 0.0, "grader_version": __version__, "backend": "none", "device": "none",
                       "exercise": exercise_id, "submission_sha256": None, "seeds": {}, "not_run": []},
    }
    validate(doc)
    return doc


# ---------------------------------------------------------------------------------------------
# Running on Gradescope

def autograder_root() -> Path:
    """/autograder, or $KERNEL_GRADER_AUTOGRADER_ROOT (tests lay out a tree in a temp folder)."""
    return Path(os.environ.get(ROOT_VARIABLE) or DEFAULT_ROOT)


def choose_submission(folder: Path, filename: str) -> Choice:
    """The file to grade among the student's: the expected name, else the only .cu, else the only
    notebook (.ipynb, whose `%%writefile submission.cu` cell is graded), else none.

    Only files inside the submission folder count. A submission may hold links (a zip or a GitHub
    repository keeps them); one that leads out of the folder could name the reference solution,
    the hidden tests or bundle.json (the course secret), whose lines a compile error would quote
    back, so it is never graded and the student is told so.
    """
    if not folder.is_dir():
        return Choice(None, problem=f"No submission folder was found; submit one file named {filename}.")
    inside = folder.resolve()
    files, outside = [], []
    for p in sorted(folder.rglob("*")):
        if p.name.startswith(".") or "__MACOSX" in p.parts or any(part.startswith(".") for part in p.relative_to(folder).parts):
            continue
        if not _within(p, inside):  # a link out, or a file reached through one
            outside.append(p)
        elif p.is_file():
            files.append(p)
    suffix = ".py" if filename.endswith(".py") else ".cu"  # a Python exercise's submissions are .py
    sources = [p for p in files if p.suffix.lower() == suffix]
    notebooks = [p for p in files if p.suffix.lower() == ".ipynb"]
    shown = ", ".join(_shown(p, folder) for p in files[:10]) or "no files"
    links = ""
    if outside:
        links = (f" Links to files outside your submission are not graded ({', '.join(_shown(p, folder) for p in outside[:10])}): "
                 "submit the file itself.")
    exact = [p for p in files if p.name == filename]
    if len(exact) == 1:
        others = [_shown(p, folder, whole=False) for p in sources + notebooks if p != exact[0]]
        note = f"Graded {filename}; the other files ({', '.join(others)}) were ignored." if others else ""
        return Choice(exact[0], note=(note + links).strip())
    if len(sources) == 1:
        return Choice(sources[0], note=f"Expected a file named {filename}; graded {_shown(sources[0], folder, whole=False)}, "
                                       f"the only {suffix} file submitted. Please name it {filename} next time.{links}")
    if not sources and len(notebooks) == 1:
        # a notebook may have any name (Colab adds "Copy of", downloads add " (1)")
        return Choice(notebooks[0], note=links.strip())
    if not sources and not notebooks:
        what = "kernel" if suffix == ".cu" else "functions"
        return Choice(None, problem=f"No {suffix} file or notebook was submitted (found: {shown}). Submit your {what} as "
                                    f"one file named {filename}, or the Colab notebook (.ipynb) that holds it.{links}")
    many = sources or notebooks
    kind = f"{suffix} files" if sources else "notebooks"
    return Choice(None, problem=f"{len(many)} {kind} were submitted ({shown}) and none is named {filename}. "
                                f"Submit exactly one file, named {filename}, or one notebook.{links}")


def _within(path: Path, inside: Path) -> bool:
    """Whether `path`, its links followed, lies within the (resolved) submission folder."""
    try:
        return path.resolve().is_relative_to(inside)
    except (OSError, RuntimeError):  # a loop of links, or one the grader may not follow
        return False


def _shown(path: Path, folder: Path, *, whole: bool = True) -> str:
    """A submitted file's name (its path in the submission when whole) as the results may show it:
    printable, on one line, so a name cannot add lines of its own to the student's report."""
    return printable(str(path.relative_to(folder)) if whole else path.name)


def run_autograder(config_path: Path, root: Path | None = None) -> dict[str, Any]:
    """Grade the submission under root/submission and write root/results/results.json; returns the document."""
    root = root or autograder_root()
    results = root / "results" / "results.json"
    config = json.loads(Path(config_path).read_text(encoding="utf-8"))
    exercise = exercise_module.load(Path(config_path).parent / config["exercise"])
    filename = config.get("filename", "submission.cu")
    if config.get("secret"):
        os.environ[SECRET_VARIABLE] = config["secret"]
    choice = choose_submission(root / "submission", filename)
    if choice.source is None:
        document = ungraded_document(exercise, choice.problem)
    else:
        graded = grade_in_child(exercise, choice.source, backend=config.get("backend", "emu"),
                                timeout=float(config.get("timeout", 480.0)), tag="gradescope")
        document = dict(graded.document)
        if choice.note:
            document["output"] = f"**Note:** {choice.note}\n\n{document['output']}"
        document["extra_data"] = {**document["extra_data"], "gradescope": {"status": graded.status, "graded_file": printable(choice.source.name)}}
    write_atomic(document, results)
    return document


def smoke_test(config_path: Path) -> tuple[bool, str]:
    """Grade the bundle's reference solution as run_autograder grades a submission: (full marks?, what
    it got). setup.sh runs it when Gradescope builds the image, so a broken image fails to build
    instead of costing every student points."""
    config = json.loads(Path(config_path).read_text(encoding="utf-8"))
    exercise = exercise_module.load(Path(config_path).parent / config["exercise"])
    if config.get("secret"):
        os.environ[SECRET_VARIABLE] = config["secret"]
    graded = grade_in_child(exercise, exercise.solution_path, backend=config.get("backend", "emu"),
                            timeout=float(config.get("timeout", 480.0)), tag="gradescope-smoke")
    doc = graded.document
    score, best = float(doc["score"]), float(doc["extra_data"]["max_score"])
    failed = [f"{t['name']}: {t['output'].splitlines()[0] if t['output'] else t['status']}" for t in doc["tests"]
              if t["status"] != "passed"]
    faults = [f"{n['name']} not run: {n['reason']}" for n in doc["extra_data"].get("not_run", []) if n.get("grader_fault")]
    ok = graded.status == "graded" and score == best and not failed and not faults
    text = f"smoke test: the reference solution scores {score:g} / {best:g} ({graded.status})"
    if not ok:
        text += "".join(f"\n  {line}" for line in failed + faults)
    return ok, text


def _main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "--smoke-test":
        ok, text = smoke_test(Path(argv[1]))
        print(text, file=sys.stdout if ok else sys.stderr)
        return 0 if ok else 1
    if len(argv) != 1:
        print("usage: python -m grader.staff.gradescope BUNDLE_JSON   (run by run_autograder on Gradescope)\n"
              "       python -m grader.staff.gradescope --smoke-test BUNDLE_JSON   (run by setup.sh)", file=sys.stderr)
        return 2
    root = autograder_root()
    try:
        document = run_autograder(Path(argv[0]), root)
    except Exception as exc:  # the grader is broken: still give Gradescope a results.json that says so
        print(f"grader failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        import traceback

        traceback.print_exc()
        try:
            config = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
            ex_id = Path(config["exercise"]).name
        except Exception:  # noqa: BLE001 - last-resort path
            ex_id = "unknown"
        document = fallback_document(ex_id)
        document["output"] = ("The grader failed on this submission, so it was not graded. This is not a verdict on your "
                              f"work; the course staff can see the error and will regrade it. ({type(exc).__name__})")
        write_atomic(document, root / "results" / "results.json")
        return 1
    print(f"graded: {document['score']:g} / {document['extra_data']['max_score']:g}")
    return 0


SETUP_SH = r"""#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder image (Ubuntu 22.04 base image).
# It installs Python and this grader, with its dependencies, into $ROOT/venv.
set -euo pipefail
ROOT="${KERNEL_GRADER_AUTOGRADER_ROOT:-/autograder}"
SOURCE="$ROOT/source"
export DEBIAN_FRONTEND=noninteractive
apt-get update
# bubblewrap and libseccomp2: the jail of student Python (docs/sandbox.md in the grader's repository).
apt-get install -y --no-install-recommends python3 python3-pip python3-venv bubblewrap libseccomp2
python3 -m venv "$ROOT/venv"
"$ROOT/venv/bin/python" -m pip install --upgrade pip
# What the exercise's kind needs beyond the grader's own dependencies (none for CUDA exercises).
@REQUIRES@
# The grader from the bundled source: click, numpy, jsonschema, nbformat, CuPy and NVRTC come with it.
# CuPy's NVRTC compiles kernels to PTX without a GPU; the emulator runs the PTX.
"$ROOT/venv/bin/python" -m pip install "$SOURCE/kernel-grader"
# pytest comes with it too: it runs the exercise's hidden tests.
# A smoke test at build time: the reference solution must get full marks, graded as run_autograder
# grades a submission; otherwise the image fails to build (a broken image fails here, not on students).
"$ROOT/venv/bin/python" -m grader.staff.gradescope --smoke-test "$SOURCE/bundle.json"
"""

RUN_AUTOGRADER = r"""#!/usr/bin/env bash
# Gradescope runs this once per submission. It grades /autograder/submission/*.cu (or a Colab
# notebook, *.ipynb, whose %%writefile submission.cu cell holds the kernel) on the CPU
# emulator (Gradescope has no GPU) and writes /autograder/results/results.json. It never exits
# without writing results.json: if Python cannot even start, it writes a fallback that says so.
ROOT="${KERNEL_GRADER_AUTOGRADER_ROOT:-/autograder}"
SOURCE="$ROOT/source"
PY="${KERNEL_GRADER_PYTHON:-$ROOT/venv/bin/python}"
[ -x "$PY" ] || PY=python3
mkdir -p "$ROOT/results"
rm -f "$ROOT/results/results.json"
# The course's files (hidden tests, reference, bundle.json's secret) and the results are root's alone:
# where the kernel gives student code no namespaces or Landlock, a sandbox uid still cannot read them.
chmod -R go-rwx "$SOURCE" "$ROOT/results" 2>/dev/null || true
export KERNEL_GRADER_AUTOGRADER_ROOT="$ROOT"
# The bundled grader source comes first, so the code that runs is the code in this zip.
export PYTHONPATH="$SOURCE/kernel-grader${PYTHONPATH:+:$PYTHONPATH}"
cd "$ROOT"
"$PY" -m grader.staff.gradescope "$SOURCE/bundle.json"
status=$?
if [ ! -s "$ROOT/results/results.json" ]; then
  echo "run_autograder: the grader exited with status $status and wrote no results.json; writing the fallback" >&2
  cat > "$ROOT/results/results.json" <<'KERNEL_GRADER_FALLBACK'
@FALLBACK@
KERNEL_GRADER_FALLBACK
fi
exit 0
"""


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
