"""Every shipped exercise keeps its promises on the emulator: `grade validate` in CI (no GPU)."""
from __future__ import annotations

from pathlib import Path

import pytest

from grader.exercise import load
from grader.staff import conventions
from grader.staff.validate import validate

ROOT = Path(__file__).resolve().parent.parent
EXERCISES = sorted(p.parent.name for p in (ROOT / "exercises").glob("*/spec.toml"))


@pytest.mark.slow
@pytest.mark.parametrize("exercise", EXERCISES)
def test_exercise_validates_on_the_emulator(exercise):
    if load(ROOT / "exercises" / exercise).kind == "triton":  # the CPU path needs the [triton] extra
        pytest.importorskip("torch")
        pytest.importorskip("triton")
    result = validate(ROOT / "exercises" / exercise, backend="emu", seed=1)
    failures = [text for ok, text in result.items if not ok]
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("exercise", EXERCISES)
def test_each_exercise_has_a_corpus_with_an_edge_size_bug(exercise):
    # At least five wrong files with headers, one a bug that only shows when the size is not a
    # multiple of the block or tile (grader.staff.conventions; `grade validate` checks it too).
    assert conventions.corpus(load(ROOT / "exercises" / exercise)) == []


def test_a_corpus_without_an_edge_size_bug_breaks_the_convention(tmp_path):
    import shutil

    shutil.copytree(ROOT / "exercises" / "vector_add", tmp_path / "exercises" / "vector_add")
    wrong = tmp_path / "reference" / "vector_add" / "wrong"
    shutil.copytree(ROOT / "reference" / "vector_add", wrong.parent)
    for path in wrong.glob("*.cu"):
        path.write_text(path.read_text().replace("multiple", "m-ultiple").replace("% ", "mod "))
    (wrong / "wrong_op.cu").write_text("// no header here\n")
    problems = conventions.corpus(load(tmp_path / "exercises" / "vector_add"))
    assert any("wrong_op.cu has no `expect:` line" in p for p in problems)
    assert any("no wrong file is an edge-size bug" in p for p in problems)
    for path in list(wrong.glob("*.cu"))[4:]:
        path.unlink()
    assert any("at least 5 are needed" in p for p in conventions.corpus(load(tmp_path / "exercises" / "vector_add")))


@pytest.mark.parametrize("exercise", EXERCISES)
def test_reference_is_correct_on_the_emulator_at_one_size(exercise, tmp_path):
    """Quick (no child processes): the reference solution, compiled and launched in this process at
    the largest emulator size, matches the harness's reference within the spec's tolerance."""
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    import numpy as np

    from grader.backends.emu import EmuDevice
    from grader.compile import compile_source
    from grader.exercise import Harness, load
    from grader.run.child.launch import launch_kernel
    from grader.run.child.comparison import compare

    ex = load(ROOT / "exercises" / exercise)
    if ex.kind != "cuda":
        pytest.skip("not a CUDA kernel (a Python or Triton exercise's reference is checked by validate)")
    spec = ex.spec
    compiled = compile_source(ex.solution_path.read_text(), "solution.cu", "sm_90")
    assert compiled.ok, compiled.log
    artifact = tmp_path / "solution.ptx"
    artifact.write_text(compiled.ptx)
    sizes = dict(max(spec.cases_for("emu"), key=lambda c: sorted(c.values())))
    harness = Harness(ex)
    inputs = harness.make_inputs(sizes, np.random.default_rng(1))
    device = EmuDevice()
    launched = launch_kernel(spec, device, device.load(str(artifact), spec.kernel.name), sizes, inputs,
                             step_limit=spec.limits.step_limit)
    assert launched.outcome.error is None, launched.outcome.error
    expected = harness.reference(inputs, sizes)
    result = compare(spec, sizes, {p.name: launched.contents[p.name] for p in spec.kernel.outputs}, expected,
                     harness.magnitude(inputs, sizes, expected))
    assert result["ok"], result
