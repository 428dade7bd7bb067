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

`--fresh SEED` measures NEW patterns, to test a sector rule fitted to the two files above out of
sample: random patterns over 8 to 32 lines, designed collisions (two lanes on one bank in lines whose
line numbers XOR to a chosen value, with a third lane in the later lane's sector) in all six lane
orders, and warps of the histogram exercise's `global_atomics_per_element.cu` (n = 4099, seed 1) at
three offsets, under `red_u32` (all patterns) and `atom_u32` (every fourth). The output records the
probe buffer's device address (`buffer_ptr`), since the rule depends on absolute address bits 7..11.

    python bench/atomic_probe.py --fresh 2024 --out /tmp/ncu_atomic_fresh.json
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


# Histogram warps (indices into histogram_warps()) whose count differs between candidate rules when the
# bins start at the given byte offset from a 4 KiB boundary; and a few where no candidate differs.
FRESH_HIST = {0: (2, 5, 8, 29, 49, 50, 63, 69, 70, 72, 80, 82, 99, 104, 110, 119, 120, 125),
              512: (13, 40, 41, 57, 62, 63, 69, 80, 85, 92, 95, 102, 114, 118, 124, 0, 1, 3, 4, 6),
              768: (5, 16, 17, 24, 27, 29, 31, 38, 48, 49, 62, 72, 79, 82, 86, 89, 92, 99, 101, 104, 109, 110,
                    111, 117, 119)}
# Line-number XORs of the designed pairs: in both candidate set hashes' kernels; only in the 2-bit one's;
# in neither; and with line bit 5 or 6 set (in a kernel only if line bits >= 5 take no part).
FRESH_XORS = {"both": (5, 19, 22), "2bit only": (10, 15, 25, 28), "neither": (1, 3, 4, 8, 12, 16),
              "high bits": (32, 37, 42, 51, 54)}


def histogram_warps(n: int = 4099, seed: int = 1) -> list[list[int]]:
    """The bins each warp of the histogram exercise's per-element global atomics touches (-1: past n),
    with the exercise's inputs (harness.make_inputs, seed 1 as `grade profile` uses), in the order
    grid-stride step, block, warp."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("histogram_harness", ROOT / "exercises" / "histogram" / "harness.py")
    harness = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(harness)
    data = harness.make_inputs({"n": n}, np.random.default_rng(seed))["data"]
    threads = max(min(-(-n // 1024), 120), 1) * 256  # the spec's grid times its block
    out = []
    for start in range(0, n, threads):
        for w in range(threads // 32):
            i = start + w * 32 + np.arange(32)
            if i[0] < n:
                out.append([int(data[j]) if j < n else -1 for j in i])
    return out


def fresh_patterns(seed: int) -> tuple[list[list[int]], list[dict]]:
    """New patterns (element indices into the u32 probe buffer) and what each is. Element 1024 * k is
    4 KiB * k from the buffer's start."""
    rng = np.random.default_rng(seed)
    out: list[list[int]] = []
    about: list[dict] = []

    def add(p, **what) -> None:
        out.append([int(x) for x in p])
        about.append(what)

    # Designed collisions: P and C in one sector of line X (C on bank k), B on bank k of line X ^ d.
    from itertools import permutations

    for group, xors in FRESH_XORS.items():
        for d in xors:
            x = int(rng.integers(0, 128))
            k = int(rng.integers(0, 32))
            y = x ^ d
            role = {"P": x * 32 + (k ^ 1), "C": x * 32 + k, "B": y * 32 + k}
            for order in permutations("PBC"):
                lanes = sorted(rng.choice(32, 3, replace=False).tolist()) if order == ("P", "B", "C") else [0, 1, 2]
                p = [-1] * 32
                for lane, r in zip(lanes, order):
                    p[lane] = role[r]
                add(p, kind="pair", group=group, xor=d, line_x=x, bank=k, order="".join(order), lanes=lanes)
    # Random lanes over 8 to 32 lines, starting at a random line; half with a hot word.
    for span in (8, 12, 16, 24, 32):
        for j in range(10):
            first = int(rng.integers(0, 128))
            idx = first * 32 + rng.integers(0, span * 32, 32)
            if j % 2:
                idx = np.where(rng.random(32) < 0.33, idx[0], idx)
            active = rng.random(32) < rng.choice([1.0, 1.0, 0.8, 0.5])
            add([int(i) if a else -1 for i, a in zip(idx, active)], kind="random", span_lines=span,
                first_line=first, hot=bool(j % 2))
    # The histogram exercise's warps, the bins at a byte offset from a 4 KiB boundary (a page each).
    warps = histogram_warps()
    for page, (offset, chosen) in enumerate(sorted(FRESH_HIST.items()), start=4):
        for w in chosen:
            base = page * 1024 + offset // 4
            add([base + b if b >= 0 else -1 for b in warps[w]], kind="histogram", warp=w, offset=offset)
    return out, about


def launch_all(path: Path) -> None:
    """The child: every kernel over every pattern, one warp per launch, in a fixed order."""
    import cupy as cp

    given = json.loads(path.read_text())
    pats, kernels = (given["patterns"], given["kernels"]) if isinstance(given, dict) else (given, list(KERNELS))
    # (kernel, pattern index) in launch order: every kernel over every pattern unless "runs" says otherwise
    runs = given.get("runs") if isinstance(given, dict) else None
    runs = runs or [(name, i) for name in kernels for i in range(len(pats))]
    mod = cp.RawModule(code=SOURCE)
    buf = cp.zeros(4096 * 32, dtype=cp.uint32)
    out = cp.zeros(32, dtype=cp.uint32)
    if isinstance(given, dict) and given.get("addresses"):  # where the buffers are: the sector rule needs it
        Path(given["addresses"]).write_text(json.dumps({"buf": int(buf.data.ptr), "out": int(out.data.ptr)}))
    fns = {}
    for name, i in runs:
        fn = fns.get(name) or fns.setdefault(name, mod.get_function(name))
        idx = cp.asarray(np.array(pats[i], dtype=np.int32))
        fn((1,), (32,), (idx, buf, out))
    cp.cuda.Device().synchronize()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, help="JSON to write (patterns and ncu's counts)")
    ap.add_argument("--ablate", action="store_true", help="measure the variants of ablation_patterns() under red_u32")
    ap.add_argument("--fresh", type=int, metavar="SEED",
                    help="measure fresh_patterns(SEED) under red_u32 (all) and atom_u32 (every fourth); records the buffer's address")
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
    runs: list[tuple[str, int]] = []
    if args.ablate and args.fresh is not None:
        print("--ablate and --fresh are separate probes: give one", file=sys.stderr)
        return 2
    if args.ablate:
        pats, about = ablation_patterns()
        kernels = ["red_u32"]
    elif args.fresh is not None:
        pats, about = fresh_patterns(args.fresh)
        kernels = ["red_u32", "atom_u32"]
        runs = [("red_u32", i) for i in range(len(pats))] + [("atom_u32", i) for i in range(0, len(pats), 4)]
    else:
        pats = patterns()
    runs = runs or [(name, i) for name in kernels for i in range(len(pats))]
    with tempfile.TemporaryDirectory() as tmp:
        pfile = Path(tmp) / "patterns.json"
        afile = Path(tmp) / "addresses.json"
        pfile.write_text(json.dumps({"patterns": pats, "kernels": kernels, "runs": runs, "addresses": str(afile)}))
        log = Path(tmp) / "ncu.csv"
        argv = [ncu, "--clock-control", "none", "--csv", "--page", "raw", "--disable-extra-suffixes",
                "--metrics", ",".join(METRICS), "--log-file", str(log),
                sys.executable, str(Path(__file__).resolve()), "--launch", str(pfile)]
        run = subprocess.run(argv, capture_output=True, text=True, env=dict(os.environ))
        if run.returncode:
            print(run.stdout[-3000:], run.stderr[-3000:], file=sys.stderr)
            return run.returncode
        text = log.read_text()
        addresses = json.loads(afile.read_text()) if afile.exists() else {}
    parsed = parse_ncu_csv(text, METRICS)
    rows = list(parsed.rows)
    expected = len(runs)
    if len(rows) != expected:
        print(f"ncu reported {len(rows)} launches, expected {expected}; missing metrics {parsed.missing}", file=sys.stderr)
        return 1
    result = {"tool": "ncu --clock-control none --csv --page raw", "missing": list(parsed.missing),
              "patterns": pats, "counts": {}}
    if about:
        result["about"] = about
    if args.fresh is not None:
        # counts[kernel][i] is None for a pattern that kernel did not run; the rule needs buffer_ptr
        result.update({"fresh_seed": args.fresh, "buffer_ptr": addresses.get("buf"), "out_ptr": addresses.get("out"),
                       "element_bytes": 4, "runs": [list(r) for r in runs]})
        for name in kernels:
            result["counts"][name] = [None] * len(pats)
        for (name, i), row in zip(runs, rows):
            result["counts"][name][i] = {m: v for m, v in row.items()}
    else:
        for k, name in enumerate(kernels):
            result["counts"][name] = [{m: v for m, v in rows[k * len(pats) + i].items()} for i in range(len(pats))]
    text = json.dumps(result, indent=1)
    if args.out:
        args.out.write_text(text)
    if args.fresh is not None:
        print(f"{len(pats)} fresh patterns, {len(runs)} launches measured; buffer at {result['buffer_ptr']:#x}; "
              f"missing metrics: {list(parsed.missing)}")
    else:
        print(f"{len(pats)} patterns x {len(kernels)} kernels measured; missing metrics: {list(parsed.missing)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
