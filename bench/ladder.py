"""The lesson's ladder, measured: level1, level2 and level3 references against cuBLAS on one GPU.

    python bench/ladder.py --size 4096 --out ladder.md   (then paste the table into docs/benchmarks.md)

Times each reference kernel with the grader's own timing (CUDA events, warm-up, L2 flush, median),
times cuBLAS (CuPy's matmul) the same way, and counts global load sectors with Nsight Compute.
Writes a Markdown table next to the lesson's figures (12.8%, 36.5%, 68.7% of cuBLAS).
"""
from __future__ import annotations

import argparse
import datetime
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Mapping

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from grader import api  # noqa: E402
from grader.kinds.cuda_compile import compile_submission  # noqa: E402
from grader import submission as submission_module  # noqa: E402
from grader.run.parent.device_probe import probe  # noqa: E402
from grader.exercise import load  # noqa: E402
from grader.profile import profile  # noqa: E402
from grader.run.parent.supervisor import TaskSupervisor  # noqa: E402
from grader.run.tasks import Task  # noqa: E402

LESSON = {"level1": "12.8%", "level2": "36.5%", "level3": "68.7%"}
LD = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"


def time_reference(exercise_id: str, sizes: Mapping[str, int], tmp: Path, arch: str) -> dict[str, float]:
    """Median ms of the reference solution and of the library baseline at `sizes`, timed in turns in
    one child (bench/library_ladder.py uses it too)."""
    ex = load(Path("exercises") / exercise_id)
    sub, _ = submission_module.read(ex.solution_path)
    compiled = compile_submission(ex, sub, arch, tmp / exercise_id)
    runner = TaskSupervisor(exercise_root=ex.root, workdir=tmp / exercise_id, limits=ex.spec.limits, env=api.child_env(tmp),
                    modules={"gpu": {"submission": compiled["submission"]["cubin"]}})
    task = Task(id="time", kind="time", backend="gpu", module="submission", rivals=("baseline",), sizes=dict(sizes),
                seeds=(1,), repeats=20)
    result = runner.run([task], backend="gpu", timeout=300).results["time"]
    ms = result.data.get("median_ms", {})
    return {m: ms.get(m, float("nan")) for m in ("submission", "baseline")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    gpu = probe()
    if not gpu.available:
        print(f"no GPU: {gpu.reason}")
        return 2
    n = args.size
    flop = 2.0 * n**3
    rows = []
    tmp = Path(tempfile.mkdtemp(prefix="ladder-"))
    try:
        for ex_id in ("level1", "level2", "level3"):
            (tmp / ex_id).mkdir()
            ms = time_reference(ex_id, {"N": n}, tmp, gpu.arch)
            sectors = profile(Path("exercises") / ex_id, Path("reference") / ex_id / "solution.cu", {"N": n}, backend="gpu").counters.get(LD)
            rows.append((ex_id, ms["submission"], ms["baseline"], sectors))
            print(ex_id, ms, sectors, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    cublas_ms = min(r[2] for r in rows)  # cuBLAS was timed beside each kernel; report its best
    lines = [
        f"# The lesson's ladder, measured ({gpu.name}, N = {n}, fp32)", "",
        f"Command: `python bench/ladder.py --size {n} --out {args.out}` on {datetime.date.today()}.",
        "Median of 20 launches with CUDA events, after 3 warm-up launches, the L2 flushed before each.", "",
        "| kernel | ms | TFLOP/s | % of cuBLAS (same run) | lesson's figure | global load sectors (ncu) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for ex_id, ms, base, sectors in rows:
        lines.append(f"| {ex_id} reference | {ms:.3f} | {flop / ms / 1e9:.1f} | {base / ms:.1%} | {LESSON[ex_id]} | "
                     f"{sectors:,.0f} |" if sectors is not None else f"| {ex_id} | {ms:.3f} | - | - | - | - |")
    lines.append(f"| cuBLAS (CuPy matmul) | {cublas_ms:.3f} | {flop / cublas_ms / 1e9:.1f} | 100% | 100% | - |")
    lines.append("")
    lines.append("Each kernel's % of cuBLAS divides the cuBLAS median measured in the same child process by the kernel's.")
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
