"""The CPU grading of each Triton reference, timed: the issue's bar is 10 s on the 2-core machine.

    PYTHONPATH=$PWD python bench/triton_cpu_grading.py [runs] [exercise_id ...]

Needs the [triton] extra. Grades every Triton exercise's reference (or those named) `runs` times, a
fresh jailed child each as a student's grading has, and prints the wall times, the score, and
whether the best run is within the bar."""
from __future__ import annotations

import sys
import time
from pathlib import Path

from grader import api
from grader.exercise import discover
from grader.kinds.registry import KINDS

ROOT = Path(__file__).resolve().parent.parent
BAR_SECONDS = 10.0


def main(runs: int = 3, only: tuple[str, ...] = ()) -> int:
    missed = 0
    for exercise in discover(ROOT / "exercises"):
        if KINDS.get(exercise.kind) is not KINDS["triton"] or (only and exercise.id not in only):
            continue
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            report = api.grade(exercise.root, exercise.solution_path, seed=1)
            times.append(time.perf_counter() - started)
        within = min(times) <= BAR_SECONDS
        missed += not within
        print(f"{exercise.id}: {report.score:g}/{report.max_score:g}, wall seconds {', '.join(f'{t:.1f}' for t in times)} "
              f"(best {min(times):.1f}; {'within' if within else 'OVER'} the {BAR_SECONDS:g} s bar)")
    return 1 if missed else 0


if __name__ == "__main__":
    args = sys.argv[1:]
    count = int(args.pop(0)) if args and args[0].isdigit() else 3
    sys.exit(main(count, tuple(args)))
