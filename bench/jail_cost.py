"""What the jail costs a Python grading: this tree against an earlier commit, in one run.

    python bench/jail_cost.py --before 80d6f0f [--rounds 8]

Checks the earlier commit out into a temporary worktree, then grades exercises/lesson_numpy's
reference and two wrong files with each tree in turn (alternating, so that both see the same
machine), as a student would (`python -m grader EXERCISE FILE`, wall clock from start to exit), in
the default mode and with KERNEL_GRADER_NO_NAMESPACES=1. Prints the medians and their difference as
a Markdown table for docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILES = ("reference/lesson_numpy/solution.py", "reference/lesson_numpy/wrong/tiled_forgets_partial_tile.py",
         "exercises/lesson_numpy/skeleton.py")


def grade_once(tree: Path, file: str, no_namespaces: bool) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNEL_GRADER_")}
    if no_namespaces:
        env["KERNEL_GRADER_NO_NAMESPACES"] = "1"
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "grader", "exercises/lesson_numpy", file], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=300)
    seconds = time.perf_counter() - start
    if "score:" not in proc.stdout:
        raise SystemExit(f"{tree}: {file} gave no score:\n{proc.stdout[-1000:]}\n{proc.stderr[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", required=True, help="the commit to compare with")
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kg-before-") as tmp:
        before = Path(tmp) / "tree"
        subprocess.run(["git", "worktree", "add", "--detach", str(before), args.before], cwd=ROOT, check=True,
                       capture_output=True)
        try:
            trees = {"before": before, "now": ROOT}
            times: dict[tuple[str, bool], list[float]] = {}
            for _ in range(args.rounds):
                for no_ns in (False, True):
                    for name, tree in trees.items():
                        total = sum(grade_once(tree, f, no_ns) for f in FILES)
                        times.setdefault((name, no_ns), []).append(total / len(FILES))
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(before)], cwd=ROOT, capture_output=True)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    print(f"`python bench/jail_cost.py --before {args.before} --rounds {args.rounds}` on {platform.node() or 'this machine'} "
          f"({os.cpu_count()} CPUs), {time.strftime('%Y-%m-%d')}, tree {head}; seconds per grading (median of "
          f"{args.rounds} rounds, each the mean of {len(FILES)} files):\n")
    print(f"| mode | {args.before} | {head} | difference |")
    print("| --- | ---: | ---: | ---: |")
    for no_ns in (False, True):
        b, n = statistics.median(times[("before", no_ns)]), statistics.median(times[("now", no_ns)])
        mode = "KERNEL_GRADER_NO_NAMESPACES=1" if no_ns else "default"
        print(f"| {mode} | {b:.2f} | {n:.2f} | {n - b:+.2f} |")


if __name__ == "__main__":
    main()
