"""The Python hostile corpus (tests/hostile_py/): malicious lesson_numpy submissions, each a clear failing verdict.

Every case is graded against a copy of exercises/lesson_numpy (and its reference) whose limits are
lowered so that endless loops and floods end in seconds. For every case: a schema-valid results
JSON within the time bound, the functions expected.toml names failed with words a student can act
on, every other function passed, nothing of the reference, the wrong files or the hidden tests in
any output, and nothing left behind by a shell escape or a fork.
"""
from __future__ import annotations

import json
import re
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from grader import api, results
from grader.exercise import load
from grader.pyexercise.sandbox import namespaces_available
from grader.pyexercise.student_bundle import hidden_material_in
from grader.spec import tomllib

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "hostile_py"
EXPECTED = tomllib.loads((CORPUS / "expected.toml").read_text(encoding="utf-8"))
RUN_SECONDS = 15
CALL_SECONDS = 3
BOUND_SECONDS = 2 * RUN_SECONDS + 30  # the public checks' child, then the hidden tests' (side by side), and start-up
SENTINELS = ("/tmp/kernel-grader-hostile-shell", "/tmp/kernel-grader-hostile-forked")


@pytest.fixture(scope="module", params=["namespaces", "no-namespaces"])
def graded(request, tmp_path_factory) -> dict[str, tuple[dict, float]]:
    """Every case graded once (two at a time) per isolation: with user/net/mount namespaces where the
    machine has them, and as on a machine without (the folder and the audit hook alone)."""
    import os

    from grader.pyexercise.sandbox import NO_NAMESPACES_VARIABLE

    if request.param == "no-namespaces":
        os.environ[NO_NAMESPACES_VARIABLE] = "1"  # children (the hidden tests' pytest) inherit it
        request.addfinalizer(lambda: os.environ.pop(NO_NAMESPACES_VARIABLE, None))
    for sentinel in SENTINELS:
        Path(sentinel).unlink(missing_ok=True)
    course = tmp_path_factory.mktemp("course")
    exercise = course / "exercises" / "lesson_numpy"
    shutil.copytree(ROOT / "exercises" / "lesson_numpy", exercise, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "reference" / "lesson_numpy", course / "reference" / "lesson_numpy",
                    ignore=shutil.ignore_patterns("__pycache__"))
    spec = (exercise / "spec.toml").read_text()
    spec = re.sub(r"(?m)^points = (\d+)$", rf"points = \1\ncall_seconds = {CALL_SECONDS}", spec)
    spec = spec.replace("run_seconds = 60", f"run_seconds = {RUN_SECONDS}\nmemory_bytes = {768 * 1024**2}")
    (exercise / "spec.toml").write_text(spec)
    solution = (ROOT / "reference" / "lesson_numpy" / "solution.py").read_text()
    skeleton = (ROOT / "exercises" / "lesson_numpy" / "skeleton.py").read_text()
    files = course / "submissions"
    files.mkdir()
    for name in EXPECTED:
        text = (CORPUS / name).read_text()
        # The checkout the hostile code aims at is the copy's: hidden from it just the same.
        text = text.replace("@SOLUTION@", solution).replace("@SKELETON@", skeleton).replace("@ROOT@", str(course))
        (files / name).write_text(text)

    def one(name: str) -> tuple[str, tuple[dict, float]]:
        start = time.monotonic()
        report = api.grade(exercise, files / name, seed=1)
        return name, (results.to_json(report), time.monotonic() - start)

    with ThreadPoolExecutor(max_workers=2) as pool:
        done = dict(pool.map(one, sorted(EXPECTED)))
    for document, _ in done.values():  # the isolation asked for is the one that applied
        want = "audit hook" if request.param == "no-namespaces" else ("namespaces" if namespaces_available() else "audit hook")
        assert want in document["extra_data"]["device"]
    return done


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_hostile_python_submission(graded, name):
    expect = EXPECTED[name]
    document, seconds = graded[name]
    results.validate(document)
    assert seconds < BOUND_SECONDS, f"{name} took {seconds:.0f} s"
    exercise = load(ROOT / "exercises" / "lesson_numpy")
    tests = {t["name"]: t for t in document["tests"]}
    functions = {f"{fn}()": fn for fn in exercise.spec.names}
    failed = {functions[n] for n, t in tests.items() if n in functions and t["status"] == "failed"}
    if expect.get("full"):
        assert not failed and document["score"] == exercise.spec.max_score, [t["output"] for t in document["tests"]]
    else:
        want = set(exercise.spec.names) if expect["fails"] == ["*"] else set(expect["fails"])
        assert failed == want, (failed, want, document["output"])
        assert document["score"] < exercise.spec.max_score
    if expect.get("load") is False:
        assert tests["Loads"]["status"] == "failed"
    text = "\n".join(t["output"] for t in document["tests"]) + "\n" + document["output"]
    for word in expect.get("words", []):
        assert word in text, (word, text[:3000])
    leaks = hidden_material_in(json.dumps(document) + "\n" + text, exercise)
    assert not leaks, leaks
    for sentinel in SENTINELS:
        assert not Path(sentinel).exists(), f"{sentinel}: a shell escape or fork ran"
    assert len(document["output"]) < 20_000  # printed floods stay capped
