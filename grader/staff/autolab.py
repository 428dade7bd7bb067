"""`grade autolab`: Autolab's two autograding files for one exercise, and the driver they run.

What Autolab expects was checked against its own repository (autolab/Autolab at 9cc857f,
2025-04-22) and Tango's (autolab/Tango):

- docs/lab.md ("Writing Autograders", "Installing Autograded Labs"): the lab directory holds
  `autograde-Makefile` and `autograde.tar`; for each submission Autolab copies the handin file and
  both into an empty directory, renames the handin to the lab's base name and the Makefile to
  `Makefile`, runs `make`, and reads the last line of the output, the autoresult
  `{"scores": {"Prob1": 10, ...}, "scoreboard": [...]}`, whose keys must be the lab's problem
  names; by convention an autograder prints it only when given `-A`.
- examples/hello/autograde-Makefile: `tar xvf autograde.tar`, then the driver.
- docs/features/scoreboards.md: the scoreboard array's entries fill the columns of the lab's
  scoreboard colspec (`{"scoreboard": [{"hdr": "Score"}, {"hdr": "Ops", "asc": 1}]}`), and its
  example names the autograded problem `autograded`.
- docs/features/formatted-feedback.md: a line `{"_presentation": "semantic", "stages": [...], ...}`
  just before the autoresult shows each check as passed or failed.
- app/helpers/assessment_autograde_core.rb: the autoresult is `feedback.rstrip.lines.last`, with
  bare words before a colon quoted (so no problem name may hold a colon); a problem name the lab
  does not define is an error; output of 10,000 lines or more is not shown.
- Tango vmms/localDocker.py and vmms/Dockerfile: the job runs `make` through the autodriver as the
  user autograde, stdout and stderr together into the feedback, in an image with users autolab and
  autograde and /usr/bin/autodriver.

`grade autolab EXERCISE --out DIR` writes

    DIR/autograde.tar       kernel-grader/ (this grader's source), exercises/<id>/, reference/<id>/,
                            kernel-grader.json (what to grade, the problem name, the time limit)
    DIR/autograde-Makefile  untars, then `python3 -m grader.staff.autolab kernel-grader.json -A`
    DIR/image/              a Tango image with Python and the grader's dependencies (Dockerfile)
    DIR/README.md           the problem, base name and scoreboard to define in Autolab

The driver (`python -m grader.staff.autolab CONFIG [-A]`, in the directory where make runs) grades
the handin with the same pipeline as `grade`, prints the report, and with -A the semantic feedback
line and the autoresult, last: the total under one problem (the score `grade` gives, performance
not run on the emulator leaving the denominator as it does there) and the scoreboard [total,
speed as a fraction of the reference's (null where the performance check did not run)].
"""
from __future__ import annotations

import io
import json
import re
import shutil
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from .. import exercise as exercise_module
from ..errors import UsageError
from ..submission import printable
from .course_files import CONFIG_NAME, Outcome, config_document, exercise_files, grade_handed_in, read_config, \
    submission_name, write_tree
from .gradescope import grader_source, kind_installs

TAR_NAME = "autograde.tar"
MAKEFILE_NAME = "autograde-Makefile"
DEFAULT_PROBLEM = "autograded"
# Autolab quotes every run of letters and digits before a colon in the autoresult, and problem names
# are typed into its web form: a plain name keeps the autoresult parseable.
_PROBLEM = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}$")


@dataclass(frozen=True)
class Lab:
    """The written autograding files."""

    tarball: Path
    makefile: Path
    image: Path
    readme: Path
    exercise: str
    handin: str
    problem: str
    members: tuple[str, ...]


# ---------------------------------------------------------------------------------------------
# Building the files

def build_lab(exercise_dir: Path, out: Path, *, handin: str = "submission.cu", timeout: float = 300.0,
              problem: str = DEFAULT_PROBLEM) -> Lab:
    """Write autograde.tar, autograde-Makefile, the image folder and a README under `out`."""
    exercise = exercise_module.load(Path(exercise_dir))
    handin = submission_name(exercise, handin)
    if not _PROBLEM.match(problem):
        raise UsageError(f"--problem {problem!r}: use letters, digits, spaces, '_', '.' or '-' (no colon), as the "
                         "problem is named in Autolab")
    config = config_document(exercise, handin, timeout, "emu")
    config["problem"] = problem
    files = dict(exercise_files(exercise))
    files.update(grader_source())
    files[CONFIG_NAME] = (json.dumps(config, indent=2) + "\n").encode()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tarball = out / TAR_NAME
    tarball.write_bytes(_tar(files))
    makefile = out / MAKEFILE_NAME
    makefile.write_text(MAKEFILE, encoding="utf-8")
    image = out / "image"
    if image.exists():
        shutil.rmtree(image)
    image_files = dict(grader_source())
    image_files["Dockerfile"] = DOCKERFILE.replace(
        "@REQUIRES@\n", kind_installs(exercise, "RUN python -m pip install --no-cache-dir")).encode()
    write_tree(image_files, image)
    readme = out / "README.md"
    readme.write_text(README.format(id=exercise.id, title=exercise.spec.title, handin=handin, problem=problem,
                                    points=f"{exercise.spec.max_score:g}", timeout=f"{timeout:g}"), encoding="utf-8")
    return Lab(tarball, makefile, image, readme, exercise.id, handin, problem, tuple(sorted(files)))


def _tar(files: Mapping[str, bytes]) -> bytes:
    """A reproducible tar (fixed times and owners) of relative path -> bytes."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in sorted(files.items()):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 1577836800  # 2020-01-01
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


# ---------------------------------------------------------------------------------------------
# Running under Autolab

def autoresult(outcome: Outcome, problem: str) -> dict[str, Any] | None:
    """The autoresult for one grading, or None for a grader failure (then none is printed, so Autolab
    flags the grading as failed for staff instead of recording a score the student did not earn)."""
    if outcome.graded is None:
        return {"scores": {problem: 0.0}, "scoreboard": [0.0, None]}
    if outcome.graded.status == "grader-error":
        return None
    doc = outcome.graded.document
    total = float(doc["score"])
    speed = None
    for test in doc["tests"]:
        ratio = test.get("extra_data", {}).get("fraction_of_reference")
        if (test.get("tags") or [""])[0] == "performance" and isinstance(ratio, (int, float)):
            speed = float(ratio)  # measured by the performance check on a GPU, never made up here
    return {"scores": {problem: total}, "scoreboard": [total, speed]}


def feedback(outcome: Outcome) -> list[str]:
    """The report students read above the autoresult: the score line, then each check."""
    if outcome.graded is None:
        return [f"Not graded: {outcome.problem}"]
    status, doc = outcome.graded.status, outcome.graded.document
    if status == "grader-error":
        return ["The grader failed on this submission, so it was not graded. This is not a verdict on your work: "
                "the course staff can see that autograding failed and will regrade it."]
    lines = [f"Note: {outcome.note}"] if outcome.note else []
    lines += doc["output"].splitlines()
    for test in doc["tests"]:
        lines.append("")
        lines.append(f"{test['status'].upper():6} {test['name']}: {float(test['score']):g} / {float(test['max_score']):g}")
        lines += ["    " + line for line in test.get("output", "").splitlines()[:200]]
    return lines


def semantic_line(outcome: Outcome) -> dict[str, Any] | None:
    """Autolab's formatted feedback: one stage, each check passed or not (None without a grading)."""
    if outcome.graded is None or outcome.graded.status == "grader-error":
        return None
    checks = {t["name"]: {"passed": t["status"] == "passed"} for t in outcome.graded.document["tests"]}
    return {"_presentation": "semantic", "stages": ["Checks"], "Checks": checks}


def run(config_path: Path, folder: Path, *, emit: bool) -> tuple[Outcome, list[str]]:
    """Grade the handin in `folder` and return the outcome and the lines to print (the autoresult
    last when emit, as `-A` asks)."""
    config = read_config(config_path)
    problem = json.loads(Path(config_path).read_text(encoding="utf-8")).get("problem", DEFAULT_PROBLEM)
    # Only the handin counts: the grader's own files sit beside it in the same folder.
    handin = folder / config.filename
    outcome = grade_handed_in(config, _handin_folder(handin, folder))
    lines = [printable(line, limit=None) for line in feedback(outcome)]
    if emit:
        semantic = semantic_line(outcome)
        result = autoresult(outcome, problem)
        if semantic is not None and result is not None:
            lines.append(json.dumps(semantic))
        if result is not None:
            lines.append(json.dumps(result))
    return outcome, lines


def _handin_folder(handin: Path, folder: Path) -> Path:
    """A folder holding only the handin (a link to it), so the grader's files beside it are never
    taken for the student's; an empty one when there is no handin."""
    only = folder / ".kernel-grader-handin"
    shutil.rmtree(only, ignore_errors=True)
    only.mkdir()
    if handin.is_file() and not handin.is_symlink():
        shutil.copyfile(handin, only / handin.name)
    return only


def _main(argv: list[str]) -> int:
    emit = "-A" in argv
    args = [a for a in argv if a != "-A"]
    if len(args) != 1:
        print("usage: python -m grader.staff.autolab CONFIG [-A]   (run by the autograde-Makefile, in the handin's folder)",
              file=sys.stderr)
        return 2
    try:
        _, lines = run(Path(args[0]), Path.cwd(), emit=emit)
    except Exception as exc:  # the grader is broken: say so, and print no autoresult (staff regrade)
        import traceback

        traceback.print_exc(file=sys.stdout)
        print(f"The grader failed ({type(exc).__name__}), so this submission was not graded. This is not a verdict on "
              "your work: the course staff can see that autograding failed and will regrade it.")
        return 0
    print("\n".join(lines), flush=True)
    return 0


MAKEFILE = """\
# Autolab copies this file (as Makefile), autograde.tar and the student's handin into an empty
# folder and runs `make`; the last line printed is the autoresult. PYTHON: a Python with the
# grader's dependencies (the image in image/ has them).
PYTHON ?= python3

all:
\t@tar xf autograde.tar
\t@PYTHONPATH="$$PWD/kernel-grader" $(PYTHON) -m grader.staff.autolab kernel-grader.json -A

clean:
\trm -rf kernel-grader exercises reference kernel-grader.json .kernel-grader-handin
"""

DOCKERFILE = r"""# A Tango autograding image (Tango's vmms/Dockerfile: users autolab and autograde, the
# autodriver) with Python 3.12 and the grader's dependencies. The CPU emulator grades.
#   docker build -t kernel-grader-autolab .
# then name kernel-grader-autolab as the lab's autograding image in Autolab.
FROM python:3.12-slim
RUN apt-get update && apt-get install -y --no-install-recommends build-essential make sudo git \
    bubblewrap libseccomp2 && rm -rf /var/lib/apt/lists/*
WORKDIR /home
RUN useradd autolab && useradd autograde && mkdir autolab autograde output \
    && chown autolab:autolab autolab output && chown autograde:autograde autograde
RUN git clone --depth 1 https://github.com/autolab/Tango.git && make -C Tango/autodriver clean \
    && make -C Tango/autodriver && cp Tango/autodriver/autodriver /usr/bin/autodriver \
    && chmod +s /usr/bin/autodriver && rm -rf Tango
# What the exercise's kind needs beyond the grader's own dependencies (none for CUDA exercises).
@REQUIRES@
COPY kernel-grader /opt/kernel-grader
# The grader and its dependencies; the Makefile runs the copy in autograde.tar with them.
RUN python -m pip install --no-cache-dir /opt/kernel-grader
"""

README = """# Autolab autograder: {id} ({title})

Built by `grade autolab`. In Autolab (Edit Assessment):

1. **Problems**: define one problem named `{problem}` worth {points} points.
2. **Handin**: the base name students submit is `{handin}`.
3. **Autograder**: upload `autograde.tar` and `autograde-Makefile`; the image is one with Python
   3.10 or later and the grader's dependencies: build `image/` (`docker build -t kernel-grader-autolab image`)
   on the Tango host and name `kernel-grader-autolab`. Allow a timeout above {timeout} s (one grading's limit).
4. **Scoreboard** (optional): `{{"scoreboard": [{{"hdr": "Score"}}, {{"hdr": "Speed vs reference"}}]}}`. The
   speed is the performance check's fraction of the reference's speed, null where it did not run
   (the emulator does not time).

The autoresult is the last line of the output: `{{"scores": {{"{problem}": <total>}}, "scoreboard": [<total>, <speed>]}}`,
the total being the score `grade` gives the same file. When the grader itself fails, no autoresult is printed, so
Autolab marks the autograding as failed instead of recording a score: regrade those submissions.

`autograde.tar` holds the hidden tests and the reference solution: keep it where students cannot read it.

Test it offline, as Autolab runs it:

    mkdir /tmp/lab && cp autograde.tar /tmp/lab && cp autograde-Makefile /tmp/lab/Makefile
    cp my_kernel.cu /tmp/lab/{handin} && cd /tmp/lab && make
"""


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
