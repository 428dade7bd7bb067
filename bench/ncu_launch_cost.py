"""Where an ncu run's seconds per profiled launch go (run on a GPU machine, within --budget seconds).

The batch's profiler (grader.run.parent.profile_broker) runs one ncu child for K gradings' counter
launches: each grading's submission and reference at the traffic check's size, each from a module
of its own. This script runs the same kind of child (the runner's job of several jobs) for level2's
reference solution, K copies each compiled as a distinct module, under variants of the ncu command
line and of the job, and prints a Markdown table of each variant's wall time and per-launch times:

    python3 bench/ncu_launch_cost.py [--jobs K] [--variants NAME,...] [--ncu PATH]

The variants (variants(); DEFAULT_VARIANTS, every one but the last three, run by default):

- no-ncu: the runner alone, no ncu: the kernels' and the runner's own cost.
- startup: ncu around the runner with a kernel filter that matches nothing: ncu's start-up and
  injection, no launch profiled (its wall minus no-ncu's is what ncu's start-up costs).
- grader: ncu's command line exactly as the grader builds it (grader.tools.ncu_wrapper with
  grader.checks.counters.ncu_metrics of the spec): the figure the rest compare with.
- passes: the same with two profiler-side metrics added, profiler__replayer_passes (the replay
  passes of each launch, unit "pass") and profiler__replayer_bytes_mem_backed_up.sum (bytes ncu
  saved and restored between passes); every variant below carries them too, so each row says its
  passes.
- one-metric: only the first metric the traffic check compares: the passes one metric needs.
- no-atomics: the grader's metric set without the four global atomic metrics (load and store
  sectors and requests): what the grader asks ncu for when neither module's PTX has a global or
  generic atomic (grader.checks.counters.ncu_request, grader.checks.atomic_free), as level2's have not.
- cache-none: --cache-control none (the grader runs ncu's default, all: caches flushed before
  every pass).
- replay-application: --replay-mode application: ncu runs the whole runner once per pass instead
  of saving and restoring the kernel's memory (per-launch clocks are the last pass's; wall is the
  figure).
- half-size: the grader's metric set at half the profiled size in every dimension.
- same-module, no-pool, four-metrics: one compile for every job, the runner without its module
  pool, the load and store sector metrics only.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader import api, exercise as exercise_module  # noqa: E402
from grader.kinds.cuda_compile import compile_submission  # noqa: E402
from grader.checks.counters import ATOMIC_METRICS, ncu_metrics  # noqa: E402
from grader.run.parent.supervisor import read_results, runner_argv  # noqa: E402
from grader.run.tasks import Task  # noqa: E402
from grader.submission import Submission  # noqa: E402
from grader.tools import find_tools, ncu_env, ncu_wrapper, parse_ncu_csv  # noqa: E402

PASSES = "profiler__replayer_passes"
BACKED_UP = "profiler__replayer_bytes_mem_backed_up.sum"
PROFILER_METRICS = (PASSES, BACKED_UP)
# replay-application last: it runs the whole child once per pass, the one a spent budget may cut
DEFAULT_VARIANTS = ("no-ncu", "startup", "grader", "passes", "one-metric", "no-atomics", "cache-none", "half-size",
                    "replay-application")


@dataclass(frozen=True)
class Variant:
    """One way to run the child: ncu's argv prefix ([] for none), which modules, pool or not, at what size."""

    what: str
    wrapper: tuple[str, ...]
    same_module: bool = False
    pool: bool = True
    half: bool = False


@dataclass(frozen=True)
class Row:
    """What one variant's run measured (NaN where it has no such figure)."""

    name: str
    what: str
    size: str
    wall: float
    ready: float
    first: float
    further: float
    launches: int
    passes: str
    backed_up: float
    exit: int | str


def _with_options(wrapper: Sequence[str], *options: str) -> tuple[str, ...]:
    """ncu's argv with `options` right after the executable (before the target's argv)."""
    return (wrapper[0], *options, *wrapper[1:])


def variants(ncu: str, metrics: Sequence[str], kernels: Sequence[str]) -> dict[str, Variant]:
    """Every variant this script knows (the module's docstring says what each measures)."""
    grader = tuple(ncu_wrapper(ncu, metrics, kernels))
    counted = tuple(ncu_wrapper(ncu, [*metrics, *PROFILER_METRICS], kernels))
    loads_stores = [m for m in metrics if "_ld." in m or "_st." in m]
    no_atomics = [m for m in metrics if m not in ATOMIC_METRICS]
    return {
        "no-ncu": Variant("the runner alone", ()),
        "startup": Variant("ncu, no launch profiled", tuple(ncu_wrapper(ncu, metrics, ["no_kernel_is_named_this"]))),
        "grader": Variant("the grader's ncu command", grader),
        "passes": Variant("+ pass and backup metrics", counted),
        "one-metric": Variant(f"one metric ({metrics[0]})", tuple(ncu_wrapper(ncu, [metrics[0], *PROFILER_METRICS], kernels))),
        "no-atomics": Variant("no global atomic metrics (atomic-free modules)",
                              tuple(ncu_wrapper(ncu, [*no_atomics, *PROFILER_METRICS], kernels))),
        "cache-none": Variant("--cache-control none", _with_options(counted, "--cache-control", "none")),
        "replay-application": Variant("--replay-mode application", _with_options(counted, "--replay-mode", "application")),
        "half-size": Variant("half the profiled size", counted, half=True),
        "same-module": Variant("one module for every job", counted, same_module=True),
        "no-pool": Variant("the runner without its module pool", counted, pool=False),
        "four-metrics": Variant("load and store sectors only",
                                tuple(ncu_wrapper(ncu, [*loads_stores, *PROFILER_METRICS], kernels))),
    }


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
        pairs.append({k: compiled[k].get("cubin", "") for k in ("submission", "reference")})
    return pairs


def log_figures(text: str) -> tuple[str, float]:
    """From an ncu log: the replay passes per profiled launch ("9", "8-9" where launches differ, "-"
    where the log says none) and the median bytes saved and restored per launch (NaN if not asked).
    The passes come from the profiler__replayer_passes column, or else from ncu's progress lines
    (`==PROF== Profiling "kernel": 0%....50%....100% - 9 passes`)."""
    rows = parse_ncu_csv(text, PROFILER_METRICS).rows
    passes = [int(r[PASSES]) for r in rows if PASSES in r and not math.isnan(r[PASSES])]
    if not passes:
        passes = [int(n) for n in re.findall(r"==PROF==.*?(\d+) pass(?:es)?\b", text)]
    backed = [r[BACKED_UP] for r in rows if BACKED_UP in r and not math.isnan(r[BACKED_UP])]
    said = "-" if not passes else str(passes[0]) if min(passes) == max(passes) else f"{min(passes)}-{max(passes)}"
    return said, statistics.median(backed) if backed else float("nan")


def run(name: str, variant: Variant, pairs, exercise, tmp: Path, limit: float) -> Row:
    """Run the child for `pairs` under `variant` and measure it; a run past `limit` seconds is stopped
    with its process group (ncu's target included) and reported with exit "timeout"."""
    size = dict(exercise.spec.checks["traffic"].size)
    if variant.half:
        size = {k: max(1, v // 2) for k, v in size.items()}
    folder = tmp / name
    folder.mkdir()
    jobs = []
    for j, mods in enumerate(pairs):
        tasks = [Task(id=f"ncu:{m}:{j}", kind="profile", backend="gpu", module=m, sizes=size, seeds=(j + 1,), compare=False)
                 for m in ("submission", "reference")]
        jobs.append({"modules": mods, "results": str(folder / f"job{j}.jsonl"), "tasks": [t.to_json() for t in tasks]})
    stem = folder / "group"
    stem.with_suffix(".json").write_text(json.dumps({"exercise": str(exercise.root), "backend": "gpu", "pool": variant.pool,
                                                     "step_limit": exercise.spec.limits.step_limit, "budget": False,
                                                     "jobs": jobs}))
    argv = runner_argv(list(variant.wrapper), stem)
    began = time.time()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=folder,
                            env={**api.child_env(folder), **ncu_env()}, start_new_session=True)
    try:
        _, stderr = proc.communicate(timeout=limit)
        code: int | str = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, stderr = proc.communicate()
        code = "timeout"
    wall = time.time() - began
    clocks = sorted((r.clock for j in range(len(pairs)) for r in read_results(folder / f"job{j}.jsonl").values() if r.clock),
                    key=lambda c: c["start"])
    each = [c["end"] - c["start"] for c in clocks]
    log = stem.with_suffix(".log")
    passes, backed = log_figures(log.read_text(errors="replace") if log.exists() else "")
    if code != 0 or not clocks:
        print(f"{name}: exit {code}, {len(clocks)} launches; {stderr[-600:]}", file=sys.stderr, flush=True)
    nan = float("nan")
    return Row(name, variant.what, ", ".join(f"{k} = {v}" for k, v in size.items()), wall,
               clocks[0]["ready"] - began if clocks and clocks[0].get("ready") else nan, each[0] if each else nan,
               statistics.median(each[1:]) if len(each) > 1 else nan, len(each), passes, backed, code)


def _cell(value: float, digits: int = 2) -> str:
    return "-" if math.isnan(value) else f"{value:.{digits}f}"


def table(rows: Sequence[Row]) -> list[str]:
    """The variants as a Markdown table, then what the rows say together: ncu's start-up (startup's
    wall less no-ncu's) and each ncu variant's wall per profiled launch beyond startup's."""
    lines = ["| variant | what | size | wall s | child ready at s | first launch s | further launch, median s | "
             "launches | passes a launch | bytes saved and restored a launch | exit |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        backed = "-" if math.isnan(r.backed_up) else f"{r.backed_up:,.0f}"
        lines.append(f"| {r.name} | {r.what} | {r.size} | {_cell(r.wall)} | {_cell(r.ready)} | {_cell(r.first)} | "
                     f"{_cell(r.further, 3)} | {r.launches} | {r.passes} | {backed} | {r.exit} |")
    by = {r.name: r for r in rows}
    notes = []
    if "startup" in by and "no-ncu" in by:
        notes.append(f"ncu's start-up (startup's wall less no-ncu's): {by['startup'].wall - by['no-ncu'].wall:.2f} s.")
    if "startup" in by:
        extra = [f"{r.name} {(r.wall - by['startup'].wall) / r.launches:.3f} s" for r in rows
                 if r.launches and r.name not in ("startup", "no-ncu")]
        if extra:
            notes.append("Wall per profiled launch beyond startup's wall: " + ", ".join(extra) + ".")
    return lines + ([""] + notes if notes else [])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=8, help="jobs of 2 profiled launches in each run (default 8)")
    parser.add_argument("--variants", default=",".join(DEFAULT_VARIANTS), help="comma-separated, in order (default: %(default)s)")
    parser.add_argument("--ncu", default=None, help="the ncu binary (default: the one the grader finds)")
    parser.add_argument("--limit", type=float, default=60.0, help="seconds a variant's run may take (default 60)")
    parser.add_argument("--budget", type=float, default=160.0,
                        help="seconds all the runs may take together (default 160, with the compiles under 3 minutes): a "
                             "run gets what is left, up to --limit; none is started once it is spent")
    parser.add_argument("--keep", action="store_true", help="keep the runs' folders (ncu's logs) and print where")
    parser.add_argument("--arch", default="sm_90", help="the GPU's architecture to compile for (default sm_90, an H200)")
    args = parser.parse_args(argv)
    ncu = args.ncu or find_tools().ncu
    if not ncu:
        parser.error("no ncu found: give --ncu PATH")
    exercise = exercise_module.load(ROOT / "exercises" / "level2")
    metrics = ncu_metrics(exercise.spec)
    kernels = [k.name for k in exercise.spec.kernel.chain]
    known = variants(ncu, metrics, kernels)
    names = [n for n in args.variants.split(",") if n]
    unknown = [n for n in names if n not in known]
    if unknown:
        parser.error(f"unknown variants {', '.join(unknown)}; known: {', '.join(known)}")
    tmp = Path(tempfile.mkdtemp(prefix="ncu-launch-cost-"))
    try:
        rows = _measure(args, names, known, exercise, metrics, ncu, tmp)
    finally:
        if args.keep:
            print(f"the runs' folders: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print("\n".join(table(rows)))
    return 0


def _measure(args, names: Sequence[str], known: dict[str, Variant], exercise, metrics: Sequence[str], ncu: str,
             tmp: Path) -> list[Row]:
    """Compile the modules the variants need and run each variant within the budget."""
    pairs: dict[bool, list[dict[str, str]]] = {}
    for same in sorted({known[n].same_module for n in names}):
        (tmp / str(same)).mkdir()
        pairs[same] = modules(exercise, args.jobs, args.arch, tmp / str(same), same)
    print(f"ncu {ncu}; {args.jobs} jobs of 2 launches (submission and reference) at "
          f"{dict(exercise.spec.checks['traffic'].size)}; the grader's metrics ({len(metrics)}): {', '.join(metrics)}", flush=True)
    rows = []
    deadline = time.monotonic() + args.budget
    for name in names:
        left = deadline - time.monotonic()
        if left <= 1:
            print(f"{name}: not run, the --budget of {args.budget:.0f} s is spent", flush=True)
            continue
        rows.append(run(name, known[name], pairs[known[name].same_module], exercise, tmp, min(args.limit, left)))
        print(f"{name}: wall {rows[-1].wall:.2f} s, {rows[-1].launches} launches, passes {rows[-1].passes}", flush=True)
    return rows


if __name__ == "__main__":
    sys.exit(main())
