"""Where an ncu run's seconds per profiled launch go (run on a GPU machine).

The batch's profiler (grader.run.parent.profile_broker) runs one ncu child for K gradings' counter
launches: each grading's submission and reference at the traffic check's size, each from a module
of its own. Under ncu each such launch took 0.3 to 1 s (and the first of a run 1.2 to 3 s) on an
H200, against about a millisecond for the kernel. This script runs the same kind of child (the
runner's job of several jobs) for level2's reference solution, K copies each compiled as a distinct
module, under variants of the ncu command line and the job, and prints each variant's wall time and
per-launch times:

    python3 bench/ncu_launch_cost.py [--jobs K] [--variants NAME,...]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader import api, exercise as exercise_module  # noqa: E402
from grader.kinds.cuda_compile import compile_submission  # noqa: E402
from grader.checks.counters import ncu_metrics  # noqa: E402
from grader.run.parent.supervisor import read_results, runner_argv  # noqa: E402
from grader.run.tasks import Task  # noqa: E402
from grader.submission import Submission  # noqa: E402
from grader.tools import find_tools, ncu_env, ncu_wrapper  # noqa: E402


def modules(exercise, count: int, arch: str, tmp: Path, same: bool) -> list[dict[str, str]]:
    """`count` pairs of (submission, reference) CUBINs: the reference solution with a comment of its
    own per copy (a module of its own each), or one compile for all (`same`)."""
    source = exercise.solution_path.read_text()
    pairs = []
    for i in range(count):
        folder = tmp / f"m{i}"
        folder.mkdir()
        salt = 0 if same else i
        text = f"// copy {salt}\n" + source
        sub = Submission(path=exercise.solution_path, name="solution.cu", source=text, sha256=f"{salt:064d}", size=len(text))
        compiled = compile_submission(exercise, sub, arch, folder)
        pairs.append({k: compiled[k]["cubin"] for k in ("submission", "reference")})
    return pairs


def run(variant: str, wrapper: list[str], pairs, exercise, tmp: Path, pool: bool) -> None:
    size = dict(exercise.spec.checks["traffic"].size)
    folder = tmp / variant
    folder.mkdir()
    jobs = []
    for j, mods in enumerate(pairs):
        tasks = [Task(id=f"ncu:{m}:{j}", kind="profile", backend="gpu", module=m, sizes=size, seeds=(j + 1,), compare=False)
                 for m in ("submission", "reference")]
        jobs.append({"modules": mods, "results": str(folder / f"job{j}.jsonl"), "tasks": [t.to_json() for t in tasks]})
    stem = folder / "group"
    stem.with_suffix(".json").write_text(json.dumps({"exercise": str(exercise.root), "backend": "gpu", "pool": pool,
                                                     "step_limit": exercise.spec.limits.step_limit, "budget": False,
                                                     "jobs": jobs}))
    argv = runner_argv(wrapper, stem)
    began = time.time()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=folder, env={**api.child_env(folder), **ncu_env()})
    wall = time.time() - began
    clocks = sorted((r.clock for j in range(len(pairs)) for r in read_results(folder / f"job{j}.jsonl").values() if r.clock),
                    key=lambda c: c["start"])
    if not clocks:
        print(f"{variant:<28} exit {proc.returncode}: no results; {proc.stderr[-600:]}")
        return
    each = [c["end"] - c["start"] for c in clocks]
    log = stem.with_suffix(".log")
    rows = sum(1 for line in (log.read_text(errors="replace") if log.exists() else "").splitlines() if line.startswith('"'))
    print(f"{variant:<28} wall {wall:5.2f} s: ready at {clocks[0]['ready'] - began:4.2f} s, first launch {each[0]:.2f} s, "
          f"then median {statistics.median(each[1:]) if len(each) > 1 else float('nan'):.3f} s "
          f"(min {min(each[1:]) if len(each) > 1 else float('nan'):.3f}), after the last {began + wall - clocks[-1]['end']:.2f} s; "
          f"{len(clocks)} launches, {rows} csv lines, exit {proc.returncode}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--variants", default="default,same-module,no-pool,cache-none,four-metrics,no-ncu")
    args = parser.parse_args()
    ncu = find_tools().ncu
    exercise = exercise_module.load(ROOT / "exercises" / "level2")
    metrics = ncu_metrics(exercise.spec)
    kernels = [k.name for k in exercise.spec.kernel.chain]
    arch = "sm_90"
    tmp = Path(tempfile.mkdtemp(prefix="ncu-launch-cost-"))
    for kind in ("distinct", "same"):
        (tmp / kind).mkdir()
    distinct = modules(exercise, args.jobs, arch, tmp / "distinct", same=False)
    same = modules(exercise, args.jobs, arch, tmp / "same", same=True)
    base = ncu_wrapper(ncu, metrics, kernels)
    variants = {
        "default": (base, distinct, True),
        "same-module": (base, same, True),
        "no-pool": (base, distinct, False),
        "cache-none": (base[:1] + ["--cache-control", "none"] + base[1:], distinct, True),
        "four-metrics": (ncu_wrapper(ncu, [m for m in metrics if "_ld." in m or "_st." in m], kernels), distinct, True),
        "no-ncu": ([], distinct, True),
    }
    print(f"ncu {ncu}; {args.jobs} jobs of 2 launches at {dict(exercise.spec.checks['traffic'].size)}; metrics {len(metrics)}")
    for name in args.variants.split(","):
        wrapper, pairs, pool = variants[name]
        run(name, wrapper, pairs, exercise, tmp, pool)
    return 0


if __name__ == "__main__":
    sys.exit(main())
