"""grader.run.child.launch_budget: a hang is stopped at a multiple of the reference's own cost at that size, and a
slow kernel that finishes is never cut short; on the emulator here, on the GPU where one is visible."""
from __future__ import annotations

import re
import resource
import time
from pathlib import Path

import pytest

from grader import api
from grader.backends.base import LaunchOutcome
from grader.compile import compile_source
from grader.emu.machine import work_ns
from grader.exercise import Harness, load
from grader.run.child.launch_budget import (AFTER_STOP_CEILING_S, AFTER_STOP_FLOOR_S, EMU_CPU_SECONDS, WORK_CEILING_S,
                                            WORK_FLOOR_S, WORK_SLACK, Budget, Budgets)
from grader.run.parent.supervisor import TaskSupervisor
from grader.run.tasks import Task

ROOT = Path(__file__).resolve().parent.parent
LEVEL2 = ROOT / "exercises" / "level2"
REFERENCE = ROOT / "reference" / "level2" / "solution.cu"
SPIN_ALL = ROOT / "tests" / "hostile" / "endless_loop_all.cu"
SPIN_RAGGED = ROOT / "tests" / "hostile" / "endless_loop_ragged.cu"
SLOW = ROOT / "tests" / "data" / "slow_kernels"


def _modules(tmp_path: Path, sources: dict[str, Path], backend: str) -> dict[str, str]:
    """label -> artifact (PTX for the emulator, CUBIN for the GPU) of each source."""
    arch = "sm_90"
    if backend == "gpu":
        from grader.run.parent.device_probe import probe

        arch = probe().arch
    out = {}
    for label, path in sources.items():
        compiled = compile_source(path.read_text(), path.name, arch)
        assert compiled.ok, compiled.log
        artifact = tmp_path / f"{label}.{'cubin' if backend == 'gpu' else 'ptx'}"
        if backend == "gpu":
            artifact.write_bytes(compiled.cubin)
        else:
            artifact.write_text(compiled.ptx)
        out[label] = str(artifact)
    return out


def _stage(tmp_path: Path, submission: Path, backend: str, sizes: list[dict[str, int]], ids: list[str] | None = None):
    exercise = load(LEVEL2)
    modules = _modules(tmp_path, {"submission": submission, "reference": REFERENCE}, backend)
    runner = TaskSupervisor(exercise_root=exercise.root, workdir=tmp_path, modules={backend: modules}, limits=exercise.spec.limits,
                    env=api.child_env(tmp_path))
    ids = ids or [f"correctness:{i}" for i in range(len(sizes))]
    tasks = [Task(id=task_id, kind="run", backend=backend, sizes=s, seeds=(1,)) for task_id, s in zip(ids, sizes)]
    started, cpu = time.monotonic(), _children_cpu()
    stage = runner.run(tasks, backend=backend)
    return stage, time.monotonic() - started, _children_cpu() - cpu


def _children_cpu() -> float:
    """CPU seconds of this process's finished children: unlike the wall clock, the same on a busy machine."""
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


# --------------------------------------------------------------------------------------------- the budget itself

class _Spec:
    """Only what Budgets reads of a spec when it has no reference to measure."""

    kernel = None


def test_without_a_reference_the_spec_limits_apply():
    budgets = Budgets(_Spec(), None, "emu", None, step_limit=200_000)
    assert budgets.for_sizes({"N": 17}) == Budget(200_000)
    assert budgets.for_sizes({"N": 17}).seconds is None


def test_emulator_budget_is_a_multiple_of_the_reference_work_with_a_floor_and_a_ceiling(tmp_path, monkeypatch):
    exercise = load(LEVEL2)
    ptx = _modules(tmp_path, {"reference": REFERENCE}, "emu")["reference"]
    budgets = Budgets(exercise.spec, Harness(exercise), "emu", ptx, step_limit=200_000)
    work = budgets.reference_cost({"N": 33})
    assert work and work > 1e6  # a few hundred grid-wide steps for three tiles: milliseconds of modelled work
    budget = budgets.for_sizes({"N": 33})
    assert budget.work == min(WORK_CEILING_S * 1e9, max(WORK_FLOOR_S * 1e9, WORK_SLACK * work))
    assert budget.step_limit == 200_000 and budget.seconds == EMU_CPU_SECONDS  # the safety cap and the CPU backstop
    # Kept on disk: another child (the next grading of a batch) reads it instead of emulating the reference again.
    import grader.backends.emu as emu_backend

    class NoEmulator:
        def __init__(self):
            raise AssertionError("the reference was emulated again")

    monkeypatch.setattr(emu_backend, "EmuDevice", NoEmulator)
    again = Budgets(exercise.spec, Harness(exercise), "emu", ptx, step_limit=200_000)
    assert again.reference_cost({"N": 33}) == work
    monkeypatch.undo()
    # A spec step limit stays a cap (staff can always lower it).
    low = Budgets(exercise.spec, Harness(exercise), "emu", ptx, step_limit=500)
    assert low.for_sizes({"N": 33}).step_limit == 500
    # A reference that cannot be measured (no such file) costs nothing: the spec's limit applies.
    broken = Budgets(exercise.spec, Harness(exercise), "emu", str(tmp_path / "missing.ptx"), step_limit=200_000)
    assert broken.for_sizes({"N": 33}) == Budget(200_000)


def test_the_work_model_counts_steps_and_warp_instructions():
    from grader.emu.machine import STEP_NS, WARP_INSTRUCTION_NS

    assert work_ns(0, 0) == 0
    assert work_ns(10, 0) == 10 * STEP_NS and work_ns(0, 10) == 10 * WARP_INSTRUCTION_NS
    # One warp busy for a step costs more than one more warp taking part in a step already taken.
    assert STEP_NS > WARP_INSTRUCTION_NS > 0


def test_after_a_stop_later_launches_get_the_multiple_within_tighter_bounds():
    """The floor protects a kernel that finishes slowly; one that already did not finish gets the
    multiple of the reference's work between AFTER_STOP_FLOOR_S and AFTER_STOP_CEILING_S."""

    class Known(Budgets):
        def reference_cost(self, sizes):
            return {1: 1e6, 2: 1e8, 3: 1e7}[sizes["N"]]  # 1 ms, 100 ms, 10 ms of modelled work

    budgets = Known(_Spec(), None, "emu", "ref.ptx", step_limit=200_000)
    assert budgets.for_sizes({"N": 1}).work == WORK_FLOOR_S * 1e9
    assert budgets.for_sizes({"N": 2}).work == WORK_SLACK * 1e8
    budgets.stopped({"N": 1}, {"error": "the kernel did not finish"})
    assert budgets.stopped_at({"N": 1}) == {"error": "the kernel did not finish"} and budgets.stopped_at({"N": 2}) is None
    assert budgets.for_sizes({"N": 1}).work == AFTER_STOP_FLOOR_S * 1e9
    assert budgets.for_sizes({"N": 2}).work == AFTER_STOP_CEILING_S * 1e9
    assert budgets.for_sizes({"N": 3}).work == WORK_SLACK * 1e7
    assert "as an earlier launch of it did not finish" in budgets.for_sizes({"N": 3}).detail


def test_the_verdict_names_the_reference_multiple_and_the_two_causes():
    class Known(Budgets):
        def reference_cost(self, sizes):
            return 2.3e7

    budget = Known(_Spec(), None, "emu", "ref.ptx", step_limit=200_000).for_sizes({"rows": 4, "cols": 1000})
    stopped = budget.explain(LaunchOutcome(error="the kernel did not finish", findings={"status": "step-limit"}))
    assert stopped.error.startswith("the kernel did not finish within 174 times the reference solution's work at "
                                    "rows = 4, cols = 1000 (4.00 modelled CPU seconds, the reference's 0.023;")
    assert stopped.error.endswith("it loops without end (an endless loop), or does far more work than it needs to")
    other = LaunchOutcome(error="trap", findings={"status": "trap"})
    assert budget.explain(other) is other
    # The limit that stopped it is the one named: the exercise's step cap, or the CPU backstop.
    capped = budget.explain(LaunchOutcome(error="x", findings={"status": "step-limit", "stopped_by": "steps"}))
    assert capped.error.startswith("the kernel did not finish within the exercise's limit of 200,000 emulated steps: ")
    backstop = budget.explain(LaunchOutcome(error="x", findings={"status": "step-limit", "stopped_by": "cpu"}))
    assert backstop.error.startswith(f"the kernel did not finish within {EMU_CPU_SECONDS:g} s of CPU time (its work limit: 174 times")


# --------------------------------------------------------------------------------------------- hangs and slow kernels

@pytest.mark.parametrize("backend", ["emu", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_a_spinning_kernel_is_stopped_within_seconds(tmp_path, backend):
    """Four hanging sizes (the spec's run limit is 120 s, the spec's step limit 200,000 steps)."""
    sizes = [{"N": 1}, {"N": 17}, {"N": 33}, {"N": 67}]
    stage, seconds, cpu = _stage(tmp_path, SPIN_ALL, backend, sizes)
    print(f"{backend}: {len(sizes)} hanging sizes stopped in {seconds:.1f} s ({cpu:.1f} CPU-s)")
    first = stage.results["correctness:0"]
    if backend == "emu":
        # Seconds depend on the machine (docs/benchmarks.md: "Hang detection: the launch budget"); modelled work
        # does not. The first size stops at the floor, the later ones at 50 times the reference's
        # work within the tighter bounds after a stop: one floor in all, not one per size.
        for i in range(len(sizes)):
            result = stage.results[f"correctness:{i}"]
            assert "did not finish within" in result.launches[0]["error"]
            assert result.launches[0]["emu"]["status"] == "step-limit"
            limit, reference = _budget_work(result.launches[0]["error"])
            floor, ceiling = (WORK_FLOOR_S, WORK_CEILING_S) if i == 0 else (AFTER_STOP_FLOOR_S, AFTER_STOP_CEILING_S)
            assert limit == pytest.approx(min(ceiling, max(floor, WORK_SLACK * reference)), abs=0.01 + WORK_SLACK * 5e-4)
        assert cpu < WORK_FLOOR_S + len(sizes) * AFTER_STOP_CEILING_S + EMU_CPU_SECONDS, cpu
    else:
        assert seconds < 10, seconds
        assert first.status == "timeout" and "did not finish within its time limit at N = 1, 50 times" in first.message
        # Every larger size fails with it, without being run (grader.run.parent.supervisor.at_least).
        for i in range(1, len(sizes)):
            later = stage.results[f"correctness:{i}"]
            assert later.status == "timeout" and later.message.startswith("not run at this size: at the smaller size N = 1,")


def test_a_size_that_ran_out_of_its_budget_is_not_launched_again(tmp_path):
    """Another check's launch at the same size reports the same verdict without spending the budget again."""
    stage, _, _ = _stage(tmp_path, SPIN_ALL, "emu", [{"N": 17}, {"N": 17}], ids=["correctness:0", "memory:0"])
    first, again = stage.results["correctness:0"].launches[0], stage.results["memory:0"].launches[0]
    assert first["emu"]["status"] == again["emu"]["status"] == "step-limit"
    assert again["error"] == first["error"] and again.get("repeated") and not first.get("repeated")


@pytest.mark.parametrize("kernel", ["level2_thirty_phases.cu", "level2_naive.cu"])
def test_a_slow_kernel_that_finishes_is_not_cut_short_on_the_emulator(tmp_path, kernel):
    stage, _, _ = _stage(tmp_path, SLOW / kernel, "emu", [{"N": 1}, {"N": 67}])
    for result in stage.results.values():
        assert result.succeeded, result


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", ["level2_thirty_phases.cu", "level2_naive.cu"])
def test_a_slow_kernel_that_finishes_is_not_cut_short_on_the_gpu(tmp_path, kernel):
    stage, _, _ = _stage(tmp_path, SLOW / kernel, "gpu", [{"N": 1024}, {"N": 2048}])
    for result in stage.results.values():
        assert result.succeeded, result


@pytest.mark.slow
def test_a_ragged_hang_costs_seconds_in_a_whole_grading_on_the_emulator(tmp_path):
    """The hostile corpus's kernel that spins only on a partial tile, graded in full: a verdict in
    seconds (it took the spec's 120 s run limit before), every other size still graded."""
    started, cpu = time.monotonic(), _children_cpu()
    report = api.grade(LEVEL2, SPIN_RAGGED, backend="emu", seed=3, workdir=tmp_path)
    seconds, cpu = time.monotonic() - started, _children_cpu() - cpu
    print(f"endless_loop_ragged.cu graded in {seconds:.1f} s ({cpu:.1f} CPU-s)")
    correctness = next(t for t in report.tests if t.category == "correctness")
    assert "Wrong at 4 of 5 sizes" in correctness.output and "N = 17: the kernel did not finish within" in correctness.output
    # Machine-independent: the hang stopped at its budget (its seconds are a benchmark's business).
    limit, reference = _budget_work(correctness.output)
    assert limit == pytest.approx(max(WORK_FLOOR_S, WORK_SLACK * reference), abs=0.01 + WORK_SLACK * 5e-4), correctness.output
    # The hidden tests' launches have the same budget: they end with a verdict, not at the run limit.
    hidden = next(t for t in report.tests if t.name.startswith("Hidden tests"))
    assert "time limit" not in hidden.output and "did not finish within" in hidden.output, hidden.output


def _budget_work(text: str) -> tuple[float, float]:
    """(the launch's limit, the reference's work), in modelled seconds, from the first budget verdict in `text`."""
    found = re.search(r"\(([\d.]+) modelled CPU seconds, the reference's ([\d.]+);", text)
    assert found, text
    return float(found.group(1)), float(found.group(2))



def test_a_kernel_that_faulted_is_finished_not_hung():
    """The budget's wait polls the launch's event: a fault (misaligned or illegal address) answers with
    an error, which must end the wait at once (the synchronize then reports the crash), not look like
    a kernel still running until the budget runs out."""
    from types import SimpleNamespace

    from grader.backends import gpu

    def fake_cp(answers):
        answers = iter(answers)

        class Event:
            ptr = 1

            def __init__(self, **_):
                pass

            def record(self):
                pass

        runtime = SimpleNamespace(eventQuery=lambda ptr: next(answers))
        return SimpleNamespace(cuda=SimpleNamespace(Event=Event, runtime=runtime))

    assert gpu._wait(fake_cp([gpu._NOT_READY, gpu._NOT_READY, 0]), 5.0)           # finished
    assert gpu._wait(fake_cp([gpu._NOT_READY, 716]), 5.0)                          # misaligned address: over
    assert not gpu._wait(fake_cp([gpu._NOT_READY] * 100_000), 0.05)                 # still running at the limit

    def raising(ptr):
        raise RuntimeError("cudaErrorIllegalAddress")

    cp = fake_cp([])
    cp.cuda.runtime.eventQuery = raising
    assert gpu._wait(cp, 5.0)
