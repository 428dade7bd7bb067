"""Python exercises: the value codec, the walled-off child, grading, and exercises/lesson_numpy."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from grader import api
from grader.pyexercise import values as pyvalues
from grader.exercise import load
from grader.pyexercise.grade import hide_paths, public_material
from grader.pyexercise.sandbox import Worker, namespaces_available
from grader.results import to_json, validate
from grader.spec import Limits
from grader.ungraded import ungraded_document

ROOT = Path(__file__).resolve().parent.parent
LESSON = ROOT / "exercises" / "lesson_numpy"
REFERENCE = ROOT / "reference" / "lesson_numpy"


class Point:
    def __init__(self, x):
        self.x = x


# --------------------------------------------------------------------------------------------- values

@pytest.mark.parametrize("value", [None, True, 3, -2.5, float("inf"), "text", [1, [2]], (1, (2.0, "a")), {"k": [1, 2]},
                                   np.arange(6, dtype=np.int32).reshape(2, 3), np.float32(1.5), np.int64(7), 1 + 2j])
def test_values_round_trip_through_json(value):
    doc = json.loads(json.dumps(pyvalues.encode(value)))
    back = pyvalues.decode(doc)
    if isinstance(value, np.ndarray):
        assert back.dtype == value.dtype and np.array_equal(back, value)
    else:
        assert back == value and type(back) in (type(value), float, int, bool)


def test_nan_round_trips():
    assert np.isnan(pyvalues.decode(json.loads(json.dumps(pyvalues.encode(float("nan"))))))


@pytest.mark.parametrize("value", [lambda: 1, np.array([object()]), Point(1), {1: 2}, print])
def test_what_may_not_cross_is_refused(value):
    with pytest.raises(pyvalues.NotAValue):
        pyvalues.encode(value)


def test_public_objects_cross_by_name_only():
    public = {f"{Point.__module__}.Point": Point}
    doc = pyvalues.encode(Point(np.arange(3)), public=public)
    back = pyvalues.decode(doc, {k: pyvalues.empty_instance(v) for k, v in public.items()})
    assert isinstance(back, Point) and np.array_equal(back.x, np.arange(3))
    with pytest.raises(pyvalues.NotAValue):
        pyvalues.decode(doc, {})  # a class the grader did not name is never built
    for bad in ({"__ndarray__": "AAAA", "dtype": "object", "shape": [1]}, {"__ndarray__": "AAAA", "dtype": "int32", "shape": [5]},
                {"__object__": "os.system", "state": {}}, {"__weird__": 1}, {}):
        with pytest.raises(pyvalues.NotAValue):
            pyvalues.decode(bad, {})


def test_take_back_brings_back_only_what_the_exercise_lets_a_call_change():
    from grader.pyexercise.arguments import take_back

    changes = {f"{Point.__module__}.Point": ("x",)}
    point, arr = Point(1), np.zeros(3)
    assert take_back((point, arr), [Point(9), np.zeros(3)], changes) == "" and point.x == 9
    assert take_back((arr,), [np.ones(3)], changes) == "it changed argument 1" and arr.tolist() == [0, 0, 0]
    mover = Point(1)
    mover.y = np.zeros(2)
    left = Point(1)
    left.y = np.ones(2)
    assert take_back((mover,), [left], changes) == "it changed argument 1's y" and mover.y.tolist() == [0, 0]
    assert take_back(([1, 2], 3), [[1, 2], 3], {}) == ""
    assert take_back((np.arange(3),), [np.arange(3).astype(np.float64)], {}) == "it changed argument 1"


# --------------------------------------------------------------------------------------------- the child

SOURCE = '''
import numpy as np
print("printed by the student")
def double(x, mem):
    mem.reads += 1
    return np.asarray(x) * 2
def boom():
    return 1 / 0
def slow():
    while True:
        pass
'''


def test_worker_returns_values_and_argument_state():
    exercise = load(LESSON)
    material = public_material(exercise)
    from lesson import CountingMemory  # noqa: E402 - registered by public_material under its own name

    limits = dataclasses.replace(Limits(), run_seconds=20)
    with Worker(SOURCE, functions=("double", "boom", "slow", "absent"), public_files=material.files, limits=limits,
                hide=hide_paths(exercise), public_classes=material.classes, changes=exercise.spec.changes) as worker:
        assert worker.loaded.ok and worker.loaded.defined == {"double": True, "boom": True, "slow": True, "absent": False}
        mem = CountingMemory(np.eye(2), np.eye(2))
        out = worker.call("double", ([1, 2], mem))
        assert out.ok and out.value.tolist() == [2, 4] and mem.reads == 1  # the count it may change comes back
        bad = worker.call("boom", ())
        assert not bad.ok and "ZeroDivisionError" in bad.error and bad.line == 8
        assert "does not define absent" in worker.call("absent", ()).error
        hung = worker.call("slow", (), timeout=1)
        assert not hung.ok and "time limit" in hung.error
        worker.restart()
        assert worker.call("double", ([3], mem)).value.tolist() == [6]
        assert "printed by the student" in worker.output


def test_namespaces_are_probed_without_failing():
    assert namespaces_available() in (True, False)


def test_a_module_that_does_not_load_is_not_started_again():
    exercise = load(LESSON)
    material = public_material(exercise)
    with Worker("import os\nos._exit(3)\n", functions=("f",), public_files=material.files, limits=Limits(),
                hide=hide_paths(exercise), public_classes=material.classes) as worker:
        assert not worker.loaded.ok and "status 3" in worker.loaded.error
        first = worker.proc
        assert worker.restart() is worker.loaded and worker.proc is first  # no second child
        assert not worker.call("f", ()).ok


def test_short_output_is_shown_while_the_child_lives():
    exercise = load(LESSON)
    material = public_material(exercise)
    with Worker("print('hello from the student')\ndef f():\n    return 1\n", functions=("f",), public_files=material.files,
                limits=Limits(), hide=hide_paths(exercise), public_classes=material.classes) as worker:
        assert worker.call("f", ()).value == 1
        import time

        for _ in range(100):  # the reader thread takes what has arrived, however little
            if "hello from the student" in worker.output:
                break
            time.sleep(0.05)
        assert "hello from the student" in worker.output


# --------------------------------------------------------------------------------------------- grading lesson_numpy

def test_reference_gets_full_marks_with_tags():
    report = api.grade(LESSON, REFERENCE / "solution.py", seed=1)
    assert report.score == report.max_score == 100 and all(t.passed for t in report.tests)
    document = to_json(report)
    validate(document)
    tags = {t["name"]: t["tags"] for t in document["tests"]}
    assert tags["sectors_touched()"] == ["correctness", "traffic"] and tags["Loads"] == ["compile"]
    assert document["extra_data"]["backend"] == "python"


def test_skeleton_loads_and_scores_zero():
    report = api.grade(LESSON, LESSON / "skeleton.py", seed=1)
    assert report.tests[0].passed and report.score == 0
    assert "NotImplementedError: TODO: sectors_touched" in report.tests[1].output


def test_a_wrong_file_fails_only_what_it_names():
    report = api.grade(LESSON, REFERENCE / "wrong" / "tiled_forgets_partial_tile.py", seed=1)
    failed = {t.name for t in report.tests if not t.passed}
    assert failed == {"matmul_tiled()"}
    text = next(t.output for t in report.tests if t.name == "matmul_tiled()")
    assert "hidden test test_tiled[10-7-9-4]" in text and "reads" in text or "A @ B" in text


def test_syntax_error_and_missing_function(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("def sectors_touched(a):\n    return (\n")
    report = api.grade(LESSON, broken, seed=1)
    assert report.score == 0 and "does not load" in report.tests[0].output and report.tests[0].output.endswith("(at broken.py:2)")
    assert "submission.py" not in report.tests[0].output
    partial = tmp_path / "partial.py"
    partial.write_text((REFERENCE / "solution.py").read_text().replace("def crossover_n(", "def crossover(", 1))
    report = api.grade(LESSON, partial, seed=1)
    assert report.tests[0].passed and "does not define crossover_n()" in report.tests[0].output
    assert not next(t for t in report.tests if t.name == "crossover_n()").passed
    assert report.score == 90


def test_ungraded_document_for_a_python_exercise_is_schema_valid():
    document = ungraded_document(load(LESSON), "No file was submitted.")
    validate(document)
    assert document["score"] == 0 and len(document["tests"]) == 8


def test_lesson_has_two_wrong_files_per_function_and_awkward_hidden_inputs():
    spec = load(LESSON).spec
    from grader.staff.expectation import read_expectation

    named = [read_expectation(p).expect for p in (REFERENCE / "wrong").glob("*.py")]
    assert all(named.count(fn) >= 2 for fn in spec.names), named
    hidden = "\n".join(p.read_text() for p in (LESSON / "tests").glob("test_*.py"))
    for awkward in ("4 + 4 * t", "[31, 32, 33, 48, 64, 65]", "(10, 7, 9, 4)", "(33, 31, 32)"):
        assert awkward in hidden, awkward


WALLS = """
import os, socket
def probe(reference, tests):
    seen = {}
    for name, path in (("reference", reference), ("tests", tests), ("proc", "/proc"), ("tmp", "/tmp")):
        try:
            seen[name] = sorted(os.listdir(path))
        except OSError as exc:
            seen[name] = type(exc).__name__
    try:
        socket.create_connection(("127.0.0.1", 9), timeout=2)
        seen["network"] = "connected"
    except OSError as exc:
        seen["network"] = type(exc).__name__
    return seen
"""


@pytest.mark.parametrize("no_namespaces", [False, True], ids=["namespaces", "landlock"])
def test_the_kernel_alone_hides_the_exercise_the_grader_and_the_network(no_namespaces, monkeypatch):
    import socket

    from grader.run.jail import layers

    walls = layers._probe(no_namespaces)
    if walls.namespaces == no_namespaces or not walls.kernel_wall:
        pytest.skip(f"not this wall here: {walls.describe()}; {walls.missing}")
    monkeypatch.setattr(layers, "current", lambda: walls)
    listener = socket.create_server(("127.0.0.1", 0))  # a live listener: a refused empty port proves nothing
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    exercise = load(LESSON)
    material = public_material(exercise)
    source = WALLS.replace("9), timeout=2", f"{port}), timeout=2")
    with Worker(source, functions=("probe",), public_files=material.files, limits=Limits(), hide=hide_paths(exercise),
                public_classes=material.classes, audit=False) as worker:  # the audit hook off: the kernel alone
        assert worker.isolation == walls.describe()
        out = worker.call("probe", (str(REFERENCE), str(LESSON / "tests")))
        assert out.ok, out.error
    seen = out.value
    for name in ("reference", "tests"):
        assert seen[name] in ("FileNotFoundError", "PermissionError"), seen
    assert seen["tmp"] in ([], "PermissionError", "FileNotFoundError"), seen  # other gradings' folders
    assert seen["proc"] == "PermissionError" or set(seen["proc"]) <= {"1", "2", "3", "self", "thread-self"} | {
        p for p in seen["proc"] if not p.isdigit()}, seen
    assert seen["network"] != "connected", seen
    with pytest.raises(OSError):
        listener.accept()
    listener.close()


@pytest.mark.slow
def test_batch_and_gradescope_grade_python_submissions(tmp_path):
    import os
    import shutil
    import subprocess
    import sys
    import zipfile

    from grader.staff import batch, gradescope

    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(REFERENCE / "solution.py", subs / "alice.py")
    shutil.copy(REFERENCE / "wrong" / "crossover_rounds_down.py", subs / "bob.py")
    (subs / "carol").mkdir()
    (subs / "carol" / "notes.txt").write_text("no code here")
    out = tmp_path / "out"
    batch.run_batch(LESSON, subs, out, batch.Options(backend="emu", workers=2))
    docs = {p.stem: json.loads(p.read_text()) for p in (out / batch.RESULTS).glob("*.json")}
    for doc in docs.values():
        validate(doc)
    assert docs["alice"]["score"] == 100 and 0 < docs["bob"]["score"] < 100 and docs["carol"]["score"] == 0
    assert [t["name"] for t in docs["bob"]["tests"] if t["status"] == "failed"] == ["crossover_n()"]
    assert "No .cu file or notebook" in docs["carol"]["tests"][0]["output"]

    bundle = gradescope.build_bundle(LESSON, tmp_path / "autograder.zip").path
    ag = tmp_path / "ag"
    with zipfile.ZipFile(bundle) as zf:
        zf.extractall(ag / "source")
        assert json.loads(zf.read("bundle.json"))["filename"] == "submission.py"
        assert "reference/lesson_numpy/solution.py" in zf.namelist()
    shutil.copy(ag / "source" / "run_autograder", ag / "run_autograder")
    (ag / "submission").mkdir()
    shutil.copy(REFERENCE / "solution.py", ag / "submission" / "submission.py")
    env = {**os.environ, gradescope.ROOT_VARIABLE: str(ag), gradescope.PYTHON_VARIABLE: sys.executable}
    proc = subprocess.run(["bash", str(ag / "run_autograder")], env=env, capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((ag / "results" / "results.json").read_text())
    validate(doc)
    assert doc["score"] == 100 and doc["extra_data"]["backend"] == "python"


def test_a_garbled_or_deeply_nested_reply_ends_the_child_with_a_verdict():
    exercise = load(LESSON)
    material = public_material(exercise)
    source = """
import os
def nested():
    for fd in range(3, 12):  # the worker's copy of its reply channel is one of these
        try:
            os.write(fd, b"[" * 200000 + b"]" * 200000 + b"\\n")
        except OSError:
            pass
    return 1
"""
    with Worker(source, functions=("nested",), public_files=material.files, limits=Limits(), hide=hide_paths(exercise),
                public_classes=material.classes, audit=False) as worker:
        out = worker.call("nested", (), timeout=10)
        assert not out.ok and "grader's channel" in out.error


def test_gradings_in_threads_each_get_the_public_classes(tmp_path):
    """Two gradings in threads of one process load the public modules at once: neither may reuse the
    other's module while it is still executing (it would miss the classes the codec must know, and a
    check's CountingMemory "cannot be returned")."""
    import shutil
    import sys
    from concurrent.futures import ThreadPoolExecutor

    exercise_dir = tmp_path / "lesson_numpy"
    shutil.copytree(ROOT / "exercises" / "lesson_numpy", exercise_dir, ignore=shutil.ignore_patterns("__pycache__"))
    lesson = exercise_dir / "lesson.py"
    # A slow first line: the module is in sys.modules, half executed, for a moment.
    lesson.write_text("import time\ntime.sleep(0.5)\n" + lesson.read_text())
    exercise = load(exercise_dir)
    saved = {k: sys.modules.pop(k) for k in ("lesson", "checks") if k in sys.modules}
    try:
        with ThreadPoolExecutor(2) as pool:
            materials = list(pool.map(lambda _: public_material(exercise), range(2)))
    finally:
        for k in ("lesson", "checks"):
            sys.modules.pop(k, None)
        sys.modules.update(saved)
    for material in materials:
        assert "lesson.CountingMemory" in material.classes


def test_escapes_the_child_sends_never_reach_the_results(tmp_path):
    """The worker cleans exception texts, but the worker runs in the student's process: a submission
    that replaces its cleaner still gets inert text in the results (the grader cleans again)."""
    sub = tmp_path / "escapes.py"
    sub.write_text('import sys\nsys.modules["__main__"]._why = lambda exc: "\\x1b[2J\\x1b[32mPASS\\x1b]52;c;eA==\\x07"\n'
                   'def sectors_touched(a):\n    raise ValueError("x")\n')
    report = api.grade(LESSON, sub, seed=1)
    text = json.dumps(to_json(report))
    assert "\\u001b" not in text and "\\u0007" not in text and "?[2J" in text
