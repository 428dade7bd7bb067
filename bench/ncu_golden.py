"""Measure Nsight Compute's counters for an exercise's reference and wrong submissions on a GPU.

    python bench/ncu_golden.py exercises/level2 --sizes 33,64,100 --out tests/data/ncu_level2.json

The JSON it writes is golden data: tests/emu/test_ncu_agreement.py checks that the emulator
reproduces the global sector and request counts exactly. Run it on a machine with a GPU and ncu.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from grader.exercise import load  # noqa: E402
from grader.profile import profile  # noqa: E402
from grader.validate import read_expectation  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("exercise", type=Path)
    parser.add_argument("--sizes", required=True, help="comma-separated values of the exercise's one size variable")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    exercise = load(args.exercise)
    (name,) = exercise.spec.sizes
    files = [exercise.solution_path] + sorted((exercise.reference_dir / "wrong").glob("*.cu"))
    golden: dict = {"exercise": exercise.id, "tool": "ncu --clock-control none --page raw", "files": {}}
    for path in files:
        exp = read_expectation(path)
        if exp and exp.expect == "compile":
            continue
        rel = str(path.relative_to(exercise.reference_dir))
        golden["files"][rel] = {}
        for value in (int(v) for v in args.sizes.split(",")):
            start = time.perf_counter()
            result = profile(exercise.root, path, {name: value}, backend="gpu")
            golden["files"][rel][str(value)] = {"counters": dict(result.counters), "error": result.error}
            print(f"{rel:<40} {name}={value:<5} {time.perf_counter() - start:5.1f} s  {result.error or ''}", flush=True)
            print("    " + json.dumps(result.counters), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
