"""A batch of Python submissions isolates students from each other.

One class, graded by `grade batch` two at a time: an honest solution, the skeleton, and students who
try to reach their classmates (read and overwrite the other submissions and the batch's results,
kill the grader and the slots' processes), flood the output, or fork without end. Every honest row
keeps its score, every file the batch was given is unchanged, the results folder holds one document
per student and nothing else, and each attack costs only its own row.
"""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from grader.results import validate
from grader.staff import batch

ROOT = Path(__file__).resolve().parent.parent
LESSON = ROOT / "exercises" / "lesson_numpy"
SOLUTION = (ROOT / "reference" / "lesson_numpy" / "solution.py").read_text()

REACHES_CLASSMATES = SOLUTION + '''

import gc, glob, os, signal, sys

_honest_crossover_n = crossover_n

# The worker's audit hook off first (its rules are the worker's globals and closure cells), so that
# only the kernel's walls stand between this file and its classmates.
sys.modules["__main__"]._BLOCKED_EVENTS = sys.modules["__main__"]._WRITE_EVENTS = ()
for fn in gc.get_objects():
    if type(fn).__name__ == "function" and fn.__name__ == "inside" and fn.__closure__ is None:
        fn.__code__ = (lambda path, roots: True).__code__


def _everything(pattern):
    try:
        return glob.glob(pattern, recursive=True)
    except Exception:  # the hook's Refused, where it is still on: the kernel's answer is the same
        return []


def crossover_n(*args, **kwargs):
    """Overwrites every results document and submission it can find, and kills what it can."""
    for path in _everything("@SUBS@/**") + _everything("@OUT@/**") + _everything("/tmp/**/results*/*.json"):
        try:
            with open(path, "w") as f:
                f.write('{"score": 100}')
        except Exception:
            pass
    for pid in [os.getppid(), *range(2, 4000)]:
        try:
            os.kill(pid, signal.SIGKILL)
        except Exception:
            pass
    return _honest_crossover_n(*args, **kwargs)
'''

FLOODS = SOLUTION + '''

def chain_time(n, k, fused):
    """Floods its output, then answers wrong."""
    while True:
        print("x" * 10000)
'''

BOMBS = SOLUTION + '''

import os


def transpose_tiled(A, T):
    """Forks without end (bounded here), then answers wrong."""
    for _ in range(500):
        try:
            os.fork()
        except OSError:
            break
    return A, 0, 0
'''


def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*"))
            if p.is_file()}


@pytest.mark.slow
def test_a_batch_keeps_students_apart(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    shutil.copy(ROOT / "reference" / "lesson_numpy" / "solution.py", subs / "alice.py")
    shutil.copy(LESSON / "skeleton.py", subs / "bob.py")
    shutil.copy(ROOT / "reference" / "lesson_numpy" / "solution.py", subs / "carol.py")
    (subs / "mallory.py").write_text(REACHES_CLASSMATES.replace("@SUBS@", str(subs)).replace("@OUT@", str(out)))
    (subs / "flo.py").write_text(FLOODS)
    (subs / "bomber.py").write_text(BOMBS)
    before = digest(subs)
    summary = batch.run_batch(LESSON, subs, out, batch.Options(backend="emu", workers=2))
    assert digest(subs) == before  # nobody's submission was touched
    documents = {p.stem: json.loads(p.read_text()) for p in (out / batch.RESULTS).glob("*.json")}
    assert set(documents) == {"alice", "bob", "carol", "mallory", "flo", "bomber"}, sorted(documents)
    assert sorted(p.name for p in (out / batch.RESULTS).iterdir()) == sorted(f"{n}.json" for n in documents)
    for document in documents.values():
        validate(document)
    scores = {name: document["score"] for name, document in documents.items()}
    assert scores["alice"] == scores["carol"] == 100 and scores["bob"] == 0, scores
    failed = {name: sorted(t["name"] for t in document["tests"] if t["status"] == "failed")
              for name, document in documents.items()}
    assert failed["mallory"] == [] and scores["mallory"] == 100, failed  # its own answer is right; its attack did nothing
    assert failed["flo"] == ["chain_time()"] and failed["bomber"] == ["transpose_tiled()"], failed
    assert summary is not None
