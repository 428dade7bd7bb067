"""The level2 exercise graded on a real GPU: reference full marks, skeleton zero, each wrong file caught."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from grader.api import grade

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]
EXERCISE = ROOT / "exercises" / "level2"
WRONG = sorted((ROOT / "reference" / "level2" / "wrong").glob("*.cu"))


def _by_category(report):
    return {t.category: t for t in report.tests}


def test_reference_scores_full_marks():
    report = grade(EXERCISE, ROOT / "reference/level2/solution.cu", backend="gpu", seed=1)
    failed = [(t.name, t.output) for t in report.tests if not t.passed]
    assert not failed
    assert report.score == pytest.approx(report.max_score, rel=0.02)


def test_skeleton_scores_zero_on_correctness():
    report = grade(EXERCISE, EXERCISE / "skeleton.cu", backend="gpu", seed=2)
    assert _by_category(report)["correctness"].score == 0


@pytest.mark.parametrize("path", WRONG, ids=[p.stem for p in WRONG])
def test_wrong_submission_fails_its_category(path):
    expected = re.search(r"//\s*expect:\s*([\w-]+)", path.read_text()).group(1)
    report = grade(EXERCISE, path, backend="gpu", seed=3)
    test = _by_category(report).get(expected)
    assert test is not None and not test.passed, f"{path.name} should fail {expected}: {[(t.category, t.passed, t.output[:200]) for t in report.tests]}"


def test_a_batch_profiles_in_groups_and_each_submission_gets_its_lone_counts(tmp_path):
    """`grade batch` profiles many submissions per ncu run (grader.run.parent.profile_broker): every counter
    verdict, down to the counts, is the one the same file gets graded alone with the same seed."""
    import json

    from grader.staff import batch
    from grader.results import to_json

    files = [ROOT / "reference/level2/solution.cu"] + [p for p in WRONG if p.stem in ("no_tiling", "unguarded_loads")]
    subs = tmp_path / "subs"
    subs.mkdir()
    for path in files:
        for k in range(3):
            (subs / f"{path.stem}_{k}.cu").write_bytes(path.read_bytes())
    out = tmp_path / "out"
    batch.run_batch(EXERCISE, subs, out, batch.Options(backend="gpu", per_gpu=9, profile_group=8, seed=1))
    stages = {s["name"] for s in json.loads((out / "results" / "solution_0.json").read_text())["extra_data"]["stages"]}
    assert "ncu (batch profiler)" in stages and "ncu" not in stages  # the profiler answered; no ncu run of its own

    def counters(doc):
        return {t["name"]: (t["score"], t["status"], t["extra_data"].get("submission"), t["extra_data"].get("reference"))
                for t in doc["tests"] if t["tags"][0] in ("traffic", "bank-conflicts")}

    for path in files:
        alone = counters(json.loads(json.dumps(to_json(grade(EXERCISE, path, backend="gpu", seed=1)))))
        assert alone
        for k in range(3):
            assert counters(json.loads((out / "results" / f"{path.stem}_{k}.json").read_text())) == alone, f"{path.stem}_{k}"


def test_a_warm_worker_leaves_nothing_of_a_job_in_the_device_memory_it_reuses(tmp_path):
    """A batch slot's warm GPU worker (grader.run.parent.gpu_worker) runs one grading's job after
    another in one CUDA context. Every block of device memory the first job used and gave back to
    the pool, where the next submission's kernel could look, must hold zeros only: its inputs, its
    outputs and the reference solution's outputs (correctness, the launch budgets' reference launches,
    and the timings of the submission, the reference and cuBLAS)."""
    import gc
    import json

    import cupy as cp
    import numpy as np

    from grader.backends import open_device
    from grader.compile import compile_source
    from grader.exercise import Harness, load
    from grader.run.child import runner
    from grader.run.child.timing import _ScrubbedMemory
    from grader.run.parent.device_probe import probe
    from grader.run.tasks import Task

    tracked = _ScrubbedMemory(cp)  # used only for its record of every block it hands out (never scrubbed here)
    cp.cuda.set_allocator(tracked.malloc)
    try:
        exercise = load(EXERCISE)
        compiled = compile_source((ROOT / "reference/level2/solution.cu").read_text(), "solution.cu", probe().arch)
        cubin = tmp_path / "solution.cubin"
        cubin.write_bytes(compiled.cubin)
        free = tmp_path / "gpu-free"
        free.touch()
        tasks = [Task(id="correctness:0", kind="run", backend="gpu", sizes={"N": 100}, seeds=(1, 2)),
                 Task(id="race:0", kind="run", backend="gpu", sizes={"N": 129}, seeds=(3, 3, 3))]
        tasks.append(Task(id="time", kind="time", backend="gpu", rivals=("reference", "baseline"), sizes={"N": 256},
                          seeds=(4,), repeats=3, after=str(free)))
        job = {"exercise": str(EXERCISE), "backend": "gpu", "modules": {"submission": str(cubin), "reference": str(cubin)},
               "results": str(tmp_path / "job.jsonl"), "tasks": [t.to_json() for t in tasks], "budget": True}
        device = open_device("gpu")
        code = runner._run_job(job, job, exercise, Harness(exercise), device, 0.0, release=device.scrub)
        assert code is None
        results = [json.loads(line) for line in (tmp_path / "job.jsonl").read_text().splitlines()]
        assert [r["status"] for r in results] == ["ok"] * len(tasks), results
        device.forget_modules()
        gc.collect()
        cp.cuda.Device().synchronize()
        assert tracked.blocks, "the job allocated nothing through the pool"
        dirty = {}
        for address, size in tracked.blocks.items():
            host = np.empty(size, dtype=np.uint8)
            cp.cuda.runtime.memcpy(host.ctypes.data, address, size, cp.cuda.runtime.memcpyDeviceToHost)
            if host.any():
                dirty[hex(address)] = (size, int(np.count_nonzero(host)))
        assert not dirty, f"blocks left with data in them (address: bytes, non-zero bytes): {dirty}"
    finally:
        cp.cuda.set_allocator(cp.get_default_memory_pool().malloc)


def test_gradings_that_share_a_warm_worker_score_what_each_file_scores_alone(tmp_path):
    """Two slots, three gradings each: each slot's later gradings launch in the worker its first one
    started. Every copy gets the score and the failed categories its file gets graded alone, and a
    kernel that breaks its CUDA context (a misaligned vector load, at the 9 of its 10 sizes with N >= 8) costs only
    its own grading. The break must be certain: a write far past a buffer (tests/hostile/oob_write_far.cu)
    faults or lands in other memory by luck, alone as in a batch (docs/gpu-evidence.md), so its score
    cannot be the same from one grading to the next."""
    import json

    from grader.staff import batch

    files = [ROOT / "reference/level2/solution.cu", ROOT / "tests/hostile/misaligned_float4.cu"] + \
        [p for p in WRONG if p.stem in ("no_tiling", "unguarded_loads")]
    subs = tmp_path / "subs"
    subs.mkdir()
    names = []
    for k in range(2):
        for path in files:
            names.append((path, f"{path.stem}_{k}"))
            (subs / f"{path.stem}_{k}.cu").write_bytes(path.read_bytes())
    out = tmp_path / "out"
    batch.run_batch(EXERCISE, subs, out, batch.Options(backend="gpu", per_gpu=2, profile_group=0, seed=1))

    def verdict(doc):
        return doc["score"], sorted(t["tags"][0] for t in doc["tests"] if t["status"] == "failed")

    alone = {path: verdict(json.loads(json.dumps(to_json_report(grade(EXERCISE, path, backend="gpu", seed=1))))) for path in files}
    for path, name in names:
        doc = json.loads((out / "results" / f"{name}.json").read_text())
        failed = [(t["name"], t["output"][:1500]) for t in doc["tests"] if t["status"] == "failed"]
        assert verdict(doc) == alone[path], (name, doc.get("extra_data", {}).get("notes"), failed[:3])


def to_json_report(report):
    from grader.results import to_json

    return to_json(report)
