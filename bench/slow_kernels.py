"""How close each correct but slow kernel comes to its launch budget on the emulator: for every kernel
of tests/data/slow_kernels, at every emulator size of its exercise (the correctness sizes and the
checks' emu_size), its modelled work, the reference's, and the limit the budget gives it
(grader.run.child.launch_budget: WORK_SLACK times the reference's work within WORK_FLOOR_S and
WORK_CEILING_S). Modelled work is machine-independent, so the table is too; the CPU seconds are not.

    PYTHONPATH=$PWD python bench/slow_kernels.py [--exercise softmax ...]

A kernel above 100% of its limit would be cut short: tests/test_slow_kernels.py would fail for it.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from emu_step_cost import ROOT, _launches, measure  # noqa: E402  (a sibling script)


def main() -> None:
    from grader.emu.machine import work_ns
    from grader.run.child.launch_budget import WORK_CEILING_S, WORK_FLOOR_S, WORK_SLACK

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--exercise", action="append", default=[])
    args = parser.parse_args()
    reference: dict[tuple[str, str], float] = {}
    rows = []
    for exercise, label, source, sizes in _launches(args.exercise):
        steps, wis, cpu = measure(exercise, source, sizes, 1)
        work = work_ns(steps, wis) / 1e9
        if label == "reference":
            reference[(exercise, str(sizes))] = work
            continue
        ref = reference[(exercise, str(sizes))]
        limit = min(WORK_CEILING_S, max(WORK_FLOOR_S, WORK_SLACK * ref))
        rows.append((work / limit, exercise, label, sizes, work, ref, limit, cpu))
    print(f"{'kernel':34s} {'sizes':28s} {'work s':>7s} {'ref s':>7s} {'x ref':>6s} {'limit s':>7s} {'used':>5s} {'cpu s':>6s}")
    for used, exercise, label, sizes, work, ref, limit, cpu in sorted(rows, key=lambda r: (r[1], r[2])):
        text = ", ".join(f"{k}={v}" for k, v in sizes.items())
        print(f"{label:34s} {text:28s} {work:7.3f} {ref:7.3f} {work / ref:6.1f} {limit:7.2f} {used:5.0%} {cpu:6.2f}")
    worst = max(rows)
    print(f"closest to its limit: {worst[2]} at {worst[3]}, {worst[0]:.0%} of {worst[6]:.2f} modelled seconds")


if __name__ == "__main__":
    main()
