"""Where one grading's CPU seconds go: each file graded alone, CPU time summed by kind of process.

    python bench/cpu_one_grading.py [--backend gpu] EXERCISE FILE [FILE ...]

Prints, for every file, the wall seconds, the score, and a table of CPU seconds by process kind
(bench/cpu_sampler.py: `python -m grader.run.child.runner --prestart gpu`, ncu, pytest, ...).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_sampler import CpuSampler  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="gpu")
    ap.add_argument("exercise")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    for f in args.files:
        with tempfile.TemporaryDirectory() as tmp, CpuSampler(interval=0.05) as sampler:
            out = Path(tmp) / "r.json"
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "grader", args.exercise, f, "--backend", args.backend,
                            "--json", str(out), "--quiet"], capture_output=True)
            wall = time.perf_counter() - t0
            doc = json.loads(out.read_text()) if out.exists() else {}
        totals = sampler.totals()
        cpu = sum(s for s, _ in totals.values())
        print(f"== {f}: {wall:.1f} s, score {doc.get('score')}, {cpu:.1f} CPU-s")
        stages = doc.get("extra_data", {}).get("stages", [])
        for s in stages:
            print(f"   stage {s.get('name')}: start {s.get('start')} s, {s.get('seconds')} s")
        for name, (seconds, count) in sorted(totals.items(), key=lambda kv: -kv[1][0]):
            if seconds >= 0.05:
                print(f"   {seconds:6.2f} CPU-s  {count:3d} x  {name[:90]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
