"""What one emulator step and one warp instruction cost in CPU time: the calibration of the launch
budget's work model (grader.emu.machine: STEP_NS, WARP_INSTRUCTION_NS; grader.run.child.launch_budget uses it).

A launch's CPU time on the emulator is close to a fixed cost per grid-wide step (the scheduler, NumPy
call overheads) plus a cost per warp that takes part in the step (the vector work). This script
emulates every CUDA exercise's reference at each of its emulator sizes, and every kernel of
tests/data/slow_kernels (which keep far fewer warps busy for far more steps), measures each launch's
CPU seconds (the best of --repeats), and fits

    cpu_ns = STEP_NS * steps + WARP_INSTRUCTION_NS * warp_instructions

by non-negative least squares on the relative error (a slow launch must not drown the short ones).
It prints one line per launch (measured, modelled, ratio) and the fitted constants.

    PYTHONPATH=$PWD python bench/emu_step_cost.py [--repeats 2] [--exercise softmax ...]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def _launches(exercises: list[str]) -> list[tuple[str, str, Path, dict]]:
    """(exercise, label, source, sizes) of every launch to measure."""
    from grader.exercise import load

    out = []
    for spec_file in sorted((ROOT / "exercises").glob("*/spec.toml")):
        name = spec_file.parent.name
        if exercises and name not in exercises:
            continue
        ex = load(spec_file.parent)
        if getattr(ex.spec, "kind", "cuda") != "cuda":
            continue
        sources = [("reference", ROOT / "reference" / name / "solution.cu")]
        sources += [(p.stem, p) for p in sorted((ROOT / "tests" / "data" / "slow_kernels").glob(f"{name}_*.cu"))]
        sizes_seen = []
        for sizes in list(ex.spec.emu_cases) + [c.emu_size for c in ex.spec.checks.values() if c.emu_size]:
            if dict(sizes) not in sizes_seen:
                sizes_seen.append(dict(sizes))
        for label, src in sources:
            for sizes in sizes_seen:
                out.append((name, label, src, sizes))
    return out


def measure(exercise: str, source: Path, sizes: dict, repeats: int) -> tuple[int, int, float]:
    """(steps, warp instructions, best CPU seconds) of one launch of `source` at `sizes`."""
    from grader.backends.emu import EmuDevice
    from grader.compile import compile_source
    from grader.exercise import Harness, load
    from grader.run.child.launch import launch_kernel, load_chain

    ex = load(ROOT / "exercises" / exercise)
    compiled = compile_source(source.read_text(), source.name, "sm_90")
    ptx = Path(f"/tmp/emu_step_cost_{exercise}_{source.stem}.ptx")
    ptx.write_text(compiled.ptx)
    best, steps, wis = float("inf"), 0, 0
    for _ in range(repeats):
        device = EmuDevice()
        kernel = load_chain(device, str(ptx), ex.spec)
        inputs = Harness(ex).make_inputs(sizes, np.random.default_rng(0))
        started = time.process_time()
        launched = launch_kernel(ex.spec, device, kernel, sizes, inputs, step_limit=10**9)
        took = time.process_time() - started
        if launched.outcome.error:
            raise SystemExit(f"{exercise} {source.name} {sizes}: {launched.outcome.error}")
        best = min(best, took)
        steps, wis = device.last_steps, device.last_warp_instructions
    return steps, wis, best


def fit(rows: list[tuple[int, int, float]]) -> tuple[float, float]:
    """Non-negative (STEP_NS, WARP_INSTRUCTION_NS) minimising the squared relative error."""
    a = np.array([[s, w] for s, w, _ in rows], dtype=float)
    y = np.array([c * 1e9 for _, _, c in rows])
    a, y = a / y[:, None], np.ones_like(y)
    coef, *_ = np.linalg.lstsq(a, y, rcond=None)
    if (coef < 0).any():  # one term alone fits better than a negative mix
        alone = [(i, float((a[:, i] @ y) / (a[:, i] @ a[:, i]))) for i in (0, 1)]
        i, c = min(alone, key=lambda t: float(((a[:, t[0]] * t[1] - y) ** 2).sum()))
        coef = np.zeros(2)
        coef[i] = c
    return float(coef[0]), float(coef[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--exercise", action="append", default=[])
    args = parser.parse_args()
    rows, labels = [], []
    for exercise, label, source, sizes in _launches(args.exercise):
        steps, wis, cpu = measure(exercise, source, sizes, args.repeats)
        rows.append((steps, wis, cpu))
        labels.append(f"{exercise:10s} {label:28s} {sizes}")
    step_ns, warp_ns = fit(rows)
    from grader.emu.machine import STEP_NS, WARP_INSTRUCTION_NS

    print(f"{'launch':80s} {'steps':>8s} {'warp-ins':>9s} {'cpu ms':>8s} {'model ms':>9s} {'ratio':>6s}")
    worst = 0.0
    for label, (steps, wis, cpu) in zip(labels, rows):
        model = (STEP_NS * steps + WARP_INSTRUCTION_NS * wis) / 1e6
        ratio = cpu * 1e3 / model if model else float("inf")
        worst = max(worst, ratio, 1 / ratio if ratio else 0)
        print(f"{label:80s} {steps:8d} {wis:9d} {cpu * 1e3:8.1f} {model:9.1f} {ratio:6.2f}")
    print(f"fitted here: STEP_NS = {step_ns:.0f}, WARP_INSTRUCTION_NS = {warp_ns:.0f} "
          f"(in use: {STEP_NS}, {WARP_INSTRUCTION_NS}); worst measured/model ratio either way: {worst:.2f}")


if __name__ == "__main__":
    main()
