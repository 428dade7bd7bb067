"""`grade prairielearn`: a PrairieLearn question for one exercise, the grader image, and the code
PrairieLearn's external grader runs.

What PrairieLearn expects was checked against its own repository (PrairieLearn/PrairieLearn at
88fb855, 2026-08-21):

- docs/externalGrading.md: info.json's `gradingMethod: "External"` and `externalGradingOptions`
  (`image`, `entrypoint`: an absolute path, a file under /grade is made executable before it runs;
  `timeout`: seconds, 30 by default, at most 600); the job's layout: the student's files in
  /grade/student, the question's `tests/` folder in /grade/tests, the course's serverFilesCourse
  files in /grade/serverFilesCourse, /grade/data/data.json; /grade/results is not created for you;
  results.json: `score` in [0, 1], `gradable` (false: "invalid, not gradable", no attempt charged)
  with `format_errors`, `message`, `output`, `images`, `tests[]` with `name`, `description`,
  `points`, `max_points`, `message`, `output` (points shown only when every test has both; a test
  with max_points 0 is shown neutrally); the file is limited to 1 MB.
- apps/prairielearn/src/lib/externalGraderCommon.ts (buildDirectory): the same layout as written,
  student files may sit in sub-folders of /grade/student, the question's tests/ is copied whole.
- apps/prairielearn/src/schemas/infoQuestion.ts: `uuid`, `type: "v3"`, `title`, `topic`, `tags`,
  `singleVariant`, `gradingMethod`, `externalGradingOptions` (`image`, `entrypoint` string or
  array, `timeout` an integer).
- docs/elements/pl-file-editor.md (`file-name`, `ace-mode`, `source-file-name` read from the question
  folder), docs/elements/pl-file-upload.md (`file-names`), and the example questions
  exampleCourse/questions/demo/autograder/codeEditor and codeUpload (question.html with
  pl-question-panel, pl-submission-panel, pl-external-grader-results, pl-file-preview).
- apps/prairielearn/elements/pl-external-grader-results: message and output pass through ansi2html,
  which escapes HTML, so a student's text in them is shown, never run.

`grade prairielearn EXERCISE --out DIR` writes

    DIR/questions/<id>/       copy into the course's questions/ folder
        info.json             External grading: image, entrypoint /grade/tests/run_grader, timeout
        question.html         the task (the exercise README) and a file editor or upload for the kernel
        skeleton.cu           the editor's starting text
        tests/                what PrairieLearn copies to /grade/tests (never shown to students)
            run_grader        the entrypoint; always leaves /grade/results/results.json
            kernel-grader.json, exercises/<id>/, reference/<id>/
    DIR/image/                the grader image: Dockerfile (no GPU: python slim, the emulator grades),
                              Dockerfile.gpu (an nvidia/cuda base), kernel-grader/ (this grader's source)

`python -m grader.staff.prairielearn [CONFIG]` is run_grader's Python half. The root (/grade)
comes from $KERNEL_GRADER_PL_ROOT when set, so tests lay the job out in a temp folder.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from .. import __version__
from .. import exercise as exercise_module
from ..errors import UsageError
from ..submission import printable
from .course_files import CONFIG_NAME, Outcome, config_document, exercise_files, grade_handed_in, read_config, \
    submission_name, write_tree
from .gradescope import grader_source, kind_installs

ROOT_VARIABLE = "KERNEL_GRADER_PL_ROOT"
DEFAULT_ROOT = "/grade"
ENTRYPOINT = "/grade/tests/run_grader"
DEFAULT_IMAGE = "kernel-grader-pl"
MAX_TIMEOUT = 600          # PrairieLearn's ceiling on externalGradingOptions.timeout
RESULTS_LIMIT = 1_000_000  # PrairieLearn's limit on results.json, in bytes
# Kept whole, a test's output is rarely over a few KiB; a flood is cut to this many characters each.
OUTPUT_LIMIT = 20_000
# A fixed namespace for the question's uuid: the same exercise gets the same uuid on every build, so
# a rebuilt question replaces the old one in PrairieLearn instead of appearing beside it.
UUID_NAMESPACE = uuid.UUID("6f1d2a3e-5b7c-4e8f-9a0b-1c2d3e4f5a6b")


@dataclass(frozen=True)
class Question:
    """A written question folder and image folder."""

    question: Path
    image: Path
    exercise: str
    uuid: str
    timeout: int


# ---------------------------------------------------------------------------------------------
# Building the question

def build_question(exercise_dir: Path, out: Path, *, filename: str = "submission.cu", upload: bool = False,
                   timeout: float = 300.0, image: str = DEFAULT_IMAGE, topic: str = "CUDA kernels") -> Question:
    """Write the question folder and the image folder for one exercise under `out`.

    upload: a pl-file-upload instead of the in-browser editor. timeout: seconds one grading may
    take inside the container; PrairieLearn's job timeout is set 30 s above it (at most 600)."""
    exercise = exercise_module.load(Path(exercise_dir))
    filename = submission_name(exercise, filename)
    job_timeout = int(math.ceil(timeout)) + 30
    if job_timeout > MAX_TIMEOUT:
        raise UsageError(f"--timeout {timeout:g}: PrairieLearn stops a grading job after at most {MAX_TIMEOUT} s, and the "
                         f"job needs 30 s beside the grading; use --timeout {MAX_TIMEOUT - 30} or less")
    files = {f"tests/{name}": data for name, data in exercise_files(exercise).items()}
    files[f"tests/{CONFIG_NAME}"] = (json.dumps(config_document(exercise, filename, timeout, "emu"), indent=2) + "\n").encode()
    files["tests/run_grader"] = RUN_GRADER.replace("@FALLBACK@", json.dumps(fallback_results())).encode()
    qid = str(uuid.uuid5(UUID_NAMESPACE, exercise.id))
    info = {"uuid": qid, "title": exercise.spec.title, "topic": topic, "tags": ["kernel-grader", exercise.id],
            "type": "v3", "singleVariant": True, "gradingMethod": "External",
            "externalGradingOptions": {"image": image, "entrypoint": ENTRYPOINT, "timeout": job_timeout}}
    files["info.json"] = (json.dumps(info, indent=2) + "\n").encode()
    readme = exercise.root / "README.md"
    task = readme.read_text(encoding="utf-8") if readme.is_file() else f"# {exercise.spec.title}\n"
    starter = exercise.skeleton_path
    if not upload and starter is not None and starter.is_file():
        files[starter.name] = starter.read_bytes()
    files["question.html"] = question_html(task, filename, upload=upload,
                                           starter=starter.name if (not upload and starter is not None and starter.is_file()) else None).encode()
    out = Path(out)
    question_dir = out / "questions" / exercise.id
    image_dir = out / "image"
    for folder in (question_dir, image_dir):
        if folder.exists():
            shutil.rmtree(folder)  # a rebuild leaves no file of the last one behind
    write_tree(files, question_dir, executable=("tests/run_grader",))
    image_files = dict(grader_source())  # kernel-grader/: pyproject.toml, README.md, grader/
    requires = kind_installs(exercise, "RUN python -m pip install --no-cache-dir")
    image_files["Dockerfile"] = DOCKERFILE.replace("@REQUIRES@\n", requires).encode()
    image_files["Dockerfile.gpu"] = DOCKERFILE_GPU.replace("@REQUIRES@\n", requires).encode()
    write_tree(image_files, image_dir)
    return Question(question_dir, image_dir, exercise.id, qid, job_timeout)


def question_html(task_markdown: str, filename: str, *, upload: bool, starter: str | None) -> str:
    """question.html: the task in a <markdown> block (PrairieLearn escapes <, > and & in it), then
    the editor or the upload, and the external grader's results in the submission panel."""
    ace = "ace/mode/c_cpp" if filename.endswith(".cu") else "ace/mode/python"
    if upload:
        field = f'  <pl-file-upload file-names="{filename}"></pl-file-upload>\n'
    else:
        source = f' source-file-name="{starter}"' if starter else ""
        field = f'  <pl-file-editor file-name="{filename}" ace-mode="{ace}"{source}></pl-file-editor>\n'
    return ("<pl-question-panel>\n<markdown>\n" + task_markdown.rstrip("\n") + "\n</markdown>\n" + field
            + "</pl-question-panel>\n\n<pl-submission-panel>\n  <pl-external-grader-results></pl-external-grader-results>\n"
            "  <pl-file-preview></pl-file-preview>\n</pl-submission-panel>\n")


def fallback_results() -> dict[str, Any]:
    """What run_grader writes if Python itself cannot run (a broken image): not gradable, so no
    attempt is charged."""
    return {"gradable": False, "score": 0.0,
            "message": ("The autograder could not start, so this submission was not graded. This is not a verdict on "
                        "your work and costs no attempt; the course staff can see the error."),
            "format_errors": ["The autograder could not start (course staff: see the grading job's log)."]}


# ---------------------------------------------------------------------------------------------
# Running in PrairieLearn's grading container

def grading_root() -> Path:
    """/grade, or $KERNEL_GRADER_PL_ROOT (tests lay out a job in a temp folder)."""
    return Path(os.environ.get(ROOT_VARIABLE) or DEFAULT_ROOT)


def run_job(config_path: Path, root: Path | None = None) -> dict[str, Any]:
    """Grade root/student as the job's config says and write root/results/results.json; returns it."""
    root = root or grading_root()
    outcome = grade_handed_in(read_config(config_path), root / "student")
    results = to_results(outcome)
    write_results(results, root / "results" / "results.json")
    return results


def to_results(outcome: Outcome) -> dict[str, Any]:
    """PrairieLearn's results.json for one grading.

    No file to grade, or a grader failure: gradable false (PrairieLearn charges no attempt) with the
    reason in format_errors and message. Otherwise the score is the grade's score over its maximum,
    with one test per check (points and max_points as `grade` counts them) and one per check that
    could not run here (max_points 0, shown neutrally, with the reason)."""
    if outcome.graded is None:
        return {"gradable": False, "score": 0.0, "message": outcome.problem, "format_errors": [outcome.problem]}
    status, doc = outcome.graded.status, outcome.graded.document
    extra = doc["extra_data"]
    if status == "grader-error":
        why = ("The grader failed on this submission, so it was not graded. This is not a verdict on your work and "
               "costs no attempt; the course staff can see the error and will look into it.")
        return {"gradable": False, "score": 0.0, "message": why, "format_errors": [why],
                "kernel_grader": _staff_record(doc, status)}
    best = float(extra["max_score"])
    score = round(min(max(float(doc["score"]) / best, 0.0), 1.0), 6) if best > 0 else 0.0
    tests = [{"name": t["name"], "description": (t.get("tags") or [""])[0], "points": float(t["score"]),
              "max_points": float(t["max_score"]), "message": t["status"], "output": _cut(t.get("output", ""))}
             for t in doc["tests"]]
    tests += [{"name": n["name"], "description": n.get("category", ""), "points": 0.0, "max_points": 0.0,
               "message": f"not run: {n['reason']}", "output": ""} for n in extra.get("not_run", ())]
    summary = doc["output"].splitlines()[0] if doc["output"] else f"score: {doc['score']:g} / {best:g}"
    message = f"{outcome.note}\n{summary}" if outcome.note else summary
    results = {"gradable": True, "score": score, "message": message, "output": _cut(doc["output"]), "tests": tests,
               "kernel_grader": _staff_record(doc, status)}
    return _within_limit(results)


def _staff_record(doc: Mapping[str, Any], status: str) -> dict[str, Any]:
    """What staff need to trace a grading (PrairieLearn keeps any extra key of results.json)."""
    extra = doc["extra_data"]
    return {"status": status, "score": doc["score"], "max_score": extra["max_score"], "version": extra.get("grader_version", __version__),
            "backend": extra.get("backend"), "device": extra.get("device"), "exercise": extra.get("exercise"),
            "submission": printable(str(extra.get("submission", ""))), "submission_sha256": extra.get("submission_sha256"),
            "seeds": extra.get("seeds", {})}


def _cut(text: str, limit: int = OUTPUT_LIMIT) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n... ({len(text) - limit:,} more characters cut)"


def _within_limit(results: dict[str, Any]) -> dict[str, Any]:
    """Cut the tests' outputs further while the file would pass PrairieLearn's 1 MB limit."""
    limit = OUTPUT_LIMIT
    while len(json.dumps(results).encode()) > RESULTS_LIMIT - 10_000 and limit > 200:
        limit //= 4
        results["output"] = _cut(results["output"], limit)
        for test in results["tests"]:
            test["output"] = _cut(test["output"], limit)
    return results


def write_results(results: Mapping[str, Any], path: Path) -> None:
    """Write results.json atomically, creating /grade/results (PrairieLearn does not)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _main(argv: list[str]) -> int:
    if len(argv) > 1:
        print("usage: python -m grader.staff.prairielearn [CONFIG]   (run by /grade/tests/run_grader)", file=sys.stderr)
        return 2
    root = grading_root()
    config = Path(argv[0]) if argv else root / "tests" / CONFIG_NAME
    try:
        results = run_job(config, root)
    except Exception as exc:  # the grader is broken: still leave a results.json that charges nothing
        import traceback

        traceback.print_exc()
        results = fallback_results()
        results["message"] = ("The grader failed on this submission, so it was not graded. This is not a verdict on your "
                              f"work and costs no attempt; the course staff can see the error. ({type(exc).__name__})")
        write_results(results, root / "results" / "results.json")
        return 1
    shown = f"{results['score']:g}" if results.get("gradable", True) else "not gradable"
    print(f"graded: {shown}")
    return 0


RUN_GRADER = r"""#!/usr/bin/env bash
# PrairieLearn's external grader runs this (externalGradingOptions.entrypoint) in the grading
# container: it grades /grade/student with the grader installed in the image and always leaves
# /grade/results/results.json, with a fallback if Python itself cannot start.
ROOT="${KERNEL_GRADER_PL_ROOT:-/grade}"
PY="${KERNEL_GRADER_PYTHON:-python3}"
mkdir -p "$ROOT/results"
rm -f "$ROOT/results/results.json"
# The course's files (hidden tests, reference, the seed secret) and the results are the grading user's
# alone: where the kernel gives student code no namespaces or Landlock, a sandbox uid still cannot read them.
chmod -R go-rwx "$ROOT/tests" "$ROOT/serverFilesCourse" "$ROOT/shared" "$ROOT/data" "$ROOT/results" 2>/dev/null || true
export KERNEL_GRADER_PL_ROOT="$ROOT"
cd "$ROOT"
"$PY" -m grader.staff.prairielearn "$ROOT/tests/kernel-grader.json"
status=$?
if [ ! -s "$ROOT/results/results.json" ]; then
  echo "run_grader: the grader exited with status $status and wrote no results.json; writing the fallback" >&2
  cat > "$ROOT/results/results.json" <<'KERNEL_GRADER_FALLBACK'
@FALLBACK@
KERNEL_GRADER_FALLBACK
fi
exit 0
"""

DOCKERFILE = r"""# The PrairieLearn grader image without a GPU: the CPU emulator grades (PrairieLearn's
# graders have no GPU), and the performance check is listed as not run.
#   docker build -t kernel-grader-pl -f Dockerfile .
FROM python:3.12-slim
# bubblewrap and libseccomp2: the jail of student Python code (docs/sandbox.md in the grader's repository).
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap libseccomp2 \
    && rm -rf /var/lib/apt/lists/*
# What the exercise's kind needs beyond the grader's own dependencies (none for CUDA exercises).
@REQUIRES@
COPY kernel-grader /opt/kernel-grader
# The grader with its dependencies (NumPy, CuPy and NVRTC: NVRTC compiles kernels to PTX with no GPU).
RUN python -m pip install --no-cache-dir /opt/kernel-grader
ENV KERNEL_GRADER_BACKEND=emu
"""

DOCKERFILE_GPU = r"""# The grader image for a grading host with an NVIDIA GPU and the NVIDIA container runtime as
# Docker's default runtime (PrairieLearn starts the container itself and passes no --gpus): the GPU
# grades when the container sees one, the emulator otherwise.
#   docker build -t kernel-grader-pl-gpu -f Dockerfile.gpu .
FROM nvidia/cuda:13.0.2-devel-ubuntu24.04
RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-venv bubblewrap libseccomp2 \
    && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
@REQUIRES@
COPY kernel-grader /opt/kernel-grader
RUN python -m pip install --no-cache-dir /opt/kernel-grader
ENV KERNEL_GRADER_BACKEND=auto
"""


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
