"""The hostile corpus (tests/hostile/): broken and malicious level2 submissions, graded on the
emulator and, where one is visible, on a GPU (the `gpu` variants skip themselves without one).

For every case: a schema-valid results JSON within the time limit, the expected category failed
with a message the student can act on, nothing of the reference solution or the hidden tests in
any output, and a grade that printed output cannot change. The corpus is graded once per session
and backend (two gradings at a time on the emulator, four on a GPU; each grading already runs its
work in child processes), against one copy of the exercise whose limits are lowered so bombs and
endless loops end quickly. Only what the session collected is graded: the cases `-k` picked, on
the backends `-m` picked and a GPU (if wanted) is there for.

Set KERNEL_GRADER_HOSTILE_DUMP to a file name to get every grading's verdicts as JSON, rewritten as
each grading ends: one GPU run then shows what to fix, even where assertions fail or the run is
stopped early.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import pytest

from grader import api, results
from grader.grading.output import student_text
from grader.spec import tomllib

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "hostile"
REFERENCE = ROOT / "reference" / "level2" / "solution.cu"
EXPECTED = tomllib.loads((CORPUS / "expected.toml").read_text(encoding="utf-8"))
SEED = 1
MARGIN_SECONDS = 15.0  # child start-up, the kill grace period and a loaded CI machine
# Lower than level2's own limits so the bombs and endless loops of the corpus end in seconds;
# the reference still needs under 1,000 steps per launch and 1 s to compile.
# compile_seconds: 10, not 5: on the H200 host, with four gradings and the compile bombs running at
# once, an ordinary compile once took longer than 5 s.
LIMITS = {"compile_seconds": 10, "run_seconds": 60, "step_limit": 20_000}
# Submission names that are hostile to a shell, a CLI parser or a report: graded through the CLI.
HOSTILE_NAMES = ["my kernel.cu", "it's \"quoted\".cu", "..hidden.cu", "-x.cu", "--json.cu", "ядро μ.cu", "new\nline.cu"]
DUMP_VARIABLE = "KERNEL_GRADER_HOSTILE_DUMP"
DUMP_CHARS = 400  # of each output in the dump: enough to fix an expectation, small enough to read
VERDICT_KEYS = ("category", "status", "words", "either")  # what a case's [gpu] table replaces
# What grader/backends/emu.py says of a kernel it cannot run: the emulator's limit, so on a GPU
# (which runs the kernel) never the reason a test fails.
EMULATOR_CANNOT = "the emulator cannot run this kernel"


@dataclass(frozen=True)
class BackendRun:
    """How the corpus is graded on one backend."""

    workers: int  # gradings at a time
    margin: float  # seconds a grading may take beyond 2 x compile_seconds + run_seconds
    batch_timeout: float  # seconds for `grade batch` over the whole corpus


RUNS = {
    "emu": BackendRun(workers=2, margin=MARGIN_SECONDS, batch_timeout=900),
    # On a GPU the sanitizers, ncu, the hidden tests and the timing run beside the launches, each
    # within its own run_seconds, but each is another CUDA start-up (seconds), and four gradings
    # share the GPU and its machine's 16 cores.
    "gpu": BackendRun(workers=4, margin=MARGIN_SECONDS + 30, batch_timeout=1200),
}
BACKENDS = [pytest.param("emu", id="emu"), pytest.param("gpu", id="gpu", marks=pytest.mark.gpu)]

pytestmark = pytest.mark.slow


def expectation(case: str, backend: str) -> dict[str, Any]:
    """What grading `case` must produce on `backend`: the case's table, whose [gpu] table (if any)
    replaces category, status, words and either on the GPU."""
    own = {k: v for k, v in EXPECTED[case].items() if k != "gpu"}
    override = EXPECTED[case].get("gpu")
    if backend != "gpu" or not override:
        return own
    return {k: v for k, v in own.items() if k not in VERDICT_KEYS} | override


@dataclass
class Graded:
    """One grading of a corpus file (or the reference solution), through the API or the CLI."""

    name: str
    seconds: float
    backend: str = "emu"
    doc: dict | None = None  # the results JSON
    stdout: str = ""
    stderr: str = ""
    error: str = ""  # the grader itself failed (an exception, a non-zero exit)


class Dump:
    """Every grading's verdicts, in the JSON file $KERNEL_GRADER_HOSTILE_DUMP names (if set).

    The file is rewritten as each grading ends, not when the tests judge it, so a failed
    assertion, an early stop or a killed run still leaves every verdict reached so far.
    """

    def __init__(self, path: str | None):
        self.path = Path(path) if path else None
        self.entries: dict[str, dict[str, Any]] = {}
        self.lock = threading.Lock()  # gradings end in worker threads

    def record(self, key: str, entry: Mapping[str, Any]) -> None:
        """Add (or replace) one entry and rewrite the file atomically."""
        if self.path is None:
            return
        with self.lock:
            self.entries[key] = dict(entry)
            data = {"limits": LIMITS, "seed": SEED, "gradings": dict(sorted(self.entries.items()))}
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f".{self.path.name}.tmp")
            tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
            os.replace(tmp, self.path)


DUMP = Dump(os.environ.get(DUMP_VARIABLE))


def verdicts(graded: Graded, want: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One grading, compactly: how long it took, the grader's own error, and each test's verdict."""
    entry: dict[str, Any] = {"backend": graded.backend, "seconds": round(graded.seconds, 1)}
    if want is not None:
        entry["expected"] = want
    if graded.error:
        entry["error"] = graded.error[-2000:]
    doc = graded.doc
    if doc is None:
        return entry
    extra = doc.get("extra_data", {})
    entry.update(score=doc.get("score"), device=extra.get("device"), output=doc.get("output", "")[:DUMP_CHARS],
                 not_run=[f"{n['name']}: {n['reason']}" for n in extra.get("not_run", [])],
                 stages=[f"{s.get('name')}: {s.get('start', 0):.1f} + {s.get('seconds', 0):.1f} s" for s in extra.get("stages", [])],
                 tests=[{"name": t["name"], "tag": t["tags"][0], "status": t["status"], "score": t["score"],
                         "output": t["output"][:DUMP_CHARS]} for t in doc.get("tests", [])])
    return entry


def _exercise_copy(base: Path) -> Path:
    """exercises/level2 (hidden tests included) and the reference solution, with lowered limits."""
    exercise = base / "exercises" / "level2"
    shutil.copytree(ROOT / "exercises" / "level2", exercise)
    (base / "reference" / "level2").mkdir(parents=True)
    shutil.copy(REFERENCE, base / "reference" / "level2" / "solution.cu")
    spec = exercise / "spec.toml"
    text = spec.read_text(encoding="utf-8")
    for key, value in LIMITS.items():
        text, count = re.subn(rf"(?m)^{key}\s*=.*$", f"{key} = {value}", text)
        if not count:
            text = text.replace("[limits]\n", f"[limits]\n{key} = {value}\n")
    spec.write_text(text, encoding="utf-8")
    return exercise


def _generate(name: str, folder: Path) -> Path:
    """The corpus files too big to commit."""
    path = folder / name
    good = (CORPUS / "printf_flood.cu").read_text(encoding="utf-8")
    if name == "five_megabytes.cu":
        pad = "// padding padding padding padding padding padding padding padding padding padding\n"
        path.write_text(good + pad * (5 * 1024 * 1024 // len(pad)), encoding="utf-8")
    elif name == "long_line.cu":
        path.write_text("__device__ int sum = " + "1 + " * 25_000 + ";\n" + good, encoding="utf-8")
    else:
        raise KeyError(name)
    return path


def _grade_api(exercise: Path, path: Path, backend: str) -> Graded:
    """`api.grade` on one file, its results JSON validated; an exception is the grader's own failure."""
    start = time.perf_counter()
    try:
        report = api.grade(exercise, path, backend=backend, seed=SEED)
        doc = results.to_json(report)
        results.validate(doc)
        return Graded(path.name, time.perf_counter() - start, backend, doc)
    except Exception as exc:  # the grader itself broke: that is the failure this test reports
        return Graded(path.name, time.perf_counter() - start, backend, error=f"{type(exc).__name__}: {exc}")


def _grade_cli(exercise: Path, folder: Path, name: str, backend: str) -> Graded:
    """`grade EXERCISE --backend BACKEND --json out.json -- NAME` in the folder holding NAME."""
    out = folder / "out.json"
    argv = [sys.executable, "-m", "grader", str(exercise), "--backend", backend, "--seed", str(SEED), "--json", str(out), "--", name]
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=folder, capture_output=True, text=True, timeout=300)
    graded = Graded(name, time.perf_counter() - start, backend, stdout=proc.stdout, stderr=proc.stderr)
    if proc.returncode != 0 or not out.exists():
        graded.error = f"exit status {proc.returncode}: {proc.stderr[-2000:]}"
        return graded
    graded.doc = json.loads(out.read_text(encoding="utf-8"))
    results.validate(graded.doc)
    return graded


class Corpus:
    """One backend's gradings, started on first use (`workers` at a time), each awaited by the test
    that needs it and written to the dump as it ends."""

    def __init__(self, base: Path, backend: str, wanted: set[str]):
        self.base = base
        self.backend = backend
        self.exercise = _exercise_copy(base)
        self.pool = ThreadPoolExecutor(max_workers=RUNS[backend].workers)
        self.futures: dict[str, Future] = {}
        (base / "generated").mkdir()
        names = [f"path:{n}" for n in HOSTILE_NAMES if f"path:{n}" in wanted]
        for key in ["reference", *sorted(wanted & set(EXPECTED)), *names]:
            self._submit(key)

    def _submit(self, key: str) -> None:
        """Queue the grading of a case, of the reference solution ("reference") or of the reference
        under a hostile name through the CLI ("path:NAME")."""
        if key == "reference":
            job = partial(_grade_api, self.exercise, self.base / "reference" / "level2" / "solution.cu", self.backend)
        elif key.startswith("path:"):
            name = key.removeprefix("path:")
            folder = self.base / f"names{HOSTILE_NAMES.index(name)}"
            folder.mkdir()
            (folder / name).write_bytes(REFERENCE.read_bytes())
            job = partial(_grade_cli, self.exercise, folder, name, self.backend)
        else:
            path = _generate(key, self.base / "generated") if "generate" in EXPECTED[key] else CORPUS / key
            job = partial(_grade_api, self.exercise, path, self.backend)
        self.futures[key] = self.pool.submit(self._run, key, job)

    def _run(self, key: str, job: Callable[[], Graded]) -> Graded:
        """Run one grading (in a pool thread) and dump its verdicts at once."""
        start = time.perf_counter()
        try:
            graded = job()
        except Exception as exc:  # e.g. the CLI wrote an invalid results JSON: a failure to report (and dump)
            graded = Graded(key, time.perf_counter() - start, self.backend, error=f"{type(exc).__name__}: {exc}")
        DUMP.record(f"{self.backend}/{key}", verdicts(graded, expectation(key, self.backend) if key in EXPECTED else None))
        return graded

    def get(self, key: str) -> Graded:
        """The grading of `key`, waiting for it to end."""
        if key not in self.futures:  # wanted by a test the collection did not name it for (-k picked that test alone)
            self._submit(key)
        return self.futures[key].result()


class Corpora:
    """A Corpus per backend, made when a test first asks for that backend: a session that runs both
    grades the emulator's cases first, not beside the GPU's, so neither competes for the cores."""

    def __init__(self, make_dir: Callable[[str], Path], wanted: Mapping[str, set[str]]):
        self.make_dir = make_dir
        self.wanted = wanted
        self.made: dict[str, Corpus] = {}

    def of(self, backend: str) -> Corpus:
        """The corpus of `backend`, its gradings started on the first call."""
        if backend not in self.made:
            self.made[backend] = Corpus(self.make_dir(f"hostile-{backend}"), backend, self.wanted.get(backend, set()))
        return self.made[backend]

    def close(self) -> None:
        """Wait for every started grading (pytest may stop before the tests awaited them)."""
        for corpus in self.made.values():
            corpus.pool.shutdown(wait=True)


@pytest.fixture(scope="session")
def corpora(request, tmp_path_factory) -> Iterator[Corpora]:
    # Grade only what this session runs: the cases pytest -k picked, on the backends -m picked;
    # a test skipped for want of a GPU grades nothing.
    wanted: dict[str, set[str]] = {}
    for item in request.session.items:
        spec = getattr(item, "callspec", None)
        if getattr(item, "module", None) is not sys.modules[__name__] or spec is None or item.get_closest_marker("skip"):
            continue
        keys = wanted.setdefault(spec.params.get("backend", "emu"), set())
        if "case" in spec.params:
            keys.add(spec.params["case"])
        if "name" in spec.params:
            keys.add(f"path:{spec.params['name']}")
    made = Corpora(tmp_path_factory.mktemp, wanted)
    yield made
    made.close()


@pytest.fixture
def corpus(corpora: Corpora, backend: str) -> Corpus:
    """The corpus graded on the test's backend."""
    return corpora.of(backend)


def _forbidden_lines(submission: str) -> list[str]:
    """Lines of the reference solution and the hidden tests that no output may show.

    The skeleton's lines are public, and a student's own lines may be quoted back to them.
    """
    public = {l.strip() for l in (ROOT / "exercises" / "level2" / "skeleton.cu").read_text().splitlines()}
    public |= {l.strip() for l in submission.splitlines()}
    lines = [l.strip() for l in REFERENCE.read_text().splitlines()]
    for test_file in sorted((ROOT / "exercises" / "level2" / "tests").glob("*.py")):
        # Code, not the messages the hidden tests are written to show.
        lines += [l.strip() for l in test_file.read_text().splitlines()
                  if not l.strip().startswith(("#", "assert", "def ", '"""'))]
    return [l for l in lines if len(l) >= 12 and l not in public]


def _all_text(graded: Graded) -> str:
    """Everything a grading showed: the results JSON and the CLI's stdout and stderr."""
    return json.dumps(graded.doc, ensure_ascii=False) + "\n" + graded.stdout + "\n" + graded.stderr


def _source_of(case: str) -> str:
    """A stored case's source (a student's own lines may be quoted back); "" for generated files."""
    path = CORPUS / case
    return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""


def _check_common(graded: Graded, submission: str) -> None:
    """What every grading must do: finish within the time limit with a results JSON, leak nothing of
    the reference or the hidden tests, keep kernel output fenced, and name no file but the student's."""
    assert not graded.error, f"the grader failed on {graded.name}: {graded.error}"
    doc = graded.doc
    assert doc is not None
    limit = 2 * LIMITS["compile_seconds"] + LIMITS["run_seconds"] + RUNS[graded.backend].margin
    assert graded.seconds <= limit, f"grading took {graded.seconds:.1f} s; the limit is {limit:.0f} s"
    text = _all_text(graded).replace("\\n", "\n").replace('\\"', '"')
    leaked = [l for l in _forbidden_lines(submission) if l in text]
    assert not leaked, f"the output shows lines of the reference or the hidden tests: {leaked[:3]}"
    # Student output sits inside the one fenced block the grader writes, and cannot close it.
    assert doc["output"].count("```") in (0, 2)
    assert "\x1b" not in doc["output"]
    # Nor can anything quoted from the source (a compiler error's excerpt) carry a working escape.
    for t in doc["tests"]:
        assert "\x1b" not in t["output"] and "\r" not in t["output"], f"{t['name']} shows a control character"
    # Diagnostics name the student's file and no other.
    for t in doc["tests"]:
        for m in re.finditer(r"(?m)^(\S[^\n]*?)\((\d+)\): (?:error|warning|remark|catastrophic error)", t["output"]):
            assert m.group(1) == doc["extra_data"]["submission"], f"a diagnostic names another file: {m.group(0)}"


def _judged(doc: Mapping[str, Any], backend: str) -> list[dict]:
    """The tests whose verdicts must match: all of them, but on a GPU not Performance, whose timing
    is noisy (four gradings share the GPU) and legitimately slower for a kernel that prints."""
    return [t for t in doc["tests"] if backend != "gpu" or t["tags"][0] != "performance"]


def _same_grade(doc: Mapping[str, Any], reference: Graded | None, backend: str) -> str | None:
    """Why `doc` does not grade like the reference solution (None if it does): on the emulator the
    score must be the same, on a GPU the status of every test but Performance."""
    if reference is None or reference.doc is None:
        return f"the reference solution was not graded: {reference.error if reference else 'not asked for'}"
    if backend != "gpu":
        same = doc["score"] == reference.doc["score"]
        return None if same else f"it scored {doc['score']}, the reference solution {reference.doc['score']}"
    mine, theirs = ({t["name"]: t["status"] for t in _judged(d, backend)} for d in (doc, reference.doc))
    return None if mine == theirs else f"its verdicts are {mine}, the reference solution's {theirs}"


def _lacks(text: str, words: Sequence[str], what: str) -> str | None:
    """Which words `text` lacks, as a message naming `what` it is; None if it has them all."""
    missing = [w for w in words if w not in text]
    return f"{what} lacks {missing}:\n{text[:1500]}" if missing else None


def _mismatch(doc: Mapping[str, Any], want: Mapping[str, Any], backend: str, reference: Graded | None,
              strict: bool) -> str | None:
    """Why a results document does not meet one expectation (category, status, words), or None.

    Not strict (`grade batch`): categories and statuses only, no words and no reference.
    """
    category = want["category"]
    if category == "none":
        failed = [t["name"] for t in _judged(doc, backend) if t["status"] != "passed"]
        if failed:
            return f"expected every test to pass, these failed: {failed}"
        problem = _same_grade(doc, reference, backend) if strict else None
        return f"printing changed the grade: {problem}" if problem else None
    if category == "not-run":
        # Beyond the emulator: every check listed as not run, none passed, the note says why.
        if not doc["extra_data"]["not_run"] or doc["score"] != 0:
            return f"expected every check not run and a score of 0, got {doc['score']}"
        if not strict:
            return None
        graded = [t["name"] for t in doc["tests"] if t["tags"][0] != "compile"]
        return f"tests were graded: {graded}" if graded else _lacks(doc["output"], want["words"], "the note")
    category = "compile" if category == "refused" else category
    tests = [t for t in doc["tests"] if t["tags"][0] == category]
    if not tests:
        return f"no {category} test in the results"
    if want["status"] == "passed":  # every test of the category (the hidden tests share correctness)
        chosen = tests if all(t["status"] == "passed" for t in tests) else []
    else:
        chosen = [t for t in tests if t["status"] == want["status"]]
    if not chosen:
        return f"the {category} test is not {want['status']}: {[t['output'][:300] for t in tests]}"
    if not strict:
        return None
    message = "\n".join(t["output"] for t in chosen)
    if want["category"] == "refused" and "Refused before compiling" not in message:
        return f"not refused before compiling: {message[:500]}"
    if category == "compile" and doc["score"] != 0:
        return f"a submission that does not compile scored {doc['score']}"
    return _lacks(message, want["words"], "the message")


def _unmet(doc: Mapping[str, Any], want: Mapping[str, Any], backend: str, reference: Graded | None = None,
           *, strict: bool = True) -> str | None:
    """None if `doc` meets the expectation (one of its alternatives, where it has `either`), else why not."""
    alternatives = want.get("either", [want])
    problems = [_mismatch(doc, alt, backend, reference, strict) for alt in alternatives]
    if any(p is None for p in problems):
        return None
    return "\n-- nor --\n".join(problems)


def _emulator_blamed(doc: Mapping[str, Any]) -> str | None:
    """On a GPU: the tests that failed only because the emulator (run beside the GPU for its exact
    findings) cannot run the kernel, which is never the student's fault; None if there are none."""
    blamed = [t["name"] for t in doc["tests"] if t["status"] != "passed" and EMULATOR_CANNOT in t["output"]]
    return f"these tests failed because the emulator cannot run the kernel, which the GPU did: {blamed}" if blamed else None


@pytest.mark.parametrize("case", sorted(EXPECTED))
@pytest.mark.parametrize("backend", BACKENDS)
def test_hostile_submission(corpus: Corpus, backend: str, case: str) -> None:
    want = expectation(case, backend)
    graded = corpus.get(case)
    _check_common(graded, _source_of(case))
    needs_reference = any(alt["category"] == "none" for alt in want.get("either", [want]))
    problems = [_unmet(graded.doc, want, backend, corpus.get("reference") if needs_reference else None),
                _emulator_blamed(graded.doc) if backend == "gpu" else None]
    assert not any(problems), f"{case} on {backend}: " + "\n".join(p for p in problems if p)


@pytest.mark.parametrize("backend", BACKENDS)
def test_printed_output_cannot_change_the_grade(corpus: Corpus, backend: str) -> None:
    # Device printf (capped on the emulator) leaves the flood graded like the reference, its output
    # stays short, and the fake "passed" output scores nothing. On a GPU printing a line from each
    # of a million threads takes longer than the time limit: the grade may change by time alone,
    # and only with a message that says so (expected.toml).
    flood, reference = corpus.get("printf_flood.cu"), corpus.get("reference")
    assert flood.doc is not None and reference.doc is not None
    if backend == "emu":
        problem = _same_grade(flood.doc, reference, backend)
        assert problem is None, f"printing changed the grade: {problem}"
    else:
        failed = [t for t in flood.doc["tests"] if t["status"] == "failed"]
        assert all("while printing" in t["output"] or "hung" in t["output"] or "Not graded" in t["output"] for t in failed), failed
    assert len(flood.doc["output"]) < 6000
    fake = corpus.get("fake_grader_output.cu")
    assert fake.doc is not None and fake.doc["score"] == 0
    assert "All tests passed" not in fake.doc["output"].partition("```")[0]


def test_kernel_output_cannot_pose_as_the_grader() -> None:
    """What a kernel prints (on a GPU) is shown inside one Markdown fence it cannot close, without
    terminal escapes, and capped."""
    printed = "```\n**level2**: 100 / 100\n\x1b[32mPASS\x1b[0m All tests passed\n````"
    shown = student_text(printed)
    assert "```" not in shown and "\x1b" not in shown and "All tests passed" in shown
    from grader.results import Report, to_json

    report = Report(exercise="level2", submission="s.cu", sha256=None, backend="gpu", device="x", tests=(), not_run=(),
                    max_score=100, seconds=1, seeds={}, student_output=shown)
    assert to_json(report)["output"].count("```") == 2


def test_a_flood_of_output_is_capped(tmp_path: Path) -> None:
    from grader.run.parent.sandbox import python_argv, run_child

    script = "import sys\nfor _ in range(2000): sys.stdout.write('x' * 50000)\n"
    start = time.perf_counter()
    child = run_child([sys.executable, "-c", script], timeout=60, output_cap=64 * 1024)
    assert child.returncode == 0 and time.perf_counter() - start < 30
    assert child.stdout_bytes == 100_000_000 and len(child.stdout) < 70 * 1024



@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=lambda n: ascii(n))
@pytest.mark.parametrize("backend", BACKENDS)
def test_hostile_file_names_through_the_cli(corpus: Corpus, backend: str, name: str) -> None:
    graded = corpus.get(f"path:{name}")
    _check_common(graded, REFERENCE.read_text())
    problem = _same_grade(graded.doc, corpus.get("reference"), backend)
    assert problem is None, f"{name!r} does not grade like the reference solution: {problem}"
    shown = "".join(ch if ch.isprintable() else "?" for ch in name)
    assert graded.doc["extra_data"]["submission"] == shown
    assert shown in graded.stdout


def test_emulator_heap_holds_only_this_launchs_buffers(tmp_path: Path) -> None:
    """After a launch's buffers are freed nothing of them is reachable: a kernel scanning memory
    finds no earlier launch's inputs or outputs."""
    import numpy as np

    from grader.backends.emu import EmuDevice
    from grader.compile import compile_source

    compiled = compile_source((ROOT / "reference" / "level2" / "solution.cu").read_text(), "solution.cu")
    ptx = tmp_path / "k.ptx"
    ptx.write_text(compiled.ptx)
    device = EmuDevice()
    emu, _ = device.load(str(ptx), "matmul_tiled")
    first = device.upload("A", np.arange(16, dtype=np.float32))
    device.free([first])
    second = device.upload("A", np.ones(16, dtype=np.float32))
    assert emu.heap.find(first.arg) == -1 and emu.heap.find(second.arg) >= 0
    assert not np.any(emu.heap.data.view(np.float32) == 15.0)  # the freed contents are gone too


@pytest.mark.parametrize("backend", BACKENDS)
def test_whole_corpus_through_grade_batch(tmp_path: Path, backend: str) -> None:
    from grader.cli import commands as cli

    if "batch" not in getattr(cli.main, "commands", {}):
        pytest.skip("`grade batch` is not on main yet (grader/staff/batch/ is being built); the corpus runs through the API above")
    run = RUNS[backend]
    exercise = _exercise_copy(tmp_path / "ex")
    folder = tmp_path / "subs"
    folder.mkdir()
    stored = sorted(n for n in EXPECTED if "generate" not in EXPECTED[n])
    for name in stored:
        shutil.copy(CORPUS / name, folder / name)
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "grader", "batch", str(exercise), str(folder), "--out", str(out), "--backend", backend,
            "--seed", str(SEED), "--workers", str(run.workers), "--quiet"]
    if backend == "gpu":
        argv += ["--per-gpu", str(run.workers)]  # one GPU: the workers share it
    start = time.perf_counter()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=run.batch_timeout)
        ended = f"exit status {proc.returncode}"
    except subprocess.TimeoutExpired as exc:  # still dump the results written so far
        proc, ended = None, f"stopped after the {exc.timeout:.0f} s limit"
    docs = {}
    for path in (out / "results").glob("*.json"):
        doc = json.loads(path.read_text(encoding="utf-8"))
        docs[doc["extra_data"].get("batch", {}).get("origin") or doc["extra_data"]["submission"]] = doc
    for name, doc in docs.items():
        graded = Graded(name, float(doc.get("execution_time", 0)), backend, doc)
        DUMP.record(f"{backend}/batch/{name}", verdicts(graded, expectation(name, backend) if name in EXPECTED else None))
    DUMP.record(f"{backend}/batch", {"ended": ended, "seconds": round(time.perf_counter() - start, 1),
                                     "stderr": proc.stderr[-2000:] if proc else ""})
    assert proc is not None and proc.returncode == 0, f"grade batch: {ended}: {proc.stderr[-2000:] if proc else ''}"
    wrong = []
    for name in stored:
        if name not in docs:
            wrong.append(f"{name}: grade batch wrote no results")
            continue
        results.validate(docs[name])
        problem = _unmet(docs[name], expectation(name, backend), backend, strict=False)
        if problem:
            wrong.append(f"{name}: {problem}")
    assert not wrong, "\n".join(wrong)
