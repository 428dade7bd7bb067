"""The launch budget keeps its promise: a correct but slow kernel (tests/data/slow_kernels: one thread per
row, one thread doing everything, serial loops in place of a block's threads, 30 times the phases) is
never cut short at any of its exercise's sizes on the emulator and gets full correctness, while an
endless loop is still stopped within its limit."""
from __future__ import annotations

import resource
import time
from pathlib import Path

import numpy as np
import pytest

from grader import api
from grader.compile import compile_source
from grader.exercise import load
from grader.run.child.launch_budget import EMU_CPU_SECONDS, WORK_CEILING_S

ROOT = Path(__file__).resolve().parent.parent
SLOW = ROOT / "tests" / "data" / "slow_kernels"
CUDA_EXERCISES = sorted(p.parent.name for p in (ROOT / "exercises").glob("*/spec.toml") if load(p.parent).kind == "cuda")
KERNELS = sorted(SLOW.glob("*.cu"))


def _exercise_of(kernel: Path) -> str:
    """The exercise a slow kernel is written for: the longest exercise id its file name starts with."""
    return max((e for e in CUDA_EXERCISES if kernel.stem.startswith(e + "_")), key=len)


def test_every_cuda_exercise_has_a_slow_kernel():
    assert len(CUDA_EXERCISES) >= 11
    covered = {_exercise_of(k) for k in KERNELS}
    assert covered == set(CUDA_EXERCISES), set(CUDA_EXERCISES) - covered


@pytest.mark.slow
@pytest.mark.parametrize("kernel", KERNELS, ids=[k.stem for k in KERNELS])
def test_a_slow_kernel_is_never_cut_short_and_gets_full_correctness(tmp_path, kernel):
    """Graded in full on the emulator: every size of every check runs to the end (no budget stop
    anywhere, hidden tests included) and both correctness tests get every point."""
    report = api.grade(ROOT / "exercises" / _exercise_of(kernel), kernel, backend="emu", seed=1, workdir=tmp_path)
    for test in report.tests:
        assert "did not finish" not in test.output and "not run at this size" not in test.output, (test.name, test.output)
    correctness = [t for t in report.tests if t.category == "correctness"]
    assert len(correctness) >= 1
    for test in correctness:
        assert test.passed and test.score == test.max_score, (test.name, test.output)


# --------------------------------------------------------------------------------------------- hangs are still stopped

SPIN = """
__device__ volatile int spin_flag = 1;
extern "C" __global__ void spin(float* out, int n)
{
    while (spin_flag) { }
    out[threadIdx.x] = 1.0f;
}
"""


def _spinner(tmp_path: Path):
    from grader.backends.emu import EmuDevice

    compiled = compile_source(SPIN, "spin.cu", "sm_90")
    assert compiled.ok, compiled.log
    device = EmuDevice()
    path = tmp_path / "spin.ptx"
    path.write_text(compiled.ptx)
    kernel = device.load(str(path), "spin")
    out = device.empty("out", np.dtype(np.float32), 32, fill_nan=True)
    return device, kernel, out


def _cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime


def test_an_endless_loop_stops_at_its_modelled_work(tmp_path):
    from grader.emu.machine import STEP_NS, WARP_INSTRUCTION_NS

    device, kernel, out = _spinner(tmp_path)
    limit = 2e8  # 0.2 modelled seconds
    outcome = device.launch(kernel, (1, 1, 1), (32, 1, 1), 0, [out.arg, 32], step_limit=10**9, work=limit)
    assert outcome.findings["status"] == "step-limit" and outcome.findings["stopped_by"] == "work", outcome
    assert limit <= device.last_work < limit + STEP_NS + WARP_INSTRUCTION_NS  # stopped at the first step past it
    assert device.last_work == STEP_NS * device.last_steps + WARP_INSTRUCTION_NS * device.last_warp_instructions
    # Counted, not timed: the same launch stops at the same step every time, on any machine.
    first = device.last_steps
    again = device.launch(kernel, (1, 1, 1), (32, 1, 1), 0, [out.arg, 32], step_limit=10**9, work=limit)
    assert again.findings["status"] == "step-limit" and device.last_steps == first


def test_the_cpu_backstop_stops_an_endless_loop_the_work_model_would_let_run(tmp_path):
    """Where the model is wrong (no work limit at all here), real CPU time still ends the launch."""
    device, kernel, out = _spinner(tmp_path)
    started, cpu = time.monotonic(), _cpu()
    outcome = device.launch(kernel, (1, 1, 1), (32, 1, 1), 0, [out.arg, 32], step_limit=10**9, seconds=0.5)
    took = _cpu() - cpu
    assert outcome.findings["status"] == "step-limit" and outcome.findings["stopped_by"] == "cpu", outcome
    assert 0.5 <= took < 2.0, (took, time.monotonic() - started)


def test_the_bounds_report_a_true_hang_within_fifteen_seconds():
    """One launch can cost at most the ceiling of modelled work, and never more than the CPU backstop."""
    assert WORK_CEILING_S <= EMU_CPU_SECONDS <= 15
