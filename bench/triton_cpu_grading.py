"""The CPU grading of each Triton reference, timed: the issue's bar is 10 s on the 2-core machine.

    PYTHONPATH=$PWD python bench/triton_cpu_grading.py [runs]

Needs the [triton] extra. Prints the wall time of each grading (a fresh jailed child each, as a
student's grading has) and the score."""
from __future__ import annotations

import sys
import time
from pathlib import Path

from grader import api
from grader.exercise import discover

ROOT = Path(__file__).resolve().parent.parent


def main(runs: int = 3) -> None:
    for exercise in discover(ROOT / "exercises"):
        if exercise.kind != "triton":
            continue
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            report = api.grade(exercise.root, exercise.solution_path, seed=1)
            times.append(time.perf_counter() - started)
        print(f"{exercise.id}: {report.score:g}/{report.max_score:g}, wall seconds {', '.join(f'{t:.1f}' for t in times)} "
              f"(best {min(times):.1f})")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
