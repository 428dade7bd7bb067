"""grader.staff.batch: inputs (folders, zips), workers, the gradebook, and a whole class killed half way and resumed."""
from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from grader.staff import batch
from grader.staff.batch import intake, local, plan, record, run as batch_run
from grader.run.parent import math_threads
from grader.errors import UsageError
from grader.exercise import load
from grader.run.parent.isolated import STATUSES, TAG_VARIABLE, kill_tagged
from grader.results import validate

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = ROOT / "reference" / "level2" / "solution.cu"
SKELETON = ROOT / "exercises" / "level2" / "skeleton.cu"
WRONG = sorted((ROOT / "reference" / "level2" / "wrong").glob("*.cu"))


def stuck_source() -> str:
    """A submission whose grading outlasts a short batch limit on any machine. A kernel that never ends
    no longer does (each launch stops at a multiple of the reference's cost, grader.run.child.launch_budget),
    and a compile-time bomb may stop early at the compiler's memory cap. A correct kernel doing about
    35 times the reference's work (well under the budget's 50) does: its emulation alone takes
    several times a few-second limit."""
    text = (ROOT / "tests" / "data" / "slow_kernels" / "level2_thirty_phases.cu").read_text()
    assert "#define PASSES 30" in text
    return text.replace("#define PASSES 30", "#define PASSES 60", 1)


def hang_source() -> str:
    text = SOLUTION.read_text()
    marker = "    float acc"
    assert marker in text
    return text.replace(marker, "    while (1);\n" + marker, 1)


def run_cli(*args: str, timeout: float = 400, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT, **kwargs)


def read_csv(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text())))


def batch_tag(out: Path) -> str:
    return "batch-" + hashlib.sha256(str(out.resolve()).encode()).hexdigest()[:16]


def tagged_processes(prefix: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                env = (entry / "environ").read_bytes()
            except OSError:
                continue
            if f"{TAG_VARIABLE}={prefix}".encode() in env:
                found.append(int(entry.name))
    return found


# --------------------------------------------------------------------------------------------- inputs

def test_folder_of_files_and_of_student_folders(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "Zoë Smith.cu").write_text("// a\n")
    (subs / "alice.cu").write_text("// b\n")
    (subs / "notes.txt").write_text("ignored\n")
    (subs / "bob").mkdir()
    (subs / "bob" / "src").mkdir()
    (subs / "bob" / "src" / "k.cu").write_text("// c\n")
    (subs / "carol").mkdir()
    (subs / "carol" / "README").write_text("forgot the file\n")
    (subs / "dan").mkdir()
    (subs / "dan" / "a.cu").write_text("// d1\n")
    (subs / "dan" / "b.cu").write_text("// d2\n")
    entries = {e.student: e for e in intake.collect(subs, tmp_path / "scratch")}
    assert sorted(entries) == ["Zo_Smith", "alice", "bob", "carol", "dan"]
    assert entries["bob"].source == subs / "bob" / "src" / "k.cu"
    assert entries["carol"].source is None and "No .cu file" in entries["carol"].problem and "README" in entries["carol"].problem
    assert entries["dan"].source is None and "a.cu" in entries["dan"].problem and "exactly one" in entries["dan"].problem
    assert entries["alice"].fingerprint != entries["Zo_Smith"].fingerprint


def test_ids_are_sanitised_and_unique(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    for name in ("a b.cu", "a_b.cu", "x;rm -rf.cu"):
        (subs / name).write_text("// x\n")
    students = [e.student for e in intake.collect(subs, tmp_path)]
    assert students == ["a_b", "a_b-2", "x_rm_-rf"]


def test_gradescope_export_zip(tmp_path):
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("assignment_42_export/submission_metadata.yml",
                    "submission_1001:\n  :submitters:\n  - :name: Ada Lovelace\n    :sid: '77'\n    :email: ada@example.edu\n"
                    "  :created_at: 2025-01-01\nsubmission_1002:\n  :submitters:\n  - :name: Alan Turing\n    :email: alan@example.edu\n")
        zf.writestr("assignment_42_export/submission_1001/submission.cu", "// ada\n")
        zf.writestr("assignment_42_export/submission_1002/kernel.cu", "// alan\n")
        zf.writestr("__MACOSX/._junk", "x")
    entries = intake.collect(archive, tmp_path / "scratch")
    assert [e.student for e in entries] == ["submission_1001", "submission_1002"]
    assert entries[0].submitters == ("Ada Lovelace <ada@example.edu> 77",)
    assert entries[1].submitters == ("Alan Turing <alan@example.edu>",)
    assert entries[0].source.read_text() == "// ada\n"


@pytest.mark.parametrize("evil", ["../escape.cu", "/abs/escape.cu", "a/../../escape.cu"])
def test_zip_path_traversal_is_refused(tmp_path, evil):
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("ok.cu", "// fine\n")
        zf.writestr(evil, "// bad\n")
    with pytest.raises(UsageError, match="outside the archive"):
        intake.extract_zip(archive, tmp_path / "x" / "dest")
    assert not (tmp_path / "escape.cu").exists() and not (tmp_path / "x" / "escape.cu").exists()


def test_zip_size_cap_counts_real_bytes(tmp_path):
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("big.cu", b"\0" * (4 * 1024 * 1024))
    with pytest.raises(UsageError, match="MiB once extracted"):
        intake.extract_zip(archive, tmp_path / "dest", max_bytes=1024 * 1024)


def test_zip_symlinks_are_skipped(tmp_path):
    archive = tmp_path / "links.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        info = zipfile.ZipInfo("link.cu")
        info.external_attr = 0o120777 << 16
        zf.writestr(info, "/etc/passwd")
        zf.writestr("real.cu", "// real\n")
    intake.extract_zip(archive, tmp_path / "dest")
    assert sorted(p.name for p in (tmp_path / "dest").iterdir()) == ["real.cu"]


# --------------------------------------------------------------------------------------------- workers, hashing

def test_gpu_slots_spread_children_over_gpus():
    slots = plan.plan_slots("gpu", None, 2, ["0", "1", "2"])
    assert [s["CUDA_VISIBLE_DEVICES"] for s in slots] == ["0", "1", "2", "0", "1", "2"]
    assert len(plan.plan_slots("gpu", 4, 2, ["0", "1", "2"])) == 4
    capped = plan.plan_slots("gpu", 4, 1, ["5", "7"])
    assert [s["CUDA_VISIBLE_DEVICES"] for s in capped] == ["5", "7"]  # never more than per_gpu x GPUs


def test_cpu_workers_never_exceed_cores():
    assert len(plan.plan_slots("emu", 16, 1, cores=2)) == 2
    assert len(plan.plan_slots("emu", 1, 1, cores=8)) == 1
    assert len(plan.plan_slots("emu", None, 1, cores=3)) == 3
    with pytest.raises(UsageError):
        plan.plan_slots("emu", 0, 1)


def test_batch_children_share_the_cores_among_their_math_threads(monkeypatch):
    for name in math_threads.VARIABLES:
        monkeypatch.delenv(name, raising=False)
    slots = plan.plan_slots("gpu", None, 4, ["0"], cores=16)
    assert all(s["OPENBLAS_NUM_THREADS"] == "4" and s["OMP_NUM_THREADS"] == "4" for s in slots)
    assert plan.plan_slots("emu", None, 1, cores=3)[0]["MKL_NUM_THREADS"] == "1"
    # GPU slots mostly wait on their GPU: at least 4 threads each where there are 4 cores, even when
    # 16 slots share 32 cores (two GPUs, --per-gpu 8), never more than the machine has
    two_gpus = plan.plan_slots("gpu", None, 8, ["0", "1"], cores=32)
    assert len(two_gpus) == 16 and all(s["OMP_NUM_THREADS"] == "4" for s in two_gpus)
    assert plan.plan_slots("gpu", None, 8, ["0"], cores=2)[0]["OMP_NUM_THREADS"] == "2"
    assert plan.plan_slots("emu", None, 1, cores=32)[0]["OMP_NUM_THREADS"] == "1"
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")  # the user's setting stands
    assert "OPENBLAS_NUM_THREADS" not in plan.plan_slots("gpu", None, 4, ["0"], cores=16)[0]


def test_visible_gpus_respects_cuda_visible_devices(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    assert plan.visible_gpus() == ["2", "3"]


def test_normalised_hash_ignores_comments_and_whitespace():
    a = "// mine!\n__global__ void k(float* x) {\n  x[0] = 1; /* set */\n}\n"
    b = "__global__   void k(float*x){x[0]=1;}  // copied\n"
    c = '__global__ void k(float* x) { x[0] = 2; }\n'
    d = 'const char* s = "// not a comment"; __global__ void k(float* x) { x[0] = 1; }'
    assert record.normalized_hash(a) == record.normalized_hash(b) != record.normalized_hash(c)
    assert record.normalized_hash(d) != record.normalized_hash('const char* s = ""; __global__ void k(float* x) { x[0] = 1; }')


def test_a_scaled_total_says_what_it_was_scaled_from(tmp_path):
    """Without a GPU, performance does not run: a row's columns fall short of its total, and the
    gradebook and the summary say by how much and why."""
    from grader import api
    from grader.results import to_json

    vector_add = ROOT / "exercises" / "vector_add"
    out = tmp_path / "out"
    (out / "results").mkdir(parents=True)
    entries = []
    for student, source in (("ada", ROOT / "reference" / "vector_add" / "solution.cu"),
                            ("bob", ROOT / "reference" / "vector_add" / "wrong" / "full_blocks_only.cu")):
        report = api.grade(vector_add, source, backend="emu", seed=1, workdir=tmp_path / f"work-{student}")
        (out / "results" / f"{student}.json").write_text(json.dumps(to_json(report)))
        entries.append(intake.Entry(student, source.name, source))
    csv_path, summary = record.write_gradebook(out, entries, load(vector_add))
    rows = read_csv(csv_path)
    header, maxes = rows[0], rows[1]
    assert header[:3] == ["id", "total", "scaled from"] and maxes[-1] == record.SCALED_NOTE
    tests = header[3:header.index("status")]
    assert "Performance" not in tests
    ran = sum(float(maxes[header.index(t)]) for t in tests)
    for row in rows[2:]:
        assert row[-1] == "Performance" and float(row[2]) == ran < float(maxes[1])
        columns = sum(float(row[header.index(t)] or 0) for t in tests)
        assert float(row[1]) == pytest.approx(columns * float(maxes[1]) / ran, abs=0.01)
    text = "\n".join(summary.lines())
    assert f"2 total(s) are scaled: Performance did not run" in text and f"at most {ran:g}" in text
    assert summary.to_json()["scaled"] == [{"not_run": "Performance", "scaled_from": ran, "students": 2}]


def test_a_total_not_scaled_leaves_the_scaled_columns_empty(tmp_path):
    rows = [record.Row("s1", "graded", 10.0, {"Compiles": 10.0}, {"Compiles": 10.0}, 10.0, ())]
    table = read_csv(record.write_csv(tmp_path / "grades.csv", rows))
    assert table[1] == ["(max)", "10", "", "10", "", "", ""] and table[2] == ["s1", "10", "", "10", "graded", "", ""]


# --------------------------------------------------------------------------------------------- grading

def test_small_batch_statuses_and_timeout_row(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "broken.cu").write_bytes((ROOT / "reference/level2/wrong/does_not_compile.cu").read_bytes())
    (subs / "empty.cu").write_bytes(b"")
    (subs / "hang.cu").write_text(stuck_source())
    (subs / "nofile").mkdir()
    (subs / "nofile" / "x.txt").write_text("?")
    out = tmp_path / "out"
    proc = run_cli("batch", "exercises/level2", str(subs), "--out", str(out), "--backend", "emu", "--workers", "2", "--timeout", "6")
    assert proc.returncode == 0, proc.stderr
    rows = read_csv(out / "grades.csv")
    assert rows[0][0] == "id" and rows[0][-3:] == ["status", "submitters", "not run (total scaled)"] and rows[1][0] == "(max)"
    status = {r[0]: r[rows[0].index("status")] for r in rows[2:]}
    # The maximum in the gradebook is the one in the results JSON.
    assert float(rows[1][1]) == 100 and {r[-1] for r in rows[2:]} == {"Performance"}
    assert status == {"broken": "compile-error", "empty": "compile-error", "hang": "timeout", "nofile": "compile-error"}
    for student in status:
        doc = json.loads((out / "results" / f"{student}.json").read_text())
        validate(doc)
        assert doc["score"] == 0 and doc["extra_data"]["batch"]["status"] == status[student]
    hang = json.loads((out / "results" / "hang.json").read_text())
    assert "6 s limit" in hang["tests"][0]["output"]
    assert (out / "summary.txt").read_text().startswith("4 submissions")
    assert tagged_processes(batch_tag(out)) == []


def test_relative_paths_as_the_help_shows_them(tmp_path):
    """`grade batch exercises/level2 subs --out grades/level2`, every path relative to the folder the
    command runs in: the children run in folders of their own and must still find everything."""
    for folder in ("exercises", "reference"):
        (tmp_path / folder).symlink_to(ROOT / folder)
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "alice.cu").write_bytes(SOLUTION.read_bytes())
    (subs / "bob.cu").write_bytes((ROOT / "reference/level2/wrong/does_not_compile.cu").read_bytes())
    proc = subprocess.run([sys.executable, "-m", "grader", "batch", "exercises/level2", "subs", "--out", "grades/level2",
                           "--backend", "emu", "--workers", "2"], capture_output=True, text=True, timeout=400, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    rows = {r[0]: r for r in read_csv(tmp_path / "grades" / "level2" / "grades.csv")[2:]}
    header = read_csv(tmp_path / "grades" / "level2" / "grades.csv")[0]
    status = header.index("status")
    assert {k: r[status] for k, r in rows.items()} == {"alice": "graded", "bob": "compile-error"}
    assert float(rows["alice"][1]) == 100  # the reference: full marks, scaled over what the emulator runs


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGKILL"])
def test_a_killed_batch_stops_its_children_and_keeps_finished_results(tmp_path, sig):
    """SIGTERM stops the batch as Ctrl-C does. SIGKILL gives it no time to stop its children: its
    reaper (grader.run.parent.reaper), told the batch's tag when it began, kills them once it is gone."""
    subs = tmp_path / "subs"
    subs.mkdir()
    for i in range(3):
        (subs / f"hang{i}.cu").write_text(stuck_source())
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "grader", "batch", "exercises/level2", str(subs), "--out", str(out),
                             "--backend", "emu", "--workers", "2", "--timeout", "300"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    tag = batch_tag(out)
    try:
        deadline = time.monotonic() + 60
        while not tagged_processes(tag) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert tagged_processes(tag), "no grading child started"
        time.sleep(1.0)
        proc.send_signal(getattr(signal, sig))
        _, err = proc.communicate(timeout=30)
        deadline = time.monotonic() + 10
        while tagged_processes(tag) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert tagged_processes(tag) == []  # nothing of the batch is left running
    finally:
        proc.kill()
        kill_tagged(tag + ":", prefix=True)
    if sig == "SIGTERM":
        assert proc.returncode == 130 and "same command again" in err
    assert not (out / "grades.csv").exists() and list((out / "results").glob("*.json")) == []


def test_unchanged_results_are_reused_and_changed_ones_regraded(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "a.cu").write_bytes((ROOT / "reference/level2/wrong/does_not_compile.cu").read_bytes())
    (subs / "b.cu").write_bytes(b"")
    out = tmp_path / "out"
    first = batch.run_batch(ROOT / "exercises/level2", subs, out, batch.Options(backend="emu", workers=2))
    assert (first.graded_now, first.skipped) == (2, 0)
    (subs / "b.cu").write_text("// now something\n")
    second = batch.run_batch(ROOT / "exercises/level2", subs, out, batch.Options(backend="emu", workers=2))
    assert (second.graded_now, second.skipped) == (1, 1)
    third = batch.run_batch(ROOT / "exercises/level2", subs, out, batch.Options(backend="emu", workers=2, regrade=True))
    assert (third.graded_now, third.skipped) == (2, 0)


def test_the_batch_writes_its_timeline_where_the_diagnostic_says(tmp_path, monkeypatch):
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "a.cu").write_bytes((ROOT / "reference/level2/wrong/does_not_compile.cu").read_bytes())
    out = tmp_path / "out"
    batch.run_batch(ROOT / "exercises/level2", subs, out, batch.Options(backend="emu", workers=1))  # not asked: none
    assert not list(tmp_path.glob("*.json"))
    timeline = tmp_path / "timeline.json"
    monkeypatch.setenv(batch_run.TIMELINE_VARIABLE, str(timeline))
    batch.run_batch(ROOT / "exercises/level2", subs, out, batch.Options(backend="emu", workers=1, regrade=True))
    steps = json.loads(timeline.read_text())
    # The emulator's batch has no profilers; every other step is on record, in order, in time order.
    assert [what for what, _ in steps] == ["last grading", "slots closed", "executor", "gradebook", "pages", "reports"]
    assert all(0 <= a[1] <= b[1] for a, b in zip(steps, steps[1:]))


@pytest.mark.parametrize("workers, streamed", [(1, 2), (2, 0)])
def test_pages_are_drawn_as_results_land_only_where_a_core_is_spare(tmp_path, monkeypatch, workers, streamed):
    """On the emulator every core grades: there the pages wait for the last grading; with a core to
    spare, each is handed to the page writer as its result lands. Every page is written either way."""
    submitted = []

    class Recording(batch_run.PageStream):
        def submit(self, entry):
            submitted.append(entry.student)
            super().submit(entry)

    monkeypatch.setattr(batch_run, "PageStream", Recording)
    monkeypatch.setattr(math_threads, "usable_cores", lambda: 2)
    subs = tmp_path / "subs"
    subs.mkdir()
    for name in ("a", "b"):
        (subs / f"{name}.cu").write_bytes((ROOT / "reference/level2/wrong/does_not_compile.cu").read_bytes())
    out = tmp_path / "out"
    batch.run_batch(ROOT / "exercises/level2", subs, out, batch.Options(backend="emu", workers=workers))
    assert len(submitted) == streamed
    assert sorted(p.name for p in (out / "reports").glob("*.html")) == ["a.html", "b.html"]


def test_on_the_emulator_the_pages_are_shared_at_the_end_once_a_slot_falls_idle(tmp_path, monkeypatch):
    """Every core grades, so no page is drawn beside the gradings; the writer starts when a slot
    falls idle (fewer gradings left than slots) and then draws from the last student back while the
    batch's own process draws from the first. Every page is written, as write_reports alone writes it."""
    events = []
    out = tmp_path / "out"

    class Recording(batch_run.PageStream):
        def warm(self):
            events.append(("warm", len(list((out / "results").glob("*.json")))))
            super().warm()

        def submit(self, entry):
            events.append(("page", entry.student))
            super().submit(entry)

    monkeypatch.setattr(batch_run, "PageStream", Recording)
    monkeypatch.setattr(math_threads, "usable_cores", lambda: 2)
    subs = tmp_path / "subs"
    subs.mkdir()
    names = [f"s{i}" for i in range(5)]
    for name in names:
        (subs / f"{name}.cu").write_bytes((ROOT / "reference/level2/wrong/does_not_compile.cu").read_bytes())
    batch.run_batch(ROOT / "exercises/level2", subs, out, batch.Options(backend="emu", workers=2))
    assert events[0] == ("warm", 4)  # after the fourth result: one grading left for two slots
    assert events[1:] == [("page", name) for name in reversed(names)]
    pages = {p.name: p.read_text() for p in (out / "reports").glob("*.html")}
    assert sorted(pages) == [f"{name}.html" for name in names]
    for p in (out / "reports").glob("*.html"):
        p.unlink()
    from grader.report import class_page

    exercise, entries = load(ROOT / "exercises/level2"), intake.collect(subs, tmp_path / "scratch")
    rows, stale = record.read_rows(out, entries)
    class_page.write_reports(out, exercise, entries, record.summarize(rows, entries, exercise, stale))
    assert {p.name: p.read_text() for p in (out / "reports").glob("*.html")} == pages


def test_a_second_batch_on_the_same_folder_is_refused(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    held = record.lock_folder(out)
    try:
        with pytest.raises(UsageError, match="another `grade batch`"):
            batch.run_batch(ROOT / "exercises/level2", ROOT / "reference/level2/wrong", out, batch.Options(backend="emu"))
    finally:
        held.close()


def class_folder(folder: Path) -> dict[str, str]:
    """30+ submissions under student names; returns the expected status of the ones that are certain."""
    folder.mkdir()
    expected = {}
    for i in range(6):
        (folder / f"ref_{i:02d}.cu").write_bytes(SOLUTION.read_bytes())
        expected[f"ref_{i:02d}"] = "graded"
    for i in range(5):
        (folder / f"skel_{i:02d}.cu").write_bytes(SKELETON.read_bytes())
        expected[f"skel_{i:02d}"] = "graded"
    for path in WRONG:
        (folder / f"wrong_{path.stem}.cu").write_bytes(path.read_bytes())
    expected["wrong_does_not_compile"] = "compile-error"
    (folder / "empty.cu").write_bytes(b"")
    (folder / "binary.cu").write_bytes(bytes(range(256)) * 8)
    (folder / "latin1.cu").write_bytes("// caf\xe9 au lait\n".encode("latin-1") + SOLUTION.read_bytes())
    expected.update({"empty": "compile-error", "binary": "compile-error", "latin1": "compile-error"})
    (folder / "hang.cu").write_text(hang_source())
    expected["hang"] = "graded"  # its launches stop at their budget: a verdict in seconds, not a timeout
    flood = SOLUTION.read_text().replace("    float acc", '    for (int i = 0; i < 200; ++i) printf("flood %d\\n", i);\n    float acc', 1)
    (folder / "flood.cu").write_text(flood)
    (folder / "Zoë Smith.cu").write_text("// all my own work\n" + SOLUTION.read_text().replace("    ", "\t"))
    expected["Zo_Smith"] = "graded"
    (folder / "in_a_folder").mkdir()
    (folder / "in_a_folder" / "kernel.cu").write_bytes(SOLUTION.read_bytes())
    expected["in_a_folder"] = "graded"
    (folder / "two_files").mkdir()
    (folder / "two_files" / "a.cu").write_bytes(SOLUTION.read_bytes())
    (folder / "two_files" / "b.cu").write_bytes(SKELETON.read_bytes())
    expected["two_files"] = "compile-error"
    return expected


@pytest.mark.slow
def test_class_of_30_killed_half_way_resumes_without_losing_or_duplicating_rows(tmp_path):
    subs = tmp_path / "subs"
    expected = class_folder(subs)
    entries = intake.collect(subs, tmp_path / "scratch")
    students = [e.student for e in entries]
    assert len(students) >= 30
    out = tmp_path / "out"
    args = [sys.executable, "-m", "grader", "batch", "exercises/level2", str(subs), "--out", str(out), "--backend", "emu",
            "--workers", "2", "--timeout", "45", "--seed", "7"]

    first = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while len(list((out / "results").glob("*.json"))) < 8 and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.2)
    finally:
        first.kill()  # SIGKILL: no cleanup at all; its children are orphaned mid-grade
        first.wait()
    done_before = {p.name: p.read_bytes() for p in (out / "results").glob("*.json")}
    assert 8 <= len(done_before) < len(students)
    assert not (out / "grades.csv").exists()  # an unfinished batch never leaves a gradebook that looks complete

    started = time.monotonic()
    second = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=420)
    assert second.returncode == 0, second.stderr
    print(f"resumed batch took {time.monotonic() - started:.0f} s")
    kept = {name for name in done_before
            if record.batch_info(out / "results" / name)["status"] != "grader-error" and name != "two_files.json"}
    assert f"{len(kept)} already graded" in second.stderr
    for name in kept:
        assert (out / "results" / name).read_bytes() == done_before[name], f"{name} was graded again"

    rows = read_csv(out / "grades.csv")
    header, maxima, body = rows[0], rows[1], rows[2:]
    ids = [r[0] for r in body]
    assert ids == students and len(set(ids)) == len(ids)  # every student once, none missing, none doubled
    assert maxima[0] == "(max)" and float(maxima[1]) == load(ROOT / "exercises/level2").spec.max_score
    status = {r[0]: r[header.index("status")] for r in body}
    for student, want in expected.items():
        assert status[student] == want, (student, status[student])
    assert set(status.values()) <= set(STATUSES)
    hang = json.loads((out / "results" / "hang.json").read_text())
    assert re.search(r"did not finish within [\d,]+ times the reference", json.dumps(hang["tests"]))
    for student in students:
        doc = json.loads((out / "results" / f"{student}.json").read_text())
        validate(doc)
        assert doc["extra_data"]["batch"]["student"] == student
    ref = next(r for r in body if r[0] == "ref_00")
    tests = range(header.index("scaled from") + 1, header.index("status"))
    # Full marks: every test that ran is at its maximum, and the checks that could not run (no GPU)
    # left the denominator, so the total is the exercise's maximum.
    assert all(float(ref[i]) == float(maxima[i]) for i in tests if ref[i] != "")
    assert float(ref[1]) == float(maxima[1]) and ref[-1] == "Performance"
    summary = (out / "summary.txt").read_text()
    groups = {line.split(":")[0].strip(): line.split(":")[1].strip().split(", ") for line in summary.splitlines()
              if line.strip().startswith("identical to")}
    assert sorted(groups["identical to the reference solution"]) == sorted(["Zo_Smith", "in_a_folder", *(f"ref_{i:02d}" for i in range(6))])
    assert sorted(groups["identical to the unmodified skeleton"]) == [f"skel_{i:02d}" for i in range(5)]

    # grades.csv is derived: delete it and the same command rebuilds it without grading anyone.
    (out / "grades.csv").unlink()
    third = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert third.returncode == 0 and read_csv(out / "grades.csv") == rows
    redone = sum(1 for e in entries if e.source is None)  # rows without a .cu are rebuilt (instant), the rest reused
    assert f"graded {redone} now, {len(students) - redone} unchanged" in third.stdout


def test_ray_without_ray_installed_is_a_clear_usage_error(monkeypatch):
    """--ray needs the optional extra; without it the message says how to install it."""
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    monkeypatch.delitem(sys.modules, "grader.staff.batch.ray", raising=False)
    with pytest.raises(UsageError, match=r"pip install 'kernel-grader\[ray\]'"):
        batch_run.ray_executor(batch.Options(backend="emu", ray=""))


@pytest.mark.parametrize(("extra", "ray"), [((), None), (("--ray",), ""), (("--ray", "ray://head:10001"), "ray://head:10001")])
def test_ray_option_reaches_the_batch(tmp_path, monkeypatch, extra, ray):
    """--ray alone means Ray's default address, --ray ADDRESS that cluster, no --ray this machine."""
    from click.testing import CliRunner

    from grader.cli import main

    seen = {}

    def fake_run_batch(exercise_dir, submissions, out, options, **kwargs):
        seen["options"] = options
        raise KeyboardInterrupt  # stop here: only the options are under test

    monkeypatch.setattr(batch, "run_batch", fake_run_batch)
    subs = tmp_path / "subs"
    subs.mkdir()
    result = CliRunner().invoke(main, ["batch", str(ROOT / "exercises/level2"), str(subs), "--out", str(tmp_path / "out"), *extra])
    assert result.exit_code == 130, result.output
    assert seen["options"].ray == ray


@pytest.mark.slow
def test_copies_of_one_file_get_one_score_and_one_set_of_verdicts(tmp_path):
    """Five copies of every level2 wrong file, graded side by side: each copy of a file gets the
    same score and the same verdicts (seeds come from the content, races score by rule)."""
    subs = tmp_path / "subs"
    subs.mkdir()
    originals = {}
    for path in sorted((ROOT / "reference/level2/wrong").glob("*.cu")):
        for k in range(5):
            (subs / f"{path.stem}_{k}.cu").write_bytes(path.read_bytes())
            originals[f"{path.stem}_{k}"] = path.stem
    out = tmp_path / "out"
    proc = run_cli("batch", "exercises/level2", str(subs), "--out", str(out), "--backend", "emu", timeout=900)
    assert proc.returncode == 0, proc.stderr
    seen: dict[str, tuple] = {}
    for student, original in originals.items():
        doc = json.loads((out / "results" / f"{student}.json").read_text())
        verdicts = (doc["score"], tuple((t["name"], t["score"], t["status"]) for t in doc["tests"]), doc["extra_data"]["seeds"]["base"])
        assert seen.setdefault(original, verdicts) == verdicts, f"{student} differs from another copy of {original}.cu"


def test_a_batch_closes_its_slots_at_once():
    """Each slot's close waits for its processes (a GPU worker's exit, for its CUDA context to be torn
    down): the slots' waits overlap instead of adding up."""
    import threading

    class Slot:
        inside = 0
        most = 0
        lock = threading.Lock()

        def close(self):
            with Slot.lock:
                Slot.inside += 1
                Slot.most = max(Slot.most, Slot.inside)
            time.sleep(0.3)
            with Slot.lock:
                Slot.inside -= 1

    began = time.perf_counter()
    local._close_slots([Slot() for _ in range(6)])
    assert Slot.most == 6 and time.perf_counter() - began < 1.2
    local._close_slots([])  # no warm slots: nothing to do
