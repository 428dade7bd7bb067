"""The course kernels against their library baselines: reduction (CuPy sum), softmax (a CuPy
softmax), histogram (cupy.bincount) and half_gemv (cuBLAS through cp.matmul), on one GPU.

    python bench/library_ladder.py --out library_ladder.md   (then paste the table into docs/benchmarks.md)

Times each exercise's reference solution and its harness's `baseline` with the grader's own timing
(CUDA events, warm-up, L2 flush, median of 20) at the size of the exercise's performance check, in
one child per exercise, and reports the effective bandwidth (the bytes of every buffer once).
"""
from __future__ import annotations

import argparse
import datetime
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from grader.run.parent.device_probe import probe  # noqa: E402
from grader.exercise import load  # noqa: E402
from ladder import time_reference  # noqa: E402  (bench/ is this script's own folder on sys.path)

EXERCISES = {"reduction": "CuPy sum", "softmax": "CuPy softmax", "histogram": "cupy.bincount",
             "half_gemv": "cuBLAS half GEMV (cp.matmul)"}


def buffer_bytes(spec, sizes) -> int:
    """Bytes of every buffer of the kernel, each counted once: the traffic of an ideal kernel."""
    return sum(int(np.prod(p.shape_for(sizes))) * np.dtype(p.dtype).itemsize for p in spec.kernel.buffers)


def time_exercise(exercise_id: str, tmp: Path, arch: str) -> tuple[dict, dict[str, float]]:
    """(sizes, median ms of the reference solution and of the library baseline) in one child."""
    sizes = dict(load(Path("exercises") / exercise_id).spec.checks["performance"].size)
    return sizes, time_reference(exercise_id, sizes, tmp, arch)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    gpu = probe()
    if not gpu.available:
        print(f"no GPU: {gpu.reason}")
        return 2
    rows = []
    tmp = Path(tempfile.mkdtemp(prefix="library-ladder-"))
    try:
        for ex_id in EXERCISES:
            (tmp / ex_id).mkdir()
            sizes, ms = time_exercise(ex_id, tmp, gpu.arch)
            nbytes = buffer_bytes(load(Path("exercises") / ex_id).spec, sizes)
            rows.append((ex_id, sizes, ms["submission"], ms["baseline"], nbytes))
            print(ex_id, sizes, ms, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    lines = [
        f"# Course kernels against their libraries ({gpu.name})", "",
        f"Command: `python bench/library_ladder.py --out {args.out}` on {datetime.date.today()}.",
        "Median of 20 launches with CUDA events, after warm-up, the L2 flushed before each; the size is the",
        "exercise's performance-check size; GB/s counts every buffer once.", "",
        "| exercise | size | reference ms | GB/s | library | library ms | GB/s | reference / library speed |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for ex_id, sizes, ref, lib, nbytes in rows:
        size = ", ".join(f"{k} = {v}" for k, v in sizes.items())
        lines.append(f"| {ex_id} | {size} | {ref:.3f} | {nbytes / ref / 1e6:.0f} | {EXERCISES[ex_id]} | {lib:.3f} | "
                     f"{nbytes / lib / 1e6:.0f} | {lib / ref:.0%} |")
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
