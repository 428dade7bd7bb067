"""The hostile corpus (tests/hostile/): broken and malicious level2 submissions, graded on the emulator.

For every case: a schema-valid results JSON within the time limit, the expected category failed
with a message the student can act on, nothing of the reference solution or the hidden tests in
any output, and a grade that printed output cannot change. The corpus is graded once per
session, two gradings at a time (each grading already runs its work in child processes), against
one copy of the exercise whose limits are lowered so bombs and endless loops end quickly.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from grader import api, results
from grader.spec import tomllib

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "hostile"
EXPECTED = tomllib.loads((CORPUS / "expected.toml").read_text(encoding="utf-8"))
SEED = 1
MARGIN_SECONDS = 15.0  # child start-up, the kill grace period and a loaded CI machine
# Lower than level2's own limits so the bombs and endless loops of the corpus end in seconds;
# the reference still needs under 1,000 steps per launch and 1 s to compile.
LIMITS = {"compile_seconds": 5, "run_seconds": 60, "step_limit": 20_000}
# Submission names that are hostile to a shell, a CLI parser or a report: graded through the CLI.
HOSTILE_NAMES = ["my kernel.cu", "it's \"quoted\".cu", "..hidden.cu", "-x.cu", "--json.cu", "ядро μ.cu", "new\nline.cu"]

pytestmark = pytest.mark.slow


@dataclass
class Graded:
    name: str
    seconds: float
    doc: dict | None = None  # the results JSON
    stdout: str = ""
    stderr: str = ""
    error: str = ""  # the grader itself failed (an exception, a non-zero exit)


def _exercise_copy(base: Path) -> Path:
    """exercises/level2 (hidden tests included) and the reference solution, with lowered limits."""
    exercise = base / "exercises" / "level2"
    shutil.copytree(ROOT / "exercises" / "level2", exercise)
    (base / "reference" / "level2").mkdir(parents=True)
    shutil.copy(ROOT / "reference" / "level2" / "solution.cu", base / "reference" / "level2" / "solution.cu")
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


def _grade_api(exercise: Path, path: Path) -> Graded:
    start = time.perf_counter()
    try:
        report = api.grade(exercise, path, backend="emu", seed=SEED)
        doc = results.to_json(report)
        results.validate(doc)
        return Graded(path.name, time.perf_counter() - start, doc)
    except Exception as exc:  # the grader itself broke: that is the failure this test reports
        return Graded(path.name, time.perf_counter() - start, error=f"{type(exc).__name__}: {exc}")


def _grade_cli(exercise: Path, folder: Path, name: str) -> Graded:
    """`grade EXERCISE --backend emu --json out.json -- NAME` in the folder holding NAME."""
    out = folder / "out.json"
    argv = [sys.executable, "-m", "grader", str(exercise), "--backend", "emu", "--seed", str(SEED), "--json", str(out), "--", name]
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=folder, capture_output=True, text=True, timeout=300)
    graded = Graded(name, time.perf_counter() - start, stdout=proc.stdout, stderr=proc.stderr)
    if proc.returncode != 0 or not out.exists():
        graded.error = f"exit status {proc.returncode}: {proc.stderr[-2000:]}"
        return graded
    graded.doc = json.loads(out.read_text(encoding="utf-8"))
    results.validate(graded.doc)
    return graded


class Corpus:
    """Gradings started on first use, two at a time, each awaited by the test that needs it."""

    def __init__(self, base: Path, wanted: set[str]):
        self.exercise = _exercise_copy(base)
        self.spec_limits = LIMITS
        self.pool = ThreadPoolExecutor(max_workers=2)
        self.futures: dict[str, Future] = {"reference": self.pool.submit(_grade_api, self.exercise, self.exercise.parent.parent / "reference" / "level2" / "solution.cu")}
        generated = base / "generated"
        generated.mkdir()
        for name in sorted(wanted & set(EXPECTED)):
            path = _generate(name, generated) if "generate" in EXPECTED[name] else CORPUS / name
            self.futures[name] = self.pool.submit(_grade_api, self.exercise, path)
        for i, name in enumerate(n for n in HOSTILE_NAMES if f"path:{n}" in wanted):
            folder = base / f"names{i}"
            folder.mkdir()
            (folder / name).write_bytes((ROOT / "reference" / "level2" / "solution.cu").read_bytes())
            self.futures[f"path:{name}"] = self.pool.submit(_grade_cli, self.exercise, folder, name)

    def get(self, key: str) -> Graded:
        return self.futures[key].result()


@pytest.fixture(scope="session")
def corpus(request, tmp_path_factory) -> Corpus:
    # Grade only what this session collected (pytest -k picks a few cases: grade only those).
    wanted = set()
    for item in request.session.items:
        spec = getattr(item, "callspec", None)
        if spec is not None and "case" in spec.params:
            wanted.add(spec.params["case"])
        if spec is not None and "name" in spec.params:
            wanted.add(f"path:{spec.params['name']}")
    made = Corpus(tmp_path_factory.mktemp("hostile"), wanted)
    yield made
    made.pool.shutdown(wait=True)


def _forbidden_lines(submission: str) -> list[str]:
    """Lines of the reference solution and the hidden tests that no output may show.

    The skeleton's lines are public, and a student's own lines may be quoted back to them.
    """
    public = {l.strip() for l in (ROOT / "exercises" / "level2" / "skeleton.cu").read_text().splitlines()}
    public |= {l.strip() for l in submission.splitlines()}
    lines = [l.strip() for l in (ROOT / "reference" / "level2" / "solution.cu").read_text().splitlines()]
    for test_file in sorted((ROOT / "exercises" / "level2" / "tests").glob("*.py")):
        # Code, not the messages the hidden tests are written to show.
        lines += [l.strip() for l in test_file.read_text().splitlines()
                  if not l.strip().startswith(("#", "assert", "def ", '"""'))]
    return [l for l in lines if len(l) >= 12 and l not in public]


def _all_text(graded: Graded) -> str:
    return json.dumps(graded.doc, ensure_ascii=False) + "\n" + graded.stdout + "\n" + graded.stderr


def _source_of(case: str) -> str:
    path = CORPUS / case
    return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""


def _check_common(graded: Graded, submission: str) -> None:
    assert not graded.error, f"the grader failed on {graded.name}: {graded.error}"
    doc = graded.doc
    assert doc is not None
    limit = 2 * LIMITS["compile_seconds"] + LIMITS["run_seconds"] + MARGIN_SECONDS
    assert graded.seconds <= limit, f"grading took {graded.seconds:.1f} s; the limit is {limit:.0f} s"
    text = _all_text(graded).replace("\\n", "\n").replace('\\"', '"')
    leaked = [l for l in _forbidden_lines(submission) if l in text]
    assert not leaked, f"the output shows lines of the reference or the hidden tests: {leaked[:3]}"
    # Student output sits inside the one fenced block the grader writes, and cannot close it.
    assert doc["output"].count("```") in (0, 2)
    assert "\x1b" not in doc["output"]
    # Diagnostics name the student's file and no other.
    for t in doc["tests"]:
        for m in re.finditer(r"(?m)^(\S[^\n]*?)\((\d+)\): (?:error|warning|remark|catastrophic error)", t["output"]):
            assert m.group(1) == doc["extra_data"]["submission"], f"a diagnostic names another file: {m.group(0)}"


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_hostile_submission(corpus: Corpus, case: str) -> None:
    want = EXPECTED[case]
    graded = corpus.get(case)
    _check_common(graded, _source_of(case))
    doc = graded.doc
    by_category: dict[str, list[dict]] = {}
    for t in doc["tests"]:
        by_category.setdefault(t["tags"][0], []).append(t)
    if want["category"] == "none":
        reference = corpus.get("reference")
        assert not reference.error and reference.doc is not None
        failed = [t["name"] for t in doc["tests"] if t["status"] != "passed"]
        assert not failed, f"{case}: expected every test to pass, these failed: {failed}"
        assert doc["score"] == reference.doc["score"], "printing changed the grade"
        return
    if want["category"] == "not-run":
        # Beyond the emulator: every check listed as not run, none passed, the note says why.
        assert all(t["tags"][0] == "compile" for t in doc["tests"]), [t["name"] for t in doc["tests"]]
        assert doc["extra_data"]["not_run"] and doc["score"] == 0
        missing = [w for w in want["words"] if w not in doc["output"]]
        assert not missing, f"{case}: the note lacks {missing}:\n{doc['output'][:1500]}"
        return
    category = "compile" if want["category"] == "refused" else want["category"]
    tests = by_category.get(category)
    assert tests, f"{case}: no {category} test in the results"
    failing = [t for t in tests if t["status"] == want["status"]]
    assert failing, f"{case}: the {category} test is not {want['status']}: {[t['output'][:300] for t in tests]}"
    message = "\n".join(t["output"] for t in failing)
    if want["category"] == "refused":
        assert "Refused before compiling" in message, message[:500]
    missing = [w for w in want["words"] if w not in message]
    assert not missing, f"{case}: the message lacks {missing}:\n{message[:1500]}"
    if want["category"] in ("compile", "refused"):
        assert doc["score"] == 0


def test_printed_output_cannot_change_the_grade(corpus: Corpus) -> None:
    # The emulator prints device printf (capped) like a GPU: the flood still grades like the
    # reference, its output stays short, and the fake "passed" output scores nothing.
    flood, reference = corpus.get("printf_flood.cu"), corpus.get("reference")
    assert flood.doc is not None and reference.doc is not None
    assert flood.doc["score"] == reference.doc["score"] and len(flood.doc["output"]) < 6000
    fake = corpus.get("fake_grader_output.cu")
    assert fake.doc is not None and fake.doc["score"] == 0
    assert "All tests passed" not in fake.doc["output"].partition("```")[0]


def test_kernel_output_cannot_pose_as_the_grader() -> None:
    """What a kernel prints (on a GPU) is shown inside one Markdown fence it cannot close, without
    terminal escapes, and capped."""
    printed = "```\n**level2**: 100 / 100\n\x1b[32mPASS\x1b[0m All tests passed\n````"
    shown = api.student_text(printed)
    assert "```" not in shown and "\x1b" not in shown and "All tests passed" in shown
    from grader.results import Report, to_json

    report = Report(exercise="level2", submission="s.cu", sha256=None, backend="gpu", device="x", tests=(), not_run=(),
                    max_score=100, seconds=1, seeds={}, student_output=shown)
    assert to_json(report)["output"].count("```") == 2


def test_a_flood_of_output_is_capped(tmp_path: Path) -> None:
    from grader.sandbox import python_argv, run_child

    script = "import sys\nfor _ in range(2000): sys.stdout.write('x' * 50000)\n"
    start = time.perf_counter()
    child = run_child([sys.executable, "-c", script], timeout=60, output_cap=64 * 1024)
    assert child.returncode == 0 and time.perf_counter() - start < 30
    assert child.stdout_bytes == 100_000_000 and len(child.stdout) < 70 * 1024


@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=lambda n: ascii(n))
def test_hostile_file_names_through_the_cli(corpus: Corpus, name: str) -> None:
    graded = corpus.get(f"path:{name}")
    _check_common(graded, (ROOT / "reference" / "level2" / "solution.cu").read_text())
    reference = corpus.get("reference")
    assert graded.doc["score"] == reference.doc["score"]
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


def test_whole_corpus_through_grade_batch(tmp_path: Path) -> None:
    from grader import cli

    if "batch" not in getattr(cli.main, "commands", {}):
        pytest.skip("`grade batch` is not on main yet (grader/batch.py is being built); the corpus runs through the API above")
    exercise = _exercise_copy(tmp_path / "ex")
    folder = tmp_path / "subs"
    folder.mkdir()
    stored = sorted(n for n in EXPECTED if "generate" not in EXPECTED[n])
    for name in stored:
        shutil.copy(CORPUS / name, folder / name)
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "grader", "batch", str(exercise), str(folder), "--out", str(out), "--backend", "emu",
            "--seed", str(SEED), "--workers", "2", "--quiet"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    docs = {}
    for path in (out / "results").glob("*.json"):
        doc = json.loads(path.read_text(encoding="utf-8"))
        results.validate(doc)
        docs[doc["extra_data"].get("batch", {}).get("origin") or doc["extra_data"]["submission"]] = doc
    for name in stored:
        assert name in docs, f"grade batch wrote no results for {name}"
        want, doc = EXPECTED[name], docs[name]
        category = "compile" if want["category"] in ("refused",) else want["category"]
        if category == "none":
            assert all(t["status"] == "passed" for t in doc["tests"]), name
        elif category == "not-run":
            assert doc["extra_data"]["not_run"] and doc["score"] == 0, name
        else:
            assert any(t["tags"][0] == category and t["status"] == want["status"] for t in doc["tests"]), name
