"""How fast kernel-grader gives a full verdict, per submission and per class, on this machine.

    python bench/grading_speed.py --backend emu                 # the CPU emulator (CI machine)
    python bench/grading_speed.py --backend gpu --handmade      # on a GPU, against the hand-made pipeline
    python bench/grading_speed.py --backend emu --batch-only --mix correct   # a class of distinct correct kernels
    python bench/grading_speed.py --backend gpu --batch-only --mix class     # a realistic class of 100

Grades the level2 reference, skeleton and every wrong submission one at a time (wall time per
submission: median and worst, and each verdict), then a class of copies through `grade batch`
(submissions per minute). With --handmade it also runs bench/handmade_pipeline.py on the same files
in the same run and reports the ratio of medians. Prints a Markdown section for docs/benchmarks.md.

The batch's mix (--mix):
- bench: copies of the graded files, cycling over the level2 corpus (most fail before the profiler);
- correct: the reference, each copy with a comment line of its own (own bytes, seed and compile);
- class: a realistic class (bench/class_mix.py), about 60% correct (reference/level2/solution.cu
  and the tiled kernel of tests/emu/test_kernels.py), 10% correct but slow
  (tests/data/slow_kernels/level2_*.cu) and 30% broken (reference/level2/wrong/*.cu and the
  skeleton), shares rounded by largest remainder, shuffled, every copy lightly varied (a comment
  line with the student's number, locals renamed, its own indentation: no two files byte-identical)
  and drawn from --class-seed, so a seed is one class. Default size 100. It reports the counts and
  scores per category and, on a GPU, the profiler's lane: its busy share of the batch, ncu runs,
  jobs per run, profiled launches (and reference launches taken from the profiler's cache instead)
  and seconds per profiled launch.

--keep-results FOLDER keeps the batch's results documents, for bench/compare_results.py.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import class_mix  # noqa: E402  (sibling scripts, not a package)
from cpu_sampler import CpuSampler  # noqa: E402
EXERCISE = ROOT / "exercises" / "level2"


def corpus() -> list[Path]:
    ref = ROOT / "reference" / "level2"
    return [ref / "solution.cu", EXERCISE / "skeleton.cu"] + sorted((ref / "wrong").glob("*.cu"))


def byte_compile() -> None:
    """Byte-compile the grader as `pip install` leaves it. The gradings run this checkout's sources;
    where PYTHONDONTWRITEBYTECODE is set (this project's CI machine sets it) no process would ever
    write its .pyc, and every fresh interpreter would compile the grader's modules from source again,
    a cost an installed grader does not have (and one that weighs most on trees that start many
    interpreters, which would flatter a comparison with them)."""
    import compileall

    compileall.compile_dir(str(ROOT / "grader"), quiet=1)


def children_cpu() -> float:
    """CPU seconds of every finished child process (and what they waited for) so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def grade_one(path: Path, backend: str, out: Path) -> tuple[float, dict]:
    start, cpu = time.perf_counter(), children_cpu()
    subprocess.run([sys.executable, "-m", "grader", str(EXERCISE), str(path), "--backend", backend, "--seed", "1",
                    "--json", str(out), "--quiet"], check=True, capture_output=True, cwd=ROOT)
    seconds = time.perf_counter() - start
    cpu = children_cpu() - cpu
    doc = json.loads(out.read_text())
    failed = sorted({t["tags"][0] for t in doc["tests"] if t["status"] == "failed" and not t["extra_data"].get("gated")})
    timeline = ", ".join(f"{s['name']} {s['start']:.1f}+{s['seconds']:.1f}" for s in doc["extra_data"].get("stages", []))
    # inside grade() against the whole command: the rest is Python's start, imports and exit
    inside = doc.get("execution_time", float("nan"))
    return seconds, {"score": doc["score"], "failed": failed, "timeline": f"grade() {inside:.2f} s; {timeline}", "cpu": cpu}


def _hand_verdict(hand: dict) -> str:
    """The hand-made pipeline's findings in a table cell: which of its checks failed."""
    verdict = hand.get("verdict") or {}
    failed = [k for k, v in verdict.items() if v is False]
    sectors = verdict.get("traffic_sectors")
    return (", ".join(failed) or "nothing failed") + (f"; {sectors:,.0f} load sectors" if isinstance(sectors, (int, float)) else "")


def run_batch(argv: list[str], out: Path, size: int, limit: float | None,
              alone: dict[str, float] | None = None,
              categories: dict[str, str] | None = None) -> tuple[float, bool, list[str]]:
    """Run `grade batch`, printing every 10 s how many results are in; stop it after `limit` seconds.
    Then print where the finished gradings spent their time (summed stage seconds): a batch that is
    too slow explains itself. `categories`: each original file's category (the class mix), to count
    and score the results by. Returns (seconds, whether it finished, lines for the Markdown section:
    the categories and the profiler's lane)."""
    start, cpu, wall = time.perf_counter(), children_cpu(), time.time()
    # The batch's profilers write their ncu runs here at the end (a path already set is kept: a copy to look at later).
    runs_log = Path(os.environ.get("KERNEL_GRADER_PROFILER_LOG") or out.parent / "profiler-runs.json")
    timeline = out.parent / "batch-timeline.json"  # the batch's own steps after its last grading
    env = {**os.environ, "KERNEL_GRADER_PROFILER_LOG": str(runs_log), "KERNEL_GRADER_BATCH_TIMELINE": str(timeline)}
    with CpuSampler() as sampler:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT, start_new_session=True,
                                env=env)
        finished = True
        while proc.poll() is None:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            elapsed = time.perf_counter() - start
            print(f"batch: {len(list((out / 'results').glob('*.json')))} of {size} graded after {elapsed:.0f} s", flush=True)
            if limit is not None and elapsed > limit and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait()
                finished = False
        seconds = max(time.perf_counter() - start, 1e-9)
    cpu = children_cpu() - cpu
    landed = [p.stat().st_mtime for p in (out / "results").glob("*.json")]
    if landed:  # what the batch does after its last grading: the gradebook, the reports, shutting its workers down
        print(f"batch: the last result was written after {max(landed) - wall:.1f} s; the batch ended "
              f"{seconds - (max(landed) - wall):.1f} s later", flush=True)
    if timeline.exists():  # seconds since grade batch began its work, and each step's own seconds
        steps = json.loads(timeline.read_text())
        print("batch timeline: " + ", ".join(f"{what} at {at:.1f} s (+{at - before:.1f})" for (what, at), (_, before)
                                             in zip(steps, [("", steps[0][1])] + steps[:-1])), flush=True)
    if finished and proc.returncode not in (0, 1):
        raise SystemExit(f"grade batch failed: {proc.stderr.read().decode(errors='replace')[-2000:]}")
    totals: dict[str, float] = {}
    docs = [json.loads(p.read_text()) for p in sorted((out / "results").glob("*.json"))]
    for doc in docs:
        for stage in doc.get("extra_data", {}).get("stages", []):
            totals[stage["name"]] = totals.get(stage["name"], 0.0) + stage["seconds"]
    # Copies of one file must get one score: a second score means a check depended on the load.
    # (Each copy is named studentNNN_<original file>.)
    originals = [doc.get("extra_data", {}).get("batch", {}).get("student", "?").split("_", 1)[-1] for doc in docs]
    scores: dict[str, Counter] = {}
    for original, doc in zip(originals, docs):
        scores.setdefault(original, Counter())[round(float(doc.get("score", -1)), 2)] += 1
    print("batch scores by original file: " + "; ".join(f"{k} {dict(v)}" for k, v in sorted(scores.items())))
    summary = category_lines(originals, docs, categories, size) if categories else []
    print("\n".join(summary))
    # Each copy must also score what the file scored graded alone (before the batch, same seed rules).
    differ = {k: (alone[k], dict(v)) for k, v in scores.items() if alone and k in alone and set(v) != {round(alone[k], 2)}}
    print("batch against alone: " + ("every copy scores what its file scored alone" if alone and not differ else
                                     "; ".join(f"{k}: alone {a:g}, batch {b}" for k, (a, b) in sorted(differ.items()))
                                     if alone else "(not compared: --batch-only)"))
    # Where copies disagree, which tests did (a racy kernel may fail differently run to run).
    by_test: dict[tuple[str, str], Counter] = {}
    for original, doc in zip(originals, docs):
        if len(scores[original]) > 1:
            for t in doc.get("tests", []):
                by_test.setdefault((original, t.get("name", "?")), Counter())[t.get("score")] += 1
    for (original, test), seen in sorted(by_test.items()):
        if len(seen) > 1:
            print(f"    copies of {original} differ in {test}: {dict(seen)}")
            for o, doc in zip(originals, docs):  # each copy's own numbers, e.g. the times behind a speed
                for t in doc.get("tests", []):
                    if o == original and t.get("name") == test and t.get("tags", [""])[0] == "performance":
                        extra = t.get("extra_data", {})
                        print(f"        {t.get('score')}: median {extra.get('median_ms')}, min {extra.get('min_ms')}")
    # The performance check's measured speed (fraction of the reference's) across copies of one file:
    # how far a copy could drift, and how near a step's edge the file sits.
    speeds: dict[str, list[float]] = {}
    for original, doc in zip(originals, docs):
        for t in doc.get("tests", []):
            fraction = t.get("extra_data", {}).get("fraction_of_reference")
            if isinstance(fraction, (int, float)):
                speeds.setdefault(original, []).append(float(fraction))
    if speeds:
        print("speed against the reference, by file (min, median, max over its copies): " + "; ".join(
            f"{k} {min(v):.3f} {statistics.median(v):.3f} {max(v):.3f} ({len(v)})" for k, v in sorted(speeds.items())))
    # The longest waits for the GPU: a launch that waits SHARE_WAIT (10 s) for a timing goes on unlocked.
    waits = sorted(((sum(s["seconds"] for s in doc.get("extra_data", {}).get("stages", [])
                         if s["name"] == "gpu launches: waiting for the GPU"), student)
                    for student, doc in zip(originals, docs)), reverse=True)
    print("longest waits for the GPU, per grading: " + ", ".join(f"{w:.2f} s ({k})" for w, k in waits[:5]))
    print(f"batch profile: {len(docs)} gradings; stage seconds summed over them (stages overlap within a grading):")
    for name, total in sorted(totals.items(), key=lambda kv: -kv[1])[:25]:
        print(f"    {name:<48} {total:8.1f} s  ({total / max(len(docs), 1):.2f} s per grading)")
    print(f"batch CPU: {cpu:.0f} s of CPU time in {seconds:.0f} s on {os.cpu_count()} CPUs "
          f"({cpu / seconds:.1f} CPUs busy on average; {cpu / max(len(docs), 1):.1f} s per finished grading)")
    print("\n".join(sampler.table(per=len(docs))))
    if runs_log.exists():
        runs = json.loads(runs_log.read_text())
        print("\n".join(profiler_lines(runs, seconds)))
        summary.append(lane_line(runs, seconds))
    else:
        summary.append("Profiler: no log (no ncu runs: the emulator backend, or an exercise without counter checks).")
    return seconds, finished, summary


def category_lines(originals: list[str], docs: list[dict], categories: dict[str, str], size: int) -> list[str]:
    """The class's results by category: how many submissions, how many graded, mean score, how many at
    full marks and how many below 10."""
    by: dict[str, list[float]] = {}
    for original, doc in zip(originals, docs):
        by.setdefault(categories.get(original, "?"), []).append(float(doc.get("score", -1)))
    planned = Counter(categories.get(o, "?") for o in originals)
    lines = ["| category | graded | mean score | full marks | below 10 |", "| --- | ---: | ---: | ---: | ---: |"]
    for cat in sorted(by, key=lambda c: -planned[c]):
        got = by[cat]
        lines.append(f"| {cat} | {len(got)} | {statistics.mean(got):.1f} | {sum(s >= 99.995 for s in got)} | "
                     f"{sum(s < 10 for s in got)} |")
    return [f"Class of {size}: " + ", ".join(f"{c} {n}" for c, n in planned.most_common()) + " graded.", ""] + lines + [""]


def lane_figures(runs: list[dict], seconds: float) -> dict[str, float]:
    """The profiler lane's figures for a batch of `seconds`: ncu runs, jobs, profiled launches, busy
    seconds (summed over GPUs), busy share of the batch, seconds of lane per profiled launch, and the
    median launch (its own clock, from the child's record of it)."""
    launches = [l[1] - l[0] for r in runs for l in r.get("launches") or []]
    busy = sum(r["end"] - r["start"] for r in runs)
    # (a log written before the profiler remembered reference launches has no "cached" or "metrics")
    metrics = sorted({r["metrics"] for r in runs if r.get("metrics")})
    return {"runs": len(runs), "jobs": sum(r["jobs"] for r in runs), "launches": len(launches), "busy": busy,
            "share": busy / seconds, "per_launch": busy / len(launches) if launches else float("nan"),
            "median_launch": statistics.median(launches) if launches else float("nan"),
            "cached": sum(r.get("cached", 0) for r in runs), "metrics": metrics}


def lane_line(runs: list[dict], seconds: float) -> str:
    """The profiler lane in one sentence (lane_figures)."""
    if not runs:
        return "Profiler: no ncu runs."
    f = lane_figures(runs, seconds)
    asked = f" ({'/'.join(map(str, f['metrics']))} metrics asked)" if f["metrics"] else ""
    return (f"Profiler: lane busy {f['busy']:.1f} s, {f['share']:.0%} of the batch; {f['runs']} ncu runs of "
            f"{f['jobs'] / f['runs']:.1f} jobs on average; {f['launches']} profiled launches{asked} and "
            f"{f['cached']} reference launches from the batch's cache, {f['per_launch']:.2f} s "
            f"of lane per profiled launch (start-up and reports included), a launch {f['median_launch']:.2f} s median.")


def profiler_lines(runs: list[dict], seconds: float) -> list[str]:
    """The batch's ncu runs summed up: how many, how full, how long, how busy each GPU's lane was, and
    how long a request waited from its arrival to its run's start (queue and linger) and to its answer."""
    if not runs:
        return ["profiler: no ncu runs"]
    jobs = [r["jobs"] for r in runs]
    lengths = [r["end"] - r["start"] for r in runs]
    queued = [r["start"] - a for r in runs for a in r["arrived"]]
    answered = [r["end"] - a for r in runs for a in r["arrived"]]
    busy: dict[str, float] = {}
    for r, length in zip(runs, lengths):
        busy[r["gpu"] or "?"] = busy.get(r["gpu"] or "?", 0.0) + length
    return [lane_line(runs, seconds),
            f"profiler: {len(runs)} ncu runs for {sum(jobs)} requests ({statistics.mean(jobs):.1f} a run, most {max(jobs)}); "
            f"a run {statistics.median(lengths):.2f} s median, {max(lengths):.2f} s longest; lane busy "
            + ", ".join(f"GPU {g} {b:.1f} s ({b / seconds:.0%} of the batch)" for g, b in sorted(busy.items())),
            f"profiler: a request waited {statistics.mean(queued):.2f} s on average for its run to start "
            f"(most {max(queued):.2f} s) and {statistics.mean(answered):.2f} s for its answer (most {max(answered):.2f} s)"] \
        + _run_parts([r for r in runs if r.get("launches")])


def _run_parts(runs: list[dict]) -> list[str]:
    """Where a group's ncu run spends its time, medians over the runs (seconds from the run's start)."""
    if not runs:
        return []
    med = statistics.median
    first = [r["launches"][0][0] for r in runs]
    each = [(l[1] - l[0], l[2]) for r in runs for l in r["launches"]]
    last = [r["end"] - r["start"] - r["launches"][-1][1] for r in runs]
    ready = [r["ready"] for r in runs if r.get("ready") is not None]
    return [f"profiler: a group run's parts (medians over {len(runs)}): child ready at {med(ready) if ready else float('nan'):.2f} s, "
            f"first launch at {med(first):.2f} s; a launch {med([e[0] for e in each]):.3f} s (longest "
            f"{max(e[0] for e in each):.2f} s) of which waiting for the GPU {med([e[1] for e in each]):.3f} s "
            f"(most {max(e[1] for e in each):.2f} s); after the last launch {med(last):.2f} s"]


def without_check(exercise: Path, check: str, copy: Path) -> Path:
    """A copy of the exercise whose spec.toml lacks the [checks.CHECK] table (and its sub-tables), in a
    course folder of its own (COPY/exercises/NAME, with reference/NAME beside it)."""
    shutil.copytree(exercise.parent.parent / "reference" / exercise.name, copy / "reference" / exercise.name)
    copy = copy / "exercises" / exercise.name
    shutil.copytree(exercise, copy)
    kept, skipping = [], False
    for line in (copy / "spec.toml").read_text().splitlines(keepends=True):
        header = line.strip()
        if header.startswith("["):
            skipping = header.startswith(f"[checks.{check}]") or header.startswith(f"[checks.{check}.")
        if not skipping:
            kept.append(line)
    (copy / "spec.toml").write_text("".join(kept))
    print(f"graded without the {check} check ({copy})", flush=True)
    return copy


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=("emu", "gpu"), required=True)
    parser.add_argument("-n", "--class-size", type=int, default=None,
                        help="submissions in the batch (default: 100 for --mix class, else 30 emu, 100 gpu)")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--per-gpu", type=int, default=None, help="gradings sharing one GPU in the batch (grade batch --per-gpu)")
    parser.add_argument("--no-warm", action="store_true", help="grade batch --no-warm: a fresh interpreter per child")
    parser.add_argument("--profile-group", type=int, default=None,
                        help="ncu runs per GPU profile up to this many gradings (grade batch --profile-group; 0: each its own)")
    parser.add_argument("--handmade", action="store_true", help="also run the hand-made pipeline (GPU only)")
    parser.add_argument("--limit", type=int, default=None, help="grade only the first K files (a quick profile)")
    parser.add_argument("--batch-only", action="store_true", help="skip the one-at-a-time gradings; time only grade batch")
    parser.add_argument("--batch-limit", type=float, default=None,
                        help="stop the batch after this many seconds and report how far it got (default: no limit)")
    parser.add_argument("--mix", choices=("bench", "correct", "class"), default="bench",
                        help="the batch's files: copies of the graded files (bench), distinct correct kernels, the "
                             "reference with a comment of its own each (own bytes, seed and compile), graded in full "
                             "(correct), or a realistic class: 60%% correct, 10%% slow but correct, 30%% broken, every "
                             "copy varied (class; see above)")
    parser.add_argument("--class-seed", type=int, default=0, help="the seed --mix class draws its class from (default 0)")
    parser.add_argument("--without", metavar="CHECK", default=None,
                        help="a diagnostic: grade the batch with a copy of the exercise whose spec lacks this check "
                             "(e.g. traffic), to measure what that check costs the batch")
    parser.add_argument("--keep-results", metavar="FOLDER", type=Path, default=None,
                        help="copy the batch's results documents (results/<student>.json) into FOLDER, to compare two "
                             "runs' verdicts with bench/compare_results.py")
    args = parser.parse_args()
    byte_compile()
    files = corpus()[:args.limit]
    tmp = Path(tempfile.mkdtemp(prefix="grading-speed-"))
    exercise = without_check(EXERCISE, args.without, tmp / "course") if args.without else EXERCISE
    rows = []
    try:
        for path in ([] if args.batch_only else files):
            seconds, verdict = grade_one(path, args.backend, tmp / f"{path.stem}.json")
            hand = None
            if args.handmade:
                proc = subprocess.run([sys.executable, str(ROOT / "bench/handmade_pipeline.py"), str(path)],
                                      capture_output=True, text=True, cwd=ROOT)
                hand = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else {"seconds": float("nan")}
            rows.append((path, seconds, verdict, hand))
            print(f"{path.name:<32} {seconds:6.1f} s  CPU {verdict['cpu']:5.1f} s  score {verdict['score']:g} failed {verdict['failed']}"
                  + (f"  hand-made {hand['seconds']:.1f} s {hand.get('stages')} verdict {hand.get('verdict')}" if hand else ""),
                  flush=True)
            print(f"    stages (start+seconds): {verdict['timeline']}", flush=True)
        size = args.class_size if args.class_size is not None else (
            100 if args.mix == "class" or args.backend == "gpu" else 30)
        klass = tmp / "class"
        klass.mkdir()
        categories = None
        if args.mix == "class":
            copies = class_mix.build(size, args.class_seed)
            class_mix.write(copies, klass)
            categories = {c.original.stem: c.original.category for c in copies}
        for i in range(size if args.mix != "class" else 0):
            src = files[i % len(files)]
            if args.mix == "correct":
                solution = corpus()[0]
                (klass / f"student{i:03d}_{solution.stem}.cu").write_text(f"// student {i:03d}\n" + solution.read_text())
            else:
                shutil.copy(src, klass / f"student{i:03d}_{src.stem}.cu")
        batch = [sys.executable, "-m", "grader", "batch", str(exercise), str(klass), "--out", str(tmp / "out"),
                 "--backend", args.backend, "--quiet"] + (["--workers", str(args.workers)] if args.workers else []) \
            + (["--per-gpu", str(args.per_gpu)] if args.per_gpu else []) \
            + (["--profile-group", str(args.profile_group)] if args.profile_group is not None else []) \
            + (["--no-warm"] if args.no_warm else []) \
            + (["--seed", "1"] if rows else [])  # the seed of the lone gradings above: their scores are comparable
        alone = {path.stem: verdict["score"] for path, _, verdict, _ in rows}
        batch_seconds, finished, summary = run_batch(batch, tmp / "out", size, args.batch_limit, alone, categories) \
            if size else (1e-9, True, [])
        if args.keep_results is not None:
            args.keep_results.mkdir(parents=True, exist_ok=True)
            for doc in sorted((tmp / "out" / "results").glob("*.json")):
                shutil.copy(doc, args.keep_results / doc.name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    times = [r[1] for r in rows] or [float("nan")]
    lines = [f"## Grading speed: {args.backend} backend", "",
             f"Command: `python bench/grading_speed.py --backend {args.backend}" + (" --handmade" if args.handmade else "")
             + (f" --mix {args.mix}" if args.mix != "bench" else "")
             + (f" --class-seed {args.class_seed}" if args.mix == "class" and args.class_seed else "")
             + (f" -n {size}" if args.class_size is not None else "") + (" --batch-only" if args.batch_only else "") + "`; "
             f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, load average at the end "
             f"{os.getloadavg()[0]:.2f}.", "",
             "| submission | seconds | score | categories failed |" + (" hand-made seconds | hand-made verdict |" if args.handmade else ""),
             "| --- | ---: | ---: | --- |" + (" ---: | --- |" if args.handmade else "")]
    for path, seconds, verdict, hand in rows:
        lines.append(f"| {path.name} | {seconds:.1f} | {round(verdict['score'], 2):g} | {', '.join(verdict['failed']) or '-'} |"
                     + (f" {hand['seconds']:.1f} | {_hand_verdict(hand)} |" if hand else ""))
    lines += ["", f"Per submission: median {statistics.median(times):.1f} s, worst {max(times):.1f} s.",
              f"`grade batch` of {size} submissions: {batch_seconds:.0f} s ({size / batch_seconds * 60:.1f} submissions per minute)."
              if finished else f"`grade batch` of {size} submissions: stopped by --batch-limit after {batch_seconds:.0f} s."]
    lines += [""] + summary if summary else []
    if args.handmade:
        hand_times = [r[3]["seconds"] for r in rows]
        lines.append(f"Hand-made pipeline: median {statistics.median(hand_times):.1f} s; ratio of medians "
                     f"{statistics.median(hand_times) / statistics.median(times):.2f}x.")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
