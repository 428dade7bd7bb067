"""Measure Nsight Compute's counters for an exercise's reference and wrong submissions on a GPU.

    python bench/ncu_golden.py exercises/level2 --sizes 33,64,100 --out tests/data/ncu_level2.json
    python bench/ncu_golden.py exercises/softmax --sizes "rows=4,cols=1000;rows=8,cols=257" --out tests/data/ncu_softmax.json

--sizes lists the sizes to profile: values of the exercise's one size variable separated by commas,
or, for several variables, `name=value` pairs separated by commas, one size per `;`.

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
from grader.staff.validate import read_expectation  # noqa: E402


def parse_sizes(text: str, names: tuple[str, ...]) -> list[dict[str, int]]:
    """'33,64' for a one-variable exercise, else 'a=1,b=2;a=3,b=4'."""
    if "=" not in text:
        (name,) = names
        return [{name: int(v)} for v in text.split(",")]
    out = []
    for one in text.split(";"):
        pairs = dict(p.split("=", 1) for p in one.split(","))
        sizes = {k.strip(): int(v) for k, v in pairs.items()}
        if set(sizes) != set(names):
            raise SystemExit(f"each size must give exactly {', '.join(names)}: {one!r}")
        out.append(sizes)
    return out


def size_key(sizes: dict[str, int]) -> str:
    """The golden file's key for a size: the bare value for one variable (as the level2 goldens),
    else 'a=1,b=2'."""
    if len(sizes) == 1:
        return str(next(iter(sizes.values())))
    return ",".join(f"{k}={v}" for k, v in sizes.items())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("exercise", type=Path)
    parser.add_argument("--sizes", required=True, help="'33,64' (one size variable) or 'rows=4,cols=1000;rows=8,cols=257'")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    exercise = load(args.exercise)
    sizes_list = parse_sizes(args.sizes, exercise.spec.sizes)
    files = [exercise.solution_path] + sorted((exercise.reference_dir / "wrong").glob("*.cu"))
    golden: dict = {"exercise": exercise.id, "tool": "ncu --clock-control none --page raw", "files": {}}
    for path in files:
        exp = read_expectation(path)
        if exp and exp.expect == "compile":
            continue
        rel = str(path.relative_to(exercise.reference_dir))
        golden["files"][rel] = {}
        for sizes in sizes_list:
            start = time.perf_counter()
            result = profile(exercise.root, path, sizes, backend="gpu")
            key = size_key(sizes)
            golden["files"][rel][key] = {"counters": dict(result.counters), "error": result.error}
            print(f"{rel:<40} {key:<18} {time.perf_counter() - start:5.1f} s  {result.error or ''}", flush=True)
            print("    " + json.dumps(result.counters), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
