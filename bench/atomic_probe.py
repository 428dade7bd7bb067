"""How Nsight Compute counts the sectors and wavefronts of atomics, measured lane by lane.

One warp per launch; each lane adds to the element its pattern names (or sits out, -1). Every
pattern runs under six kernels: global `red` (result unused) and `atom` (result kept) on u32 and
f32, and shared `atom` on u32 and f32. ncu profiles every launch; the output pairs each pattern with
the counters ncu reported for it, so a model of the emulator can be fitted and tested offline
(tests/emu/test_atomic_sector_model.py reads the file this writes).

    python bench/atomic_probe.py --out tests/data/ncu_atomic_probe.json     # on a GPU with ncu

`--ablate` instead measures, under the global `red` kernel only, variants of the random patterns
where ncu counted one sector more than the per-sector model (and of two it matched, as controls):
each with one lane taken out in turn, with its lanes reordered, and shifted by a word, a sector and a
line, so that the lanes and the addresses behind the extra sector can be found offline.

    python bench/atomic_probe.py --ablate --out tests/data/ncu_atomic_ablation.json
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SOURCE = r"""
extern "C" __global__ void red_u32(const int* idx, unsigned int* buf, unsigned int* out) {
    int i = idx[threadIdx.x]; if (i >= 0) atomicAdd(&buf[i], 1u); }
extern "C" __global__ void red_f32(const int* idx, float* buf, unsigned int* out) {
    int i = idx[threadIdx.x]; if (i >= 0) atomicAdd(&buf[i], 1.0f); }
extern "C" __global__ void atom_u32(const int* idx, unsigned int* buf, unsigned int* out) {
    int i = idx[threadIdx.x]; if (i >= 0) out[threadIdx.x] = atomicAdd(&buf[i], 1u); }
extern "C" __global__ void atom_f32(const int* idx, float* buf, unsigned int* out) {
    int i = idx[threadIdx.x]; if (i >= 0) out[threadIdx.x] = (unsigned int)atomicAdd(&buf[i], 1.0f); }
extern "C" __global__ void sh_u32(const int* idx, unsigned int* buf, unsigned int* out) {
    __shared__ unsigned int s[4096];
    for (int j = threadIdx.x; j < 4096; j += 32) s[j] = 0;
    __syncwarp();
    int i = idx[threadIdx.x]; if (i >= 0) atomicAdd(&s[i], 1u);
    __syncwarp();
    out[threadIdx.x] = s[threadIdx.x]; }
extern "C" __global__ void sh_f32(const int* idx, unsigned int* buf, unsigned int* out) {
    __shared__ float s[4096];
    for (int j = threadIdx.x; j < 4096; j += 32) s[j] = 0.0f;
    __syncwarp();
    int i = idx[threadIdx.x]; if (i >= 0) atomicAdd(&s[i], 1.0f);
    __syncwarp();
    out[threadIdx.x] = (unsigned int)s[threadIdx.x]; }
"""
KERNELS = ("red_u32", "red_f32", "atom_u32", "atom_f32", "sh_u32", "sh_f32")
METRICS = (
    "l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum",
    "smsp__inst_executed_op_shared_atom.sum",
)


def patterns(seed: int = 7) -> list[list[int]]:
    """Element index per lane (-1: the lane sits out): hand-made shapes, then random ones."""
    lanes = np.arange(32)
    out = [[0] * 32]
    for k in (1, 2, 3, 8, 17, 31):
        out.append([0 if l < k else -1 for l in lanes])
    for group in (2, 4, 8, 16):
        out.append([int(l // group) for l in lanes])            # `group` lanes per word, words adjacent
        out.append([int(l // group) * 8 for l in lanes])        # `group` lanes per word, a sector each
    out.append([int(l) for l in lanes])                           # 32 words, 4 sectors
    out.append([int(l) * 8 for l in lanes])                       # 32 sectors
    out.append([int(l) * 32 for l in lanes])                      # 32 words in one bank
    out.append([int(l % 8) for l in lanes])                       # 8 words, 4 lanes each, interleaved
    out.append([int(l % 8) * 8 for l in lanes])
    out.append([0 if l % 2 else int(l) for l in lanes])           # half on one word, half distinct
    rng = np.random.default_rng(seed)
    for span in (1, 2, 4, 8, 16, 32, 64, 256, 1024):
        for _ in range(6):
            idx = rng.integers(0, span, 32)
            active = rng.random(32) < rng.choice([1.0, 0.8, 0.5])
            out.append([int(i) if a else -1 for i, a in zip(idx, active)])
    for _ in range(12):  # skewed, as real histograms are: a few hot bins
        hot = rng.integers(0, 256, 3)
        idx = np.where(rng.random(32) < 0.5, rng.choice(hot, 32), rng.integers(0, 256, 32))
        out.append([int(i) for i in idx])
    return out


# Probe patterns (indices into patterns()) where ncu counted a sector more than the model, and two
# of the same kind it matched.
ABLATE_MISSES = (68, 71, 78)
ABLATE_CONTROLS = (65, 67)


def ablation_patterns(seed: int = 11) -> tuple[list[list[int]], list[dict]]:
    """Variants of the patterns named above, and for each what it is (base pattern, change)."""
    base = patterns()
    rng = np.random.default_rng(seed)
    out: list[list[int]] = []
    about: list[dict] = []

    def add(p: list[int], base_index: int, change: str) -> None:
        out.append([int(x) for x in p])
        about.append({"base": base_index, "change": change})

    for b in ABLATE_MISSES + ABLATE_CONTROLS:
        p = base[b]
        add(p, b, "original")
        for lane in range(32):
            add([-1 if l == lane else x for l, x in enumerate(p)], b, f"drop lane {lane}")
        add(sorted(p), b, "lanes sorted by address")
        add(p[::-1], b, "lanes reversed")
        for k in range(3):
            add([p[i] for i in rng.permutation(32)], b, f"lanes shuffled {k}")
        for shift, what in ((1, "a word"), (8, "a sector"), (32, "a line"), (1024, "8 lines")):
            add([x + shift if x >= 0 else -1 for x in p], b, f"shifted by {what}")
    return out, about


def launch_all(path: Path) -> None:
    """The child: every kernel over every pattern, one warp per launch, in a fixed order."""
    import cupy as cp

    given = json.loads(path.read_text())
    pats, kernels = (given["patterns"], given["kernels"]) if isinstance(given, dict) else (given, list(KERNELS))
    mod = cp.RawModule(code=SOURCE)
    buf = cp.zeros(4096 * 32, dtype=cp.uint32)
    out = cp.zeros(32, dtype=cp.uint32)
    for name in kernels:
        fn = mod.get_function(name)
        for p in pats:
            idx = cp.asarray(np.array(p, dtype=np.int32))
            fn((1,), (32,), (idx, buf, out))
    cp.cuda.Device().synchronize()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, help="JSON to write (patterns and ncu's counts)")
    ap.add_argument("--ablate", action="store_true", help="measure the variants of ablation_patterns() under red_u32")
    ap.add_argument("--launch", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.launch:
        launch_all(args.launch)
        return 0
    from grader.tools import find_tools, parse_ncu_csv

    ncu = find_tools().ncu
    if not ncu:
        print("ncu not found", file=sys.stderr)
        return 2
    about: list[dict] = []
    kernels = list(KERNELS)
    if args.ablate:
        pats, about = ablation_patterns()
        kernels = ["red_u32"]
    else:
        pats = patterns()
    with tempfile.TemporaryDirectory() as tmp:
        pfile = Path(tmp) / "patterns.json"
        pfile.write_text(json.dumps({"patterns": pats, "kernels": kernels}))
        log = Path(tmp) / "ncu.csv"
        argv = [ncu, "--clock-control", "none", "--csv", "--page", "raw", "--disable-extra-suffixes",
                "--metrics", ",".join(METRICS), "--log-file", str(log),
                sys.executable, str(Path(__file__).resolve()), "--launch", str(pfile)]
        run = subprocess.run(argv, capture_output=True, text=True, env=dict(os.environ))
        if run.returncode:
            print(run.stdout[-3000:], run.stderr[-3000:], file=sys.stderr)
            return run.returncode
        text = log.read_text()
    parsed = parse_ncu_csv(text, METRICS)
    rows = list(parsed.rows)
    expected = len(kernels) * len(pats)
    if len(rows) != expected:
        print(f"ncu reported {len(rows)} launches, expected {expected}; missing metrics {parsed.missing}", file=sys.stderr)
        return 1
    result = {"tool": "ncu --clock-control none --csv --page raw", "missing": list(parsed.missing),
              "patterns": pats, "counts": {}}
    if about:
        result["about"] = about
    for k, name in enumerate(kernels):
        result["counts"][name] = [{m: v for m, v in rows[k * len(pats) + i].items()} for i in range(len(pats))]
    text = json.dumps(result, indent=1)
    if args.out:
        args.out.write_text(text)
    print(f"{len(pats)} patterns x {len(kernels)} kernels measured; missing metrics: {list(parsed.missing)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
