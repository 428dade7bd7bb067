"""How steady the performance check is: each file graded K times alone, with one seed, on the GPU.

The score's performance points step at fixed fractions of the reference's speed, so a file whose
measured speed wanders across a step's edge gets two grades. This prints, per file, every
grading's speed against the reference (the ratio the points are given for), the submission's and
the reference's medians, and the performance points; then the spread of the ratio.

    python bench/timing_spread.py reference/level2/wrong/no_tiling.cu --times 8 [--load]

--load runs another process beside the gradings, one that knows nothing of the grader's GPU lock
and keeps the GPU busy in bursts (a matrix product for about 0.2 s, then idle for about 0.2 s): a
lab GPU shared with other users, or any drift between two timing windows, made large enough to see.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The foreign load: bursts of matrix products on the GPU, each about 0.2 s, with 0.2 s idle between.
LOAD = """
import time, cupy as cp
a = cp.random.rand(4096, 4096, dtype=cp.float32)
while True:
    end = time.monotonic() + 0.2
    while time.monotonic() < end:
        a = (a @ a) / 4096
        cp.cuda.Device().synchronize()
    time.sleep(0.2)
"""


def grade(exercise: Path, path: Path, out: Path) -> dict:
    """The performance test of one grading (--seed 1, so every grading draws the same inputs)."""
    subprocess.run([sys.executable, "-m", "grader", str(exercise), str(path), "--backend", "gpu", "--seed", "1",
                    "--json", str(out), "--quiet"], check=True, capture_output=True, cwd=ROOT)
    doc = json.loads(out.read_text())
    tests = [t for t in doc["tests"] if t.get("tags", [""])[0] == "performance"]
    return tests[0] if tests else {}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--exercise", type=Path, default=ROOT / "exercises" / "level2")
    parser.add_argument("--times", type=int, default=8, help="gradings of each file (default 8)")
    parser.add_argument("--load", action="store_true", help="keep the GPU busy in bursts from another process meanwhile")
    args = parser.parse_args()
    load = subprocess.Popen([sys.executable, "-c", LOAD]) if args.load else None
    try:
        spread(args)
    finally:
        if load:
            load.kill()
            load.wait()
    return 0


def spread(args: argparse.Namespace) -> None:
    """Grade each file args.times times; print each grading's speed, then the file's spread."""
    with tempfile.TemporaryDirectory(prefix="timing-spread-") as tmp:
        for path in args.files:
            speeds = []
            for k in range(args.times):
                test = grade(args.exercise, path.resolve(), Path(tmp) / f"{k}.json")
                extra = test.get("extra_data", {})
                ms = extra.get("median_ms", {})
                speed = extra.get("fraction_of_reference")
                print(f"{path.name} #{k}: speed {speed}, submission {ms.get('submission')} ms, reference "
                      f"{ms.get('reference')} ms, points {test.get('score')} of {test.get('max_score')}", flush=True)
                if isinstance(speed, (int, float)):
                    speeds.append(float(speed))
            if speeds:
                width = (max(speeds) - min(speeds)) / statistics.median(speeds)
                print(f"{path.name}: speed min {min(speeds):.4f}, median {statistics.median(speeds):.4f}, max "
                      f"{max(speeds):.4f} over {len(speeds)} gradings; spread {width:.1%} of the median", flush=True)


if __name__ == "__main__":
    sys.exit(main())
