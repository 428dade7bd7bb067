"""`grade batch`: grade a whole class, resumably, in parallel, one child process per submission.

Input: a folder of .cu files or Colab notebooks (.ipynb), a folder of per-student folders, or a
zip of either (a Gradescope "export submissions" zip included). Output, in DIR:

    results/<student>.json   the results document of each student (as `grade --json` writes it,
                             plus extra_data.batch: status, input fingerprint, ...)
    grades.csv               rebuilt from results/*.json at the end: header, max points, one row per student
    summary.txt, summary.json  score histogram, most failed checks, identical submissions

Each results file is written atomically as its grading finishes. Re-running the same command
skips every student whose results file exists and whose submission (and exercise) is unchanged,
so an interrupted batch resumes where it stopped; grades.csv only exists for a complete batch.

Where the gradings run is an Executor: LocalExecutor (this machine, the default) or
grader.staff.batch_ray.RayExecutor (a Ray cluster, `--ray`). Both write through record(), so the output
folder, the resume and the gradebook are the same whichever ran them.
"""
from __future__ import annotations

import contextlib
import csv
import fcntl
import hashlib
import io
import json
import os
import queue
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence

from .. import __version__, api
from ..run.parent import math_threads
from .. import exercise as exercise_module
from ..run.parent.device_probe import PRESET_VARIABLE, probe_device
from ..errors import UsageError
from ..exercise import Exercise
from ..checks.counters import ncu_metrics
from ..run.parent.fork_server import VARIABLE as FORK_SERVER_VARIABLE
from ..run.parent.fork_server import ForkServer
from ..run.parent.gpu_worker import TESTS_VARIABLE as GPU_TEST_WORKER_VARIABLE
from ..run.parent.gpu_worker import VARIABLE as GPU_WORKER_VARIABLE
from ..run.parent.gpu_worker import GpuWorker
from ..run.parent.isolated import STATUSES, TAG_VARIABLE, Graded, grade_in_child, kill_tagged
from ..notebook import graded_source
from ..report.page_stream import PageStream, prepare as prepare_pages
from ..run.parent import reaper
from ..run.parent.profile_broker import DEFAULT_LINGER_S, Brokers, start_brokers
from ..results import write_atomic
from ..tools import find_tools
from ..submission import printable
from ..ungraded import ungraded_document

RESULTS = "results"
CSV_NAME = "grades.csv"
MAX_ZIP_BYTES = 512 * 1024**2       # total extracted bytes
MAX_ZIP_MEMBERS = 20_000
SOURCE_SUFFIX = ".cu"
NOTEBOOK_SUFFIX = ".ipynb"   # a Colab notebook: its %%writefile submission.cu cell is graded (grader.notebook)
PYTHON_SUFFIX = ".py"        # a Python exercise's module
SUFFIXES = (SOURCE_SUFFIX, PYTHON_SUFFIX, NOTEBOOK_SUFFIX)


@dataclass(frozen=True)
class Entry:
    """One student's input: the .cu to grade, or why there is none."""

    student: str                  # sanitised, unique within the batch
    origin: str                   # the file or folder name as submitted
    source: Path | None
    problem: str = ""             # set when source is None: no .cu, several .cu
    fingerprint: str = ""         # sha256 of the submission's bytes (of the problem text when there is none)
    submitters: tuple[str, ...] = ()


@dataclass(frozen=True)
class Options:
    """How to run a batch; the CLI fills it, defaults live here."""

    backend: str = "auto"
    workers: int | None = None     # default: the number of usable cores
    per_gpu: int = 8  # gradings sharing one GPU; grader.run.gpu_lock keeps timings exclusive
    timeout: float | None = None   # per submission; default from the exercise's [limits]
    seed: int | None = None
    regrade: bool = False          # ignore existing results
    ray: str | None = None         # grade on a Ray cluster: its address, or "" for ray.init()'s default; None: here
    profile_group: int = 8         # on a GPU, ncu profiles up to this many gradings per run (grader.run.parent.profile_broker); 0: each its own
    fork_server: bool = True       # fork each grading's Python children from a warm process (grader.run.parent.fork_server)


@dataclass(frozen=True)
class Row:
    """One student's line in the gradebook, read back from the results file."""

    student: str
    status: str
    total: float
    scores: Mapping[str, float]
    max_scores: Mapping[str, float]
    max_total: float
    failed: tuple[str, ...]
    submitters: tuple[str, ...] = ()
    not_run: tuple[str, ...] = ()  # checks whose points left the denominator here (the total is scaled)


@dataclass(frozen=True)
class Summary:
    """What a batch found, for the printed and saved summary."""

    students: int
    max_total: float
    by_status: Mapping[str, int]
    histogram: tuple[tuple[str, int], ...]        # (score band, students)
    failing: tuple[tuple[str, int], ...]          # (test name, students failing it), most first
    identical: tuple[tuple[str, tuple[str, ...]], ...]  # (label, students) for each group of 2+
    stale: tuple[str, ...] = ()                   # results files of students not in this input

    def lines(self) -> list[str]:
        out = [f"{self.students} submissions: " + ", ".join(f"{self.by_status.get(s, 0)} {s}" for s in STATUSES)]
        out.append(f"score histogram (of {self.max_total:g} points):")
        widest = max((n for _, n in self.histogram), default=0) or 1
        for band, n in self.histogram:
            out.append(f"  {band:>11}  {'#' * max(round(30 * n / widest), 1 if n else 0):<30} {n}")
        if self.failing:
            out.append("most often failed checks:")
            out += [f"  {n:>4}  {name}" for name, n in self.failing]
        if self.identical:
            out.append("identical submissions (same source once comments and whitespace are removed):")
            out += [f"  {label}: {', '.join(group)}" for label, group in self.identical]
        if self.stale:
            out.append(f"note: {len(self.stale)} results file(s) belong to no submission in this input and were left out: "
                       + ", ".join(self.stale[:10]) + (" ..." if len(self.stale) > 10 else ""))
        return out

    def to_json(self) -> dict[str, Any]:
        return {"students": self.students, "max_total": self.max_total, "by_status": dict(self.by_status),
                "histogram": [{"band": b, "students": n} for b, n in self.histogram],
                "failing": [{"test": t, "students": n} for t, n in self.failing],
                "identical": [{"label": label, "students": list(g)} for label, g in self.identical],
                "stale": list(self.stale)}


@dataclass
class Outcome:
    """What happened to one student in this run (for progress reporting)."""

    student: str
    status: str
    score: float | None
    skipped: bool = False
    seconds: float = 0.0


@dataclass(frozen=True)
class BatchResult:
    """A finished batch: where things are and what they say."""

    out: Path
    csv_path: Path
    summary: Summary
    graded_now: int
    skipped: int
    workers: int
    seconds: float
    slots: tuple[str, ...] = field(default=())


# ---------------------------------------------------------------------------------------------
# Inputs

def collect(submissions: Path, scratch: Path) -> list[Entry]:
    """The students in a folder or zip, sorted by id. A zip is extracted (safely) under scratch."""
    submissions = Path(submissions)
    unpacked: dict[str, list[tuple[str, str]]] = {}  # top-level name -> (member within it, why it was not unpacked)
    if submissions.is_file() and zipfile.is_zipfile(submissions):
        extracted = scratch / "extracted"
        failed = {extracted / member: why for member, why in extract_zip(submissions, extracted).items()}
        root = _descend(extracted, tuple(failed))
        for path, why in failed.items():
            if path.is_relative_to(root) and path != root:
                parts = path.relative_to(root).parts
                unpacked.setdefault(parts[0], []).append(("/".join(parts[1:]), why))  # "": the top-level item itself
    elif submissions.is_dir():
        root = submissions
    else:
        raise UsageError(f"{submissions}: expected a folder of .cu or .ipynb files, a folder of student folders, or a .zip")
    submitters = _gradescope_submitters(root)
    raw: list[tuple[str, Path]] = []
    for item in sorted(root.iterdir(), key=lambda p: p.name):
        if item.name.startswith(".") or item.name == "__MACOSX" or item.is_symlink():
            continue
        if item.is_file() and item.suffix.lower() in SUFFIXES:
            raw.append((item.name[: -len(item.suffix)], item))
        elif item.is_dir():
            raw.append((item.name, item))
    # A submission the zip held (a student's folder, or a .cu) that could not be unpacked still gets
    # its row, saying why.
    seen = {path.name for _, path in raw}
    for name, lost in unpacked.items():
        folder = any(member for member, _ in lost)
        if name not in seen and (folder or Path(name).suffix.lower() in SUFFIXES):
            raw.append((name if folder else Path(name).stem, root / name))
    raw.sort(key=lambda item: item[1].name)
    if not raw:
        raise UsageError(f"{submissions}: no .cu or .ipynb files and no student folders found")
    entries, taken = [], set()
    for name, path in raw:
        student = _unique(sanitize_id(name), taken)
        who = submitters.get(path.name, ())
        lost = unpacked.get(path.name, [])
        if not lost and path.is_file():
            entries.append(Entry(student, path.name, path, fingerprint=_file_hash(path), submitters=who))
            continue
        files = [] if not _is(path.is_dir) else sorted(
            p for p in path.rglob("*") if p.is_file() and not p.is_symlink() and p.suffix.lower() in SUFFIXES
            and not any(part.startswith(".") or part == "__MACOSX" for part in p.relative_to(path).parts))
        # One .cu (or .py) is the submission; without one, one notebook is (a source file beside the
        # notebook it came from wins).
        sources = ([p for p in files if p.suffix.lower() == SOURCE_SUFFIX] or [p for p in files if p.suffix.lower() == PYTHON_SUFFIX]
                   or files)
        if lost and (not sources or any(Path(member or path.name).suffix.lower() in SUFFIXES for member, _ in lost)):
            # Grading what happened to unpack could grade the wrong file, or half a submission.
            listed = "; ".join(f"{printable(member or path.name)} ({why})" for member, why in lost[:5])
            problem = (f"Part of this submission could not be unpacked from the zip: {listed}. "
                       "Submit it again (one .cu file or one .ipynb notebook).")
        elif len(sources) == 1:
            entries.append(Entry(student, path.name, sources[0], fingerprint=_file_hash(sources[0]), submitters=who))
            continue
        elif sources:
            listed = ", ".join(printable(str(p.relative_to(path))) for p in sources[:10])
            kind = {SOURCE_SUFFIX: ".cu files", PYTHON_SUFFIX: ".py files"}.get(sources[0].suffix.lower(), "notebooks")
            problem = (f"{len(sources)} {kind} were submitted ({listed}); submit exactly one .cu file or one notebook "
                       "with your kernel.")
        else:
            others = sorted(printable(str(p.relative_to(path))) for p in path.rglob("*") if p.is_file())
            found = ", ".join(others[:10]) if others else "nothing"
            problem = f"No .cu file or notebook was submitted (found: {found}); submit your kernel as one .cu file or one .ipynb notebook."
        entries.append(Entry(student, path.name, None, problem, hashlib.sha256(problem.encode()).hexdigest(), who))
    return entries


def _is(check: Callable[[], bool]) -> bool:
    """A pathlib check (is_dir) that says False for a name the disk refuses (too long to unpack)."""
    try:
        return check()
    except OSError:
        return False


def sanitize_id(name: str) -> str:
    """A student id safe as a file name and a CSV cell: letters, digits, . _ - only."""
    text = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._-")
    return text[:80] or "student"


def extract_zip(archive: Path, dest: Path, *, max_bytes: int = MAX_ZIP_BYTES, max_members: int = MAX_ZIP_MEMBERS) -> dict[str, str]:
    """Extract a zip refusing absolute paths, `..`, links and anything past the size and count caps.

    A member that cannot be unpacked (a name too long for the disk, a file where a folder of the
    same name is, a damaged or encrypted entry) costs only that member, never the batch: it comes
    back as {member path: why}, and whatever was written of it is removed, so half a file is never
    graded. A zip that cannot be read at all is a usage error.
    """
    dest.mkdir(parents=True, exist_ok=True)
    total = 0
    failed: dict[str, str] = {}
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError) as exc:
        raise UsageError(f"{archive}: not a zip that can be read ({printable(str(exc), 200)})") from None
    with zf:
        members = zf.infolist()
        if len(members) > max_members:
            raise UsageError(f"{archive}: {len(members)} entries; the limit is {max_members}")
        for info in members:
            name = info.filename.replace("\\", "/")
            parts = [p for p in name.split("/") if p not in ("", ".")]
            if name.startswith("/") or ".." in parts or (parts and re.match(r"^[A-Za-z]:", parts[0])):
                raise UsageError(f"{archive}: refusing the entry {info.filename!r} (it points outside the archive)")
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode) or not parts:
                continue  # links could point anywhere, and submissions never need them; "." names nothing to write
            target = dest.joinpath(*parts)
            written = False
            try:
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(target, "wb") as out:
                    written = True
                    while chunk := src.read(1 << 20):
                        total += len(chunk)  # counted as decompressed, not as the header claims
                        if total > max_bytes:
                            raise UsageError(f"{archive}: more than {max_bytes // 1024**2} MiB once extracted; refusing it")
                        out.write(chunk)
            except UsageError:
                raise
            except Exception as exc:  # noqa: BLE001 - zipfile and the disk raise many types; each costs one member
                if written:
                    target.unlink(missing_ok=True)
                failed["/".join(parts)] = _unpack_problem(exc)
    return failed


def _unpack_problem(exc: Exception) -> str:
    """Why a zip member could not be unpacked, in a few words (no grader paths)."""
    if isinstance(exc, (FileExistsError, IsADirectoryError, NotADirectoryError)):
        return "a file and a folder in the zip have the same name"
    if isinstance(exc, RecursionError):  # Path.mkdir makes each missing parent a call deeper
        return "its folders are nested too deeply"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    if isinstance(exc, RuntimeError) and "encrypted" in str(exc):
        return "encrypted"
    if isinstance(exc, NotImplementedError):
        return "compressed in a way the grader cannot read"
    return f"damaged in the zip: {type(exc).__name__}"


def _descend(root: Path, lost: Sequence[Path] = ()) -> Path:
    """Skip wrapper folders (a Gradescope export has assignment_<n>_export/ at the top). A folder
    holding a member that could not be unpacked (`lost`) beside its one subfolder is no wrapper:
    that member was a submission of its own."""
    while True:
        items = [p for p in root.iterdir() if not p.name.startswith(".") and p.name != "__MACOSX"]
        dirs = [p for p in items if p.is_dir()]
        if len(dirs) == 1 and not any(p.suffix.lower() in SUFFIXES for p in items if p.is_file()) \
                and not any(p.is_relative_to(root) and not p.is_relative_to(dirs[0]) for p in lost) \
                and not (root / "submission_metadata.yml").exists():
            root = dirs[0]
            continue
        return root


def _gradescope_submitters(root: Path) -> dict[str, tuple[str, ...]]:
    """submission_<n> -> ("Name <email> sid", ...) from a Gradescope export's submission_metadata.yml."""
    meta = root / "submission_metadata.yml"
    if not meta.is_file():
        return {}
    people: dict[str, list[dict[str, str]]] = {}
    current = None
    for line in meta.read_text(encoding="utf-8", errors="replace").splitlines():
        top = re.match(r"^(\S[^:]*):\s*$", line)
        if top:
            current = top.group(1).strip("'\"")
            people[current] = []
            continue
        # The value is taken whole and stripped after: "(.*?)\s*$" took time quadratic in the blanks
        # inside a value, and the names are the students' own.
        field_ = re.match(r"^\s*(-\s+)?:(name|sid|email):(.*)$", line)
        if current is not None and field_:
            if field_.group(1) or not people[current]:
                people[current].append({})
            people[current][-1][field_.group(2)] = field_.group(3).strip().strip("'\"")
    return {k: tuple(" ".join(x for x in (p.get("name", ""), f"<{p['email']}>" if p.get("email") else "", p.get("sid", "")) if x)
                     for p in v) for k, v in people.items()}


def _unique(student: str, taken: set[str]) -> str:
    candidate, n = student, 2
    while candidate.lower() in taken:
        candidate, n = f"{student}-{n}", n + 1
    taken.add(candidate.lower())
    return candidate


def _file_hash(path: Path) -> str:
    """sha256 of a file's bytes, read a chunk at a time: a huge file in the input costs no memory here
    (its grading refuses it for its size)."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
    except OSError as exc:  # its grading says it cannot be read; the batch goes on
        return hashlib.sha256(f"unreadable: {exc.strerror or exc}".encode()).hexdigest()
    return h.hexdigest()


# ---------------------------------------------------------------------------------------------
# Workers and devices

def visible_gpus() -> list[str]:
    """The GPUs a child may be pinned to, as CUDA_VISIBLE_DEVICES values (respecting the caller's own)."""
    preset = os.environ.get("CUDA_VISIBLE_DEVICES")
    if preset is not None:
        return [d.strip() for d in preset.split(",") if d.strip() and not d.strip().startswith("-")]
    try:
        run = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30)
        found = [line.strip() for line in run.stdout.splitlines() if line.strip().isdigit()]
        if run.returncode == 0 and found:
            return found
    except (OSError, subprocess.SubprocessError):
        pass
    return ["0"]  # CuPy saw a GPU but nvidia-smi cannot count them: use device 0 only


PAGE_STREAM_WAIT = 60.0  # seconds the gradebook waits for pages still being drawn; write_reports draws the rest
PROFILER_LANES_VARIABLE = "KERNEL_GRADER_PROFILER_LANES"  # ncu children in flight per kind of GPU (a diagnostic)
PROFILER_LINGER_VARIABLE = "KERNEL_GRADER_PROFILER_LINGER"  # seconds a request waits for company (a diagnostic)
PROFILER_LOG_VARIABLE = "KERNEL_GRADER_PROFILER_LOG"  # a file for the profilers' ncu runs, as JSON (a diagnostic)
TIMELINE_VARIABLE = "KERNEL_GRADER_BATCH_TIMELINE"  # a file for the batch's own timeline, as JSON (a diagnostic)
SERVER_DEATH_GRACE_S = 1.0  # how long a failed grading waits to see whether its slot's server died with it
GPU_SLOT_THREADS = 4  # BLAS threads a GPU slot gets at least (plan_slots)


def plan_slots(backend: str, workers: int | None, per_gpu: int, gpus: Sequence[str] = (), cores: int | None = None) -> list[dict[str, str]]:
    """One environment per concurrent child: on a GPU, per_gpu children per GPU; else one per core."""
    cores = cores or math_threads.usable_cores()
    if workers is not None and workers < 1:
        raise UsageError("--workers must be at least 1")
    if per_gpu < 1:
        raise UsageError("--per-gpu must be at least 1")
    if backend == "gpu":
        slots = [{"CUDA_VISIBLE_DEVICES": g} for _ in range(per_gpu) for g in gpus]  # round-robin over GPUs
        slots = slots[: workers] if workers else slots
    else:
        slots = [{} for _ in range(min(workers or cores, cores))]
    threads = cores // len(slots)  # the cores shared out among the slots' BLAS
    if backend == "gpu":
        # A GPU slot's processes mostly wait on the GPU (under half the cores were busy in a batch of
        # 100 on one or two H200s), but its float64 references are its longest CPU work: on two GPUs,
        # 32 cores shared by 16 slots gave 2 threads each and the correctness launches took twice as long
        # as with 4 (0.53 s against 1.01 s a grading). A floor, then, where the cores allow it.
        threads = max(threads, min(GPU_SLOT_THREADS, cores))
    for slot in slots:
        slot.update(math_threads.limits(threads))
    return slots


def default_timeout(exercise: Exercise, backend: str) -> float:
    """Per-submission limit: the compile limit (submission and reference) and each run stage, plus a margin."""
    limits = exercise.spec.limits
    stages = 2 if backend == "gpu" else 1
    return 2 * limits.compile_seconds + stages * limits.run_seconds + 60.0


def exercise_key(exercise: Exercise, backend: str) -> str:
    """Changes when anything that decides a grade changes: the exercise's files, the backend, the grader."""
    h = hashlib.sha256(f"{__version__}\0{backend}\0".encode())
    files = sorted(p for p in exercise.root.rglob("*") if p.is_file()
                   and not any(part == "__pycache__" or part.startswith(".") for part in p.relative_to(exercise.root).parts))
    if exercise.solution_path.is_file():
        files.append(exercise.solution_path)
    for p in files:
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


# ---------------------------------------------------------------------------------------------
# The batch

def run_batch(exercise_dir: Path, submissions: Path, out: Path, options: Options = Options(), *,
              on_start: Callable[[int, int], None] | None = None,
              on_done: Callable[[Outcome], None] | None = None, executor: Executor | None = None) -> BatchResult:
    """Grade every submission not already graded; rebuild grades.csv and the summary.

    The gradings run on `executor` (default: from options, local_executor or, with options.ray, ray_executor).

    on_start(to_grade, skipped) is called once before grading; on_done(outcome) as each one ends.
    A KeyboardInterrupt stops the children in flight (their students are graded on the next run).
    """
    started = time.perf_counter()
    # Absolute from here on: the children and the warm servers that fork them run in folders of their
    # own, where a path relative to the caller's folder (`--out grades/level2`) names nothing.
    exercise = exercise_module.load(Path(exercise_dir).absolute())
    out = Path(out).absolute()
    out.mkdir(parents=True, exist_ok=True)
    (out / RESULTS).mkdir(exist_ok=True)
    lock = _lock(out)
    tag_root = "batch-" + hashlib.sha256(str(out.resolve()).encode()).hexdigest()[:16]
    kill_tagged(tag_root + ":", prefix=True)  # leftovers of a killed earlier run on this folder (we hold its lock)
    reaper.watch(tag_root + ":", prefix=True)  # and if this run is killed outright, nothing of it is left
    for stale in out.glob(".scratch-*"):
        shutil.rmtree(stale, ignore_errors=True)
    scratch = Path(tempfile.mkdtemp(prefix=".scratch-", dir=out))
    try:
        entries = collect(Path(submissions).absolute(), scratch)
        if executor is None:
            executor = ray_executor(options) if options.ray is not None else local_executor(options)
        backend = executor.backend
        timeout = float(options.timeout) if options.timeout else default_timeout(exercise, backend)
        if timeout <= 0:
            raise UsageError("--timeout must be positive")
        key = exercise_key(exercise, backend)
        todo, done_before = [], 0
        for entry in entries:
            if not options.regrade and _up_to_date(out, entry, key, timeout):
                done_before += 1
            else:
                todo.append(entry)
        if todo:
            (out / CSV_NAME).unlink(missing_ok=True)  # derived; an unfinished batch must not look finished
        if on_start:
            on_start(len(todo), done_before)
        context = BatchContext(exercise, out, backend, timeout, options.seed, key, scratch, tag_root)
        # The class page is drawn after the last grading; its plotting library (about 0.6 CPU-seconds
        # to import) is imported meanwhile, while this process only waits on its children.
        threading.Thread(target=_import_report_modules, name="import-reports", daemon=True).start()
        pages = PageStream(out, python=exercise.kind == "python")  # each student's page as their result lands
        # ... where a core is left for drawing them: on a GPU the gradings mostly wait for the GPU;
        # on the emulator every core grades, and pages drawn beside the gradings would only slow them:
        # there the writer starts once a slot falls idle, and shares the pages with this process at the end.
        streaming = backend == "gpu" or math_threads.usable_cores() > executor.workers
        by_student = {entry.student: entry for entry in todo} if streaming else {}
        left = [len(todo)]

        def done(outcome: Outcome) -> None:
            if on_done:
                on_done(outcome)
            if not outcome.skipped and outcome.student in by_student:
                pages.submit(by_student[outcome.student])
            left[0] -= 1
            # A slot has fallen idle: the writer's imports take its core now (a class of a few
            # submissions has no tail worth a process of its own).
            if not streaming and left[0] < executor.workers <= len(todo) // 2 and not pages.started:
                pages.warm()

        try:
            executor.grade_all(context, todo, done)
        except BaseException:
            pages.close(timeout=0)
            raise
        context.mark("executor")
        rows, stale = read_rows(out, entries)
        csv_path = write_csv(out / CSV_NAME, rows)
        summary = summarize(rows, entries, exercise, stale)
        _write_text(out / "summary.txt", "\n".join(summary.lines()) + "\n")
        _write_text(out / "summary.json", json.dumps(summary.to_json(), indent=2) + "\n")
        context.mark("gradebook")
        if streaming:
            pages.close(timeout=PAGE_STREAM_WAIT)
        elif pages.started:
            pages.share(todo)
        context.mark("pages")
        _write_html_reports(out, exercise, entries, summary)
        pages.close(timeout=PAGE_STREAM_WAIT, queued=False)  # the page it may be drawing; the rest are written
        context.mark("reports")
        write_timeline(context, started)
        return BatchResult(out, csv_path, summary, len(todo), done_before, executor.workers, time.perf_counter() - started,
                           executor.slots)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        lock.close()


def write_timeline(ctx: "BatchContext", started: float) -> None:
    """The batch's timeline, as JSON, to $KERNEL_GRADER_BATCH_TIMELINE if set (a diagnostic:
    bench/grading_speed.py prints it): [what ended, seconds since the batch started] in order, from
    the last grading's end to the pages. A file that cannot be written costs only the record."""
    _write_diagnostic(TIMELINE_VARIABLE, [[what, round(at - started, 3)] for what, at in ctx.marks])


def _write_diagnostic(variable: str, record: Any) -> None:
    """`record` as JSON to the file the environment variable names, if it names one; a file that
    cannot be written costs only the record."""
    log = os.environ.get(variable, "").strip()
    if log:
        with contextlib.suppress(OSError):
            Path(log).write_text(json.dumps(record) + "\n")


def _import_report_modules() -> None:
    """Import what _write_html_reports will need (an optional plotting library that is missing is
    simply not imported)."""
    try:
        prepare_pages()
    except Exception:  # noqa: BLE001 - only a head start: the pages import (and report) it themselves
        pass


def _write_html_reports(out: Path, exercise: Exercise, entries: Sequence[Entry], summary: Summary) -> None:
    """reports/<student>.html and report.html (grader.report), after the gradebook: written last, so
    a failure there never costs a grade; the submissions are still on disk (a zip's extraction too)."""
    from ..report.class_page import write_reports

    write_reports(out, exercise, entries, summary)


@dataclass(frozen=True)
class BatchContext:
    """What every grading of one batch shares: the exercise, where results go, the limits."""

    exercise: Exercise
    out: Path
    backend: str
    timeout: float
    seed: int | None
    key: str
    scratch: Path
    tag_root: str
    # What ended when (perf_counter seconds), in order: the batch's own timeline after its gradings
    # (closing its slots, stopping its profilers, the gradebook, the pages), for TIMELINE_VARIABLE.
    marks: list[tuple[str, float]] = field(default_factory=list, compare=False)

    def mark(self, what: str) -> None:
        """Note that `what` has just ended."""
        self.marks.append((what, time.perf_counter()))


OnDone = Callable[[Outcome], None]


class Executor(Protocol):
    """Where a batch's gradings run. Each implementation grades the students given to grade_all, each
    in a child process with the batch's time limit, and hands every finished grading to record() as it
    ends (so results files appear one by one and an interrupted batch keeps them)."""

    backend: str               # "gpu" or "emu": what the gradings run on
    workers: int               # gradings at once
    slots: tuple[str, ...]     # what each worker runs on, for the summary line

    def grade_all(self, ctx: BatchContext, todo: Sequence[Entry], on_done: OnDone | None) -> None: ...


def local_executor(options: Options) -> "LocalExecutor":
    """This machine's cores or GPUs: the default executor."""
    backend, _, _ = api.resolve_backend(options.backend)
    gpus = visible_gpus() if backend == "gpu" else []
    slots = plan_slots(backend, options.workers, options.per_gpu, gpus)
    if backend == "gpu":
        # Probe each GPU once here; every child then reads the answer instead of probing again.
        infos = {g: probe_device({"CUDA_VISIBLE_DEVICES": g}) for g in gpus}
        for slot in slots:
            info = infos.get(slot.get("CUDA_VISIBLE_DEVICES", ""))
            if info is not None and info.available:
                slot[PRESET_VARIABLE] = info.to_env()
    if options.profile_group < 0:
        raise UsageError("--profile-group must be 0 (off) or more")
    return LocalExecutor(backend, slots, profile_group=options.profile_group, warm=options.fork_server)


def ray_executor(options: Options) -> Executor:
    """A Ray cluster (grader.staff.batch_ray); a clear usage error when Ray is not installed."""
    try:
        from .batch_ray import RayExecutor
    except ImportError as exc:
        raise UsageError("--ray needs Ray, an optional extra: pip install 'kernel-grader[ray]' "
                         f"(on the driver and on every node of the cluster) ({exc})") from None
    return RayExecutor.connect(options.ray or None, backend=options.backend, per_gpu=options.per_gpu, workers=options.workers)


class LocalExecutor:
    """Child processes on this machine: one slot (an environment) per concurrent grading."""

    def __init__(self, backend: str, slots: Sequence[dict[str, str]], profile_group: int = 0, *, warm: bool = True) -> None:
        self.backend = backend
        self.profile_group = profile_group
        # Fork servers only where fork is safe with NumPy imported (Linux; macOS's Accelerate is not).
        self.warm = warm and sys.platform.startswith("linux")
        self._slots = list(slots)
        self.workers = len(self._slots)
        self.slots = tuple(s.get("CUDA_VISIBLE_DEVICES", "cpu") for s in self._slots)

    def grade_all(self, ctx: BatchContext, todo: Sequence[Entry], on_done: OnDone | None) -> None:
        """A thread per slot takes the next student, grades them in a child, writes their results file."""
        brokers = _profilers(ctx, self._slots, self.profile_group) if self.backend == "gpu" else None
        try:
            self._grade_all(ctx, todo, on_done, brokers)
        finally:
            if brokers is not None:
                # Every grading is over (or interrupted): a group still in flight has nobody to answer.
                brokers.stop(kill=lambda: kill_tagged(_profiler_tag(ctx), prefix=True))
                ctx.mark("profilers stopped")
                write_profiler_log(brokers)

    def _grade_all(self, ctx: BatchContext, todo: Sequence[Entry], on_done: OnDone | None, brokers: Brokers | None) -> None:
        # Each grading asks its GPU's profiler for ncu counts (none: it runs ncu itself).
        envs = [{**slot, **(brokers.env_for(slot.get("CUDA_VISIBLE_DEVICES", "")) if brokers else {})} for slot in self._slots]
        free: queue.Queue[int] = queue.Queue()
        for index in range(len(envs)):
            free.put(index)
        stop = threading.Event()
        # Each slot forks its gradings' Python children from a warm server (grader.run.parent.fork_server):
        # the imports are paid once per slot, not four times per submission.
        servers = [WarmSlot.make(ctx, slot, index) if self.warm and ctx.exercise.kind != "python" else None
                   for index, slot in enumerate(self._slots)]

        def one(entry: Entry) -> Outcome | None:
            if stop.is_set():
                return None
            index = free.get()
            try:
                return _grade_entry(ctx, entry, envs[index], stop, servers[index])
            finally:
                free.put(index)

        pool = ThreadPoolExecutor(max_workers=max(len(self._slots), 1), thread_name_prefix="grade")
        futures: set[Future] = {pool.submit(one, e) for e in todo}
        try:
            while futures:
                finished, futures = wait(futures, timeout=0.5, return_when=FIRST_COMPLETED)
                for f in finished:
                    outcome = f.result()
                    if outcome and on_done:
                        on_done(outcome)
            ctx.mark("last grading")
        except BaseException:
            stop.set()
            for f in futures:
                f.cancel()
            pool.shutdown(wait=False, cancel_futures=True)
            # Kill the children in flight (and any a worker was just starting); they stay ungraded. A cancelled
            # future counts as done here: wait() would wait forever for one no worker will pick up.
            while running := [f for f in futures if not f.done()]:
                kill_tagged(ctx.tag_root + ":", prefix=True)
                wait(running, timeout=0.3)
            raise
        finally:
            _close_slots([server for server in servers if server is not None])
            ctx.mark("slots closed")
        pool.shutdown(wait=True)


def _close_slots(slots: Sequence["WarmSlot"]) -> None:
    """Close every slot at once: each kills its GPU workers, stops its fork server (waiting for it) and
    looks through /proc for anything left of its own; one slot after another, those waits add up."""
    if slots:
        with ThreadPoolExecutor(max_workers=len(slots), thread_name_prefix="close-slot") as pool:
            list(pool.map(lambda slot: slot.close(), slots))


def _profilers(ctx: BatchContext, slots: Sequence[Mapping[str, str]], group: int) -> Brokers | None:
    """The profilers of the slots' GPUs, one per kind of GPU (grader.run.parent.profile_broker), or None: turned off (group 0), no ncu
    here, or nothing in this exercise is measured by ncu."""
    ncu = find_tools().ncu
    if group < 1 or not ncu or ctx.exercise.kind == "python" or not ncu_metrics(ctx.exercise.spec) \
            or not ctx.exercise.solution_path.exists():
        return None
    by_gpu: dict[str, Mapping[str, str]] = {}
    for slot in slots:
        by_gpu.setdefault(slot.get("CUDA_VISIBLE_DEVICES", ""), slot)
    base = {**api.child_env(ctx.scratch), TAG_VARIABLE: _profiler_tag(ctx)}  # killed with the batch's children too
    # A diagnostic ($KERNEL_GRADER_PROFILER_LANES=N): N ncu children in flight for each kind of GPU, dealt
    # round its GPUs, in place of profile_broker.LANES_PER_GPU on each.
    lanes = os.environ.get(PROFILER_LANES_VARIABLE, "").strip()
    # Another ($KERNEL_GRADER_PROFILER_LINGER=S): how long the oldest request waits for others to join it.
    try:
        linger = max(0.0, float(os.environ.get(PROFILER_LINGER_VARIABLE, "")))
    except ValueError:
        linger = DEFAULT_LINGER_S
    return start_brokers(ctx.scratch / "profiler", ncu, by_gpu, group, base, linger=linger,
                         lanes=int(lanes) if lanes.isdigit() and int(lanes) > 0 else None)


def write_profiler_log(brokers: Brokers) -> None:
    """The profilers' record of their ncu runs, as JSON, to $KERNEL_GRADER_PROFILER_LOG if set (a
    diagnostic: bench/grading_speed.py reads it). A file that cannot be written costs only the record."""
    _write_diagnostic(PROFILER_LOG_VARIABLE, brokers.runs())


def _profiler_tag(ctx: BatchContext) -> str:
    """The tag of the profilers' children: under the batch's, and no grading's prefix (no student id is empty)."""
    return f"{ctx.tag_root}::profiler"


class WarmSlot:
    """A slot's fork server (grader.run.parent.fork_server), started at its first grading. A grading that timed
    out or failed in the grader has its server killed with everything it forked and replaced before
    the next one; after any other, whatever the grading left running is killed. A server that died
    during a grading is replaced too, and that grading done again the ordinary way."""

    def __init__(self, ctx: BatchContext, slot: Mapping[str, str], index: int) -> None:
        # Its tag reaches every process it forks (a fork keeps the server's initial environment in
        # /proc), so an interrupted batch's kill_tagged(tag_root + ":") ends them all.
        self.tag = f"{ctx.tag_root}:fork-server-{index}"
        env = {**os.environ, **slot, TAG_VARIABLE: self.tag, "PYTHONHASHSEED": "0"}
        self.server = ForkServer(env, gpu=ctx.backend == "gpu")
        self._failed = False
        # On a GPU slot, two workers that keep their CUDA context for the slot's gradings (the driver
        # makes contexts one at a time for the whole machine; grader.run.parent.gpu_worker): one for
        # the launches, one for the hidden tests, which run beside them.
        self.gpu: dict[str, GpuWorker] = {}
        if ctx.backend == "gpu" and ctx.exercise.kind != "python":
            for variable, name in ((GPU_WORKER_VARIABLE, "launches"), (GPU_TEST_WORKER_VARIABLE, "tests")):
                folder = ctx.scratch / f"gpu-worker-{index}-{name}"
                self.gpu[variable] = GpuWorker(folder, {**api.child_env(folder), **slot, TAG_VARIABLE: self.tag})
        self._gpu_failed: set[str] = set()

    @classmethod
    def make(cls, ctx: BatchContext, slot: Mapping[str, str], index: int) -> "WarmSlot | None":
        """A warm slot, or None where its server's private folder cannot be made (its gradings then
        start their children the ordinary way)."""
        try:
            return cls(ctx, slot, index)
        except OSError:
            return None

    def address(self) -> str | None:
        """The socket children fork through, starting the server if needed; None when it cannot start
        (the gradings then start their children the ordinary way)."""
        if not self.server.running and not self._failed:
            self._failed = not self.server.start()
        return self.server.address if self.server.running else None

    def gpu_workers(self) -> dict[str, str]:
        """The environment that names the slot's warm GPU workers (their folders), starting those not
        running; empty without them (the gradings then use ordinary children)."""
        env = {}
        for variable, worker in self.gpu.items():
            if variable in self._gpu_failed:
                continue
            folder = worker.ensure()
            if folder is None:
                self._gpu_failed.add(variable)  # one that cannot start is not tried again for every grading
            else:
                env[variable] = folder
        return env

    def died_during(self, graded: Graded) -> bool:
        """Whether the server has ended, as it may have during this grading (killed from outside). After
        a grading the grader failed it waits a moment for that death to show: it lands just after the
        death of the children it forked, and read too early the student is left with a grader error."""
        return self.server.ended(SERVER_DEATH_GRACE_S if graded.status == "grader-error" else 0.0)

    def after(self, graded: Graded) -> None:
        """Leave nothing of this grading behind for the next."""
        if graded.status in ("timeout", "grader-error") or not self.server.running:
            self.server.stop()
            kill_tagged(self.tag)  # its forked children, whatever state it was in (the GPU workers too)
            for worker in self.gpu.values():
                worker.stop()
        elif self.server.running:
            self.server.kill_children()

    def close(self) -> None:
        """Stop the server, the GPU workers and everything they started (the batch is over: the workers'
        exits are awaited in the background, GpuWorker.stop)."""
        for worker in self.gpu.values():
            worker.stop(wait=False)
        self.server.close()
        kill_tagged(self.tag)


def _grade_entry(ctx: BatchContext, entry: Entry, slot: Mapping[str, str], stop: threading.Event,
                 warm: WarmSlot | None = None) -> Outcome | None:
    where = {"device": slot.get("CUDA_VISIBLE_DEVICES", "")}
    if entry.source is None:
        return record(ctx, entry, unsubmitted(ctx, entry), where)
    tag = f"{ctx.tag_root}:{entry.student}"
    address = warm.address() if warm is not None else None
    env = {**slot, FORK_SERVER_VARIABLE: address} if address else dict(slot)
    if warm is not None:
        env.update(warm.gpu_workers())
    graded = grade_in_child(ctx.exercise, entry.source, backend=ctx.backend, timeout=ctx.timeout, seed=ctx.seed,
                            env=env, scratch=ctx.scratch, tag=tag)
    if warm is not None:
        died = address is not None and not stop.is_set() and warm.died_during(graded)
        warm.after(graded)
        if died:
            # The server went away during the grading (killed from outside): what it did to the grading's
            # children is the grader's failure, never the student's. Grade it again the ordinary way.
            graded = grade_in_child(ctx.exercise, entry.source, backend=ctx.backend, timeout=ctx.timeout, seed=ctx.seed,
                                    env=slot, scratch=ctx.scratch, tag=tag)
    if stop.is_set():
        return None  # killed by the interrupt, not by its own doing: leave it for the next run
    return record(ctx, entry, graded, where)


def unsubmitted(ctx: BatchContext, entry: Entry) -> Graded:
    """The verdict of a student with no gradable file (none, or several)."""
    return Graded("compile-error", ungraded_document(ctx.exercise, entry.problem, submission=printable(entry.origin)), 0.0)


def record(ctx: BatchContext, entry: Entry, graded: Graded, where: Mapping[str, str] | None = None) -> Outcome:
    """Write one finished grading's results file (atomically), with the batch's own record of it; every
    executor ends each grading here. where says what it ran on (device, and node on a cluster)."""
    document = dict(graded.document)
    extra = dict(document["extra_data"])
    extra["batch"] = {"student": entry.student, "origin": entry.origin, "status": graded.status,
                      "fingerprint": entry.fingerprint, "exercise_key": ctx.key, "timeout_s": ctx.timeout,
                      "submitters": list(entry.submitters), "device": "", **(where or {})}
    document["extra_data"] = extra
    write_atomic(document, ctx.out / RESULTS / f"{entry.student}.json")
    return Outcome(entry.student, graded.status, float(document["score"]), seconds=graded.seconds)


def _up_to_date(out: Path, entry: Entry, key: str, timeout: float) -> bool:
    """Graded before, from the same bytes, by the same exercise and grader, and not worth retrying."""
    if entry.source is None:
        return False  # instant to redo, and its message may have changed
    batch = _batch_info(out / RESULTS / f"{entry.student}.json")
    if not batch or batch.get("fingerprint") != entry.fingerprint or batch.get("exercise_key") != key:
        return False
    if batch.get("status") == "grader-error":
        return False
    if batch.get("status") == "timeout" and float(batch.get("timeout_s", 0)) < timeout:
        return False  # a longer limit this time may let it finish
    return True


def _batch_info(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))["extra_data"]["batch"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _lock(out: Path):
    handle = open(out / ".lock", "w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise UsageError(f"{out}: another `grade batch` is writing to this folder; wait for it or use another --out") from None
    return handle


# ---------------------------------------------------------------------------------------------
# Gradebook and summary

def read_rows(out: Path, entries: Sequence[Entry]) -> tuple[list[Row], tuple[str, ...]]:
    """One row per entry from its results file (a missing or unreadable one is a grader-error row)."""
    rows = []
    for entry in entries:
        path = out / RESULTS / f"{entry.student}.json"
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            status = doc["extra_data"].get("batch", {}).get("status", "graded")
            scores: dict[str, float] = {}
            maxes: dict[str, float] = {}
            for t in doc["tests"]:
                scores[t["name"]] = scores.get(t["name"], 0.0) + float(t["score"])
                maxes[t["name"]] = maxes.get(t["name"], 0.0) + float(t["max_score"])
            # A test only gated off by an earlier failure (not graded at all) is not a failure of its own.
            failed = tuple(t["name"] for t in doc["tests"] if t["status"] == "failed" and not t["extra_data"].get("gated"))
            excluded = tuple(n["name"] for n in doc["extra_data"].get("not_run", [])
                             if n.get("points") and (n.get("grader_fault") or n.get("policy", "exclude") == "exclude"))
            rows.append(Row(entry.student, status, float(doc["score"]), scores, maxes,
                            float(doc["extra_data"]["max_score"]), failed, entry.submitters, excluded))
        except (OSError, ValueError, KeyError, TypeError):
            rows.append(Row(entry.student, "grader-error", 0.0, {}, {}, 0.0, (), entry.submitters))
    known = {f"{e.student}.json" for e in entries}
    stale = tuple(sorted(p.stem for p in (out / RESULTS).glob("*.json") if p.name not in known))
    return rows, stale


def write_csv(path: Path, rows: Sequence[Row]) -> Path:
    """id, total, one column per test, status, submitters, not run; the second line holds the maximum
    points, as in the results JSON. A check that did not run (performance without a GPU) has no
    column of its own: its points left the denominator and the total is scaled to the maximum."""
    tests: list[str] = []
    maxes: dict[str, float] = {}
    for row in rows:
        for name, m in row.max_scores.items():
            if name not in maxes:
                tests.append(name)
            maxes[name] = max(maxes.get(name, 0.0), m)
    max_total = max((r.max_total for r in rows), default=0.0)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["id", "total", *map(_cell, tests), "status", "submitters", "not run (total scaled)"])
    w.writerow(["(max)", _num(max_total), *(_num(maxes[t]) for t in tests), "", "", ""])
    for r in rows:
        # A grader error is no verdict: its total stays empty rather than read as a zero.
        total = "" if r.status == "grader-error" else _num(r.total)
        w.writerow([_cell(r.student), total, *(_num(r.scores[t]) if t in r.scores else "" for t in tests),
                    _cell(r.status), _cell("; ".join(r.submitters)), _cell("; ".join(r.not_run))])
    _write_text(path, buf.getvalue())
    return path


# What a spreadsheet reads as the start of a formula: "=HYPERLINK(...)", "+1", "-1", "@SUM(...)",
# and a tab or carriage return before one of those.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(text: str) -> str:
    """A text cell of the gradebook that a spreadsheet shows as text, never runs as a formula.

    The submitters column holds names from Gradescope's export, which students choose themselves
    ("=HYPERLINK(...)"); with a leading apostrophe (OWASP's advice against CSV injection) Excel,
    LibreOffice and Google Sheets read such a cell as text.
    """
    return "'" + text if text.startswith(_FORMULA_START) else text


def normalized_hash(text: str) -> str:
    """Hash of a C/CUDA source with comments and all whitespace removed (string literals kept)."""
    pattern = r'("(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\')|(/\*.*?\*/|//[^\n]*)'
    stripped = re.sub(pattern, lambda m: m.group(1) or " ", text, flags=re.DOTALL)
    return hashlib.sha256(re.sub(r"\s+", "", stripped).encode()).hexdigest()


def summarize(rows: Sequence[Row], entries: Sequence[Entry], exercise: Exercise, stale: Sequence[str] = ()) -> Summary:
    """Status counts, a 10-band histogram of totals, the most failed tests, groups of identical sources."""
    max_total = max((r.max_total for r in rows), default=exercise.spec.max_score) or exercise.spec.max_score
    bands = [0] * 10
    for r in rows:
        if r.status == "grader-error":
            continue  # not graded: no score to place in a band
        frac = r.total / max_total if max_total else 0.0
        bands[min(int(frac * 10), 9)] += 1
    histogram = tuple((f"{i * max_total / 10:g}-{(i + 1) * max_total / 10:g}" if i < 9 else f"{i * max_total / 10:g}-{max_total:g}", n)
                      for i, n in enumerate(bands))
    failing = Counter(name for r in rows for name in r.failed)
    by_status = Counter(r.status for r in rows)
    known = {}
    for label, path in (("the unmodified skeleton", exercise.skeleton_path), ("the reference solution", exercise.solution_path)):
        text = _text(path)
        if text is not None:
            known[normalized_hash(text)] = label
    groups: dict[str, list[str]] = {}
    for e in entries:
        # What was graded: a notebook's kernel cell, not its JSON (outputs and ids differ copy to copy).
        text = graded_source(e.source, python=exercise.kind == "python")[0] if e.source else None
        if text is None or not re.sub(r"\s+", "", text):
            continue
        groups.setdefault(normalized_hash(text), []).append(e.student)
    identical = []
    for digest, students in groups.items():
        if len(students) >= 2 or digest in known:
            label = f"identical to {known[digest]}" if digest in known else f"group {digest[:8]}"
            identical.append((label, tuple(students)))
    identical.sort(key=lambda g: (-len(g[1]), g[0]))
    return Summary(len(rows), max_total, dict(by_status), histogram, tuple(failing.most_common(8)), tuple(identical), tuple(stale))


def _text(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        data = path.read_bytes()
        return None if b"\0" in data else data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _num(x: float) -> str:
    return f"{x:g}"


def _write_text(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # a gradebook others may read, unlike mkstemp's 0600
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
