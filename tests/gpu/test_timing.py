"""The performance timing on a real GPU (grader.run.child.timing): the submission and its rivals in
turns, the rivals' answers never in device memory while the submission runs, their inputs checked,
and every timed call of the submission's answer checked."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]
EXERCISE = ROOT / "exercises" / "level2"
EMPTY = """extern "C" __global__ void matmul_tiled(const float* A, const float* B, float* C, int N) {}
"""
NAIVE = """extern "C" __global__ void matmul_tiled(const float* A, const float* B, float* C, int N) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= N || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < N; ++k) acc += A[row * N + k] * B[k * N + col];
    C[row * N + col] = acc;
}
"""
# Right at its first three launches, then it returns at once: the launch counter the timing must
# catch. Each block draws a ticket; only the first three launches' tickets are below 3 x the blocks.
COUNTING = """__device__ unsigned int tickets;
extern "C" __global__ void matmul_tiled(const float* A, const float* B, float* C, int N) {
    __shared__ unsigned int ticket;
    if (threadIdx.x == 0 && threadIdx.y == 0) ticket = atomicAdd(&tickets, 1u);
    __syncthreads();
    if (ticket >= 3 * gridDim.x * gridDim.y) return;
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= N || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < N; ++k) acc += A[row * N + k] * B[k * N + col];
    C[row * N + col] = acc;
}
"""


def _cubin(tmp_path: Path, source: str, name: str) -> str:
    from grader.compile import compile_source
    from grader.run.parent.device_probe import probe

    path = tmp_path / f"{name}.cubin"
    path.write_bytes(compile_source(source, f"{name}.cu", probe().arch).cubin)
    return str(path)


def _timing(tmp_path, monkeypatch, submission_source: str, hook, name: str = "submission"):
    """Time `submission_source` against the level2 reference at N = 256, calling
    hook(module, "before" or "after", memory, timed) around every call of every module; the task's result."""
    from grader.backends import open_device
    from grader.exercise import Harness, load
    from grader.run.child import timing
    from grader.run.tasks import Task

    from grader.run.child.cases import CaseSource

    memories, timed = [], {}
    real_memory, real_prepare, real_answers = timing._ScrubbedMemory, timing._prepare, timing._Answers

    def memory(cp):
        memories.append(real_memory(cp))
        return memories[-1]

    def prepare(name, own, *args):
        got = real_prepare(name, own, *args)
        if got is not None and not isinstance(got, str):
            run = got.run

            def watched():
                hook(name, "before", memories[-1], timed)
                run()
                hook(name, "after", memories[-1], timed)
            got = timed[name] = dataclasses.replace(got, run=watched)
        return got

    def answers(*args):
        timed["answers"] = real_answers(*args)
        return timed["answers"]

    monkeypatch.setattr(timing, "_ScrubbedMemory", memory)
    monkeypatch.setattr(timing, "_Answers", answers)
    monkeypatch.setattr(timing, "_prepare", prepare)
    exercise = load(EXERCISE)
    # A file name of its own per source: the device keeps a module loaded by its path.
    modules = {"submission": _cubin(tmp_path, submission_source, name),
               "reference": _cubin(tmp_path, (ROOT / "reference/level2/solution.cu").read_text(), "reference")}
    task = Task(id="time", kind="time", backend="gpu", rivals=("reference", "baseline"), sizes={"N": 256}, seeds=(4,), repeats=3)
    harness = Harness(exercise)
    cases = CaseSource(harness, [(4, {"N": 256}, False)])  # as the runner plans a timing
    try:
        return timing.time_task(task, exercise, harness, open_device("gpu"), modules, cases)
    finally:
        cases.close()


def test_the_rivals_answers_are_nowhere_in_device_memory_when_the_submission_runs(tmp_path, monkeypatch):
    """The submission (a naive kernel) is timed in turns with the reference and cuBLAS. Before each of
    its calls, no block of the timing's memory but the submission's own (its outputs, its checked
    first answer) holds the reference's answer for these inputs: each rival's outputs are zeroed
    after its call."""
    import cupy as cp
    import numpy as np

    from grader.exercise import Harness, load
    from grader.run.child import timing

    exercise = load(EXERCISE)
    inputs = Harness(exercise).make_inputs({"N": 256}, np.random.default_rng(4))
    answer = (inputs["A"].astype(np.float64) @ inputs["B"].astype(np.float64)).astype(np.float32)
    calls, seen = [], []

    def look(module, phase, memory, timed):
        if (module, phase) not in (("submission", "before"), ("reference", "after")):
            return
        cp.cuda.Device().synchronize()
        found = []
        own = timing.address_ranges(timed["submission"].kept + timed["answers"].kept)
        for address, size in memory.blocks.items():
            if any(start < address + size and address < end for start, end in own):
                continue
            host = np.empty(size // 4, dtype=np.float32)
            cp.cuda.runtime.memcpy(host.ctypes.data, address, host.nbytes, cp.cuda.runtime.memcpyDeviceToHost)
            head = host[:answer.size]
            if head.size == answer.size and np.allclose(head, answer.ravel(), rtol=1e-4, atol=1e-4):
                found.append(hex(address))
        (calls if module == "submission" else seen).append(found)

    result = _timing(tmp_path, monkeypatch, NAIVE, look)
    assert result["status"] == "ok", result
    assert set(result["data"]["median_ms"]) == {"submission", "reference", "baseline"}
    assert len(calls) == 1 + 3 + 3  # the checked call, then warm-up and repeats: the submission ran in every round
    assert len(seen) == 6 and all(seen), "the look cannot find the reference's answer even just after its call"
    assert not any(calls), f"the reference's answer was in device memory at these submission calls: {calls}"


def test_a_submission_that_writes_into_a_rivals_inputs_is_charged_with_it(tmp_path, monkeypatch):
    """A kernel that found the reference's copy of A and wrote into it could slow the reference
    down and gain speed points: the timing checks the rivals' inputs when it ends."""
    def scribble(module, phase, memory, timed):
        if module == "submission" and phase == "before":
            timed["reference"].originals["A"][:7] = 3.0

    result = _timing(tmp_path, monkeypatch, NAIVE, scribble)
    assert result["status"] == "error" and result["data"]["module"] == "submission"
    assert "reference solution's input A changed" in result["message"]


def test_a_timed_call_that_computes_nothing_ends_the_timing(tmp_path, monkeypatch):
    """An empty kernel is caught at the untimed call before the timed ones (every element still holds
    the poison); a kernel that counts its launches and stops computing after three is caught at the
    third timed call (its fourth launch), though the output it left from the second is right: the
    outputs are poisoned before every call."""
    for source, call, name in ((EMPTY, 0, "empty"), (COUNTING, 3, "counting")):
        result = _timing(tmp_path, monkeypatch, source, lambda *args: None, name)
        assert result["status"] == "error" and result["data"]["module"] == "submission", result
        wrong = result["data"]["wrong"]
        assert wrong["call"] == call and wrong["calls"] == 6, wrong
        assert wrong["compare"]["untouched"] == wrong["compare"]["total"] == 256 * 256


def test_a_right_answer_is_downloaded_once_and_later_calls_match_it_on_the_device(tmp_path, monkeypatch):
    """A deterministic kernel's timed calls give the bits of its checked call: one full comparison (of
    the untimed call), then a check on the device per call (no download, no host work in the window);
    the reference was computed on the GPU."""
    from grader.run.child import comparison, timing

    compared = []
    real = comparison.compared

    def counting(*args):
        compared.append(args[-1])
        return real(*args)

    monkeypatch.setattr(timing, "compared", counting)
    result = _timing(tmp_path, monkeypatch, NAIVE, lambda *args: None)
    assert result["status"] == "ok", result
    assert len(compared) == 1, compared
    assert result["data"]["reference_on"] == "gpu"


@pytest.mark.parametrize("exercise_id", ["level2", "histogram", "reduction", "rmsnorm", "softmax", "swiglu", "transpose", "half_gemv"])
def test_the_reference_computed_on_the_gpu_is_the_cpus(exercise_id):
    """The timing's float64 reference comes from the harness's NumPy code run on CuPy arrays: where that
    runs, it equals the CPU's to float64 rounding; where it cannot (a conversion to NumPy), it raises,
    and the timing computes on the CPU instead."""
    import cupy as cp
    import numpy as np

    from grader.exercise import Harness, load

    exercise = load(ROOT / "exercises" / exercise_id)
    harness = Harness(exercise)
    conf = exercise.spec.checks.get("performance")
    if conf is None:
        pytest.skip(f"{exercise_id} is not timed")
    sizes = dict(conf.size)
    inputs = harness.make_inputs(sizes, np.random.default_rng(7))
    want = harness.reference(inputs, sizes)
    scale = harness.magnitude(inputs, sizes, want)
    try:
        got, magnitude = harness.reference_on_device(cp, inputs, sizes)
    except Exception as exc:  # noqa: BLE001 - allowed: the timing falls back to the CPU
        pytest.skip(f"{exercise_id}'s harness does not run on CuPy arrays ({type(exc).__name__}); the CPU computes it")
    for name in want:
        assert got[name].dtype == np.float64 and got[name].shape == want[name].shape
        assert np.allclose(got[name], want[name], rtol=1e-12, atol=1e-12 * float(np.max(scale[name], initial=1.0)))
        assert np.allclose(magnitude[name], scale[name], rtol=1e-12, atol=1e-300)

