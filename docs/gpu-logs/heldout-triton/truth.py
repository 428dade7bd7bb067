"""Ground truth for the held-out Triton corpus, independent of the grader (issue 34).

    python docs/gpu-logs/heldout-triton/truth.py .heldout/triton --out DIR          # on a CUDA GPU
    python docs/gpu-logs/heldout-triton/truth.py .heldout/triton --out DIR --cpu    # Triton's interpreter

ROOT holds <exercise>/<name>.py files (triton_vector_add, triton_softmax, triton_rmsnorm,
triton_matmul); each defines the exercise's launcher. For every file and every case (the spec's
public and hidden sizes, read from exercises/<id>/spec.toml, plus awkward sizes of this script's
own; matmul has its own list and tolerance until its exercise exists) a child process:

- makes seeded inputs with its own generator (softmax rows shifted to +90 and to -90; RMSNorm rows
  whose mean square is below eps; vector add and matmul plain normals),
- carves every tensor out of a storage 64 elements longer at each end (4096 on the CPU), filled with a NaN of a
  private bit pattern (outputs start as that NaN too), launches the launcher 3 times,
- compares each output with a float64 NumPy reference at the spec's rtol/atol, checks the guards
  bit for bit (a changed guard is an out-of-bounds write) and that the inputs are unchanged,
- launches once more with the guards holding 0.0 instead of NaN: an output that changes read a guard.

On a GPU, a second pass runs each file under `compute-sanitizer --tool memcheck --error-exitcode 99`
with PYTORCH_NO_CUDA_MEMORY_CACHING=1 and exact allocations (no guards), one launch per case.
One JSON per file lands in DIR/<exercise>/<name>.json, and DIR/summary.json lists them all.

Nothing here imports the grader: the point is a second opinion that shares no code with it.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
import traceback
import zlib
from pathlib import Path
from typing import Any

GUARD = 64
# On the CPU the interpreter writes host memory: an overrun past 64 elements lands in the heap and
# kills the child (free(): invalid pointer). The CPU run guards with more, so it can still judge.
CPU_GUARD = 4096
# Quiet NaNs with payloads no arithmetic produces (they fit an int32, so torch can fill with them):
# a guard still holding its pattern was never written. Each tensor gets its own payload, because
# NaN arithmetic carries an operand's payload along: an unmasked `x + y` past the end reads x's
# guard and would write x's very pattern into out's guard, unseen if the patterns were equal.
POISON_BASE = 0x7FC0DE00


def poison_bits(index: int) -> int:
    """The NaN bit pattern of the index-th parameter's guards (and of an output's unwritten elements)."""
    return POISON_BASE + 0x11 * (index + 1)
REPO = Path(__file__).resolve().parents[3]
EXERCISES = ("triton_vector_add", "triton_softmax", "triton_rmsnorm", "triton_matmul")

# Sizes of this script's own, chosen to hit block edges the spec's sizes may miss.
EXTRA_CASES: dict[str, list[dict[str, int]]] = {
    "triton_vector_add": [{"n": 17}, {"n": 1023}, {"n": 1024}, {"n": 1025}, {"n": 4095}, {"n": 4097}, {"n": 65537}],
    "triton_softmax": [{"rows": 1, "cols": 2}, {"rows": 5, "cols": 1}, {"rows": 3, "cols": 17},
                       {"rows": 2, "cols": 1025}, {"rows": 2, "cols": 4097}],
    "triton_rmsnorm": [{"rows": 1, "cols": 2}, {"rows": 5, "cols": 1}, {"rows": 3, "cols": 17},
                       {"rows": 2, "cols": 1025}, {"rows": 2, "cols": 4097}],
}
# triton_matmul has no spec yet: its cases and a TF32-sized tolerance are this script's.
MATMUL_CASES = [{"M": 1, "N": 1, "K": 1}, {"M": 16, "N": 16, "K": 16}, {"M": 33, "N": 17, "K": 45},
                {"M": 64, "N": 64, "K": 64}, {"M": 100, "N": 70, "K": 50}, {"M": 128, "N": 128, "K": 128},
                {"M": 130, "N": 257, "K": 96}]
# |c - ref| <= MATMUL_REL * (|A| @ |B|) + MATMUL_ABS: TF32 rounds each input to 10 mantissa bits
# (2^-11 relative), a product carries about 2^-10; 3 * 2^-10 leaves room for an fp16-rounded store.
MATMUL_REL = 3 * 2.0 ** -10
MATMUL_ABS = 1e-6


def load_spec(exercise: str) -> dict[str, Any]:
    """The exercise's launcher, params, cases and tolerance (spec.toml, or this script's for matmul)."""
    if exercise == "triton_matmul" and not (REPO / "exercises" / exercise / "spec.toml").exists():
        return {"launcher": "matmul", "cases": MATMUL_CASES, "rtol": None, "atol": None, "eps": None,
                "params": ["a", "b", "c", "M", "N", "K"]}
    spec = tomllib.loads((REPO / "exercises" / exercise / "spec.toml").read_text())
    cases: list[dict[str, int]] = []
    for case in spec["public_cases"] + spec["hidden_cases"] + EXTRA_CASES.get(exercise, []):
        if case not in cases:
            cases.append(case)
    eps = next((p["value"] for p in spec["params"] if p["role"] == "float"), None)
    return {"launcher": spec["launcher"], "cases": cases, "rtol": spec["tolerance"]["rtol"],
            "atol": spec["tolerance"]["atol"], "eps": eps, "params": [p["name"] for p in spec["params"]]}


def make_inputs(exercise: str, sizes: dict[str, int], eps: float | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Seeded float32 inputs and the float64 reference outputs, by NumPy alone."""
    import numpy as np

    seed = zlib.crc32(json.dumps([exercise, sizes], sort_keys=True).encode())
    rng = np.random.default_rng(seed)
    if exercise == "triton_vector_add":
        n = sizes["n"]
        x = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(np.float32)
        y = rng.standard_normal(n).astype(np.float32)
        return {"x": x, "y": y}, {"out": x.astype(np.float64) + y.astype(np.float64)}
    if exercise == "triton_softmax":
        rows, cols = sizes["rows"], sizes["cols"]
        # Row r % 3 == 0 sits near +90 (exp overflows fp32 without the max), == 1 near -90 (every
        # value negative: padding with 0 instead of -inf wins the max), == 2 plain.
        shift = np.array([90.0, -90.0, 0.0])[np.arange(rows) % 3][:, None]
        x = (rng.standard_normal((rows, cols)) * 3.0 + shift).astype(np.float32)
        x64 = x.astype(np.float64)
        e = np.exp(x64 - x64.max(axis=1, keepdims=True))
        return {"x": x}, {"out": e / e.sum(axis=1, keepdims=True)}
    if exercise == "triton_rmsnorm":
        rows, cols = sizes["rows"], sizes["cols"]
        # Rows r % 3 == 2 are scaled by 5e-4: their mean square (~2.5e-7) is far below eps, so eps
        # placed or counted wrongly shows.
        scale = np.where(np.arange(rows) % 3 == 2, 5e-4, 1.0)[:, None]
        x = (rng.standard_normal((rows, cols)) * scale).astype(np.float32)
        w = rng.uniform(0.5, 1.5, cols).astype(np.float32)
        x64, w64 = x.astype(np.float64), w.astype(np.float64)
        ref = x64 / np.sqrt((x64 * x64).mean(axis=1, keepdims=True) + eps) * w64[None, :]
        return {"x": x, "w": w}, {"out": ref}
    if exercise == "triton_matmul":
        m, n, k = sizes["M"], sizes["N"], sizes["K"]
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        return {"a": a, "b": b}, {"c": a64 @ b64, "_scale": np.abs(a64) @ np.abs(b64)}
    raise ValueError(f"unknown exercise {exercise}")


def output_shape(exercise: str, name: str, sizes: dict[str, int]) -> tuple[int, ...]:
    """The shape of an output parameter."""
    if exercise == "triton_vector_add":
        return (sizes["n"],)
    if exercise == "triton_matmul":
        return (sizes["M"], sizes["N"])
    return (sizes["rows"], sizes["cols"])


def _bench_by_running_once() -> None:
    """Let `@triton.autotune` choose under the interpreter, which has no driver to time with.

    Each config still runs once on the launch's own tensors (as the GPU's benchmark runs each on
    them), all report the same time, so the first config is kept; Triton's own checks (a tuned
    symbol passed again by the launcher) still run."""
    from triton.runtime import autotuner

    def run_once(kernel_call: Any, quantiles: Any = None) -> list[float]:
        kernel_call()
        return [1.0, 1.0, 1.0]

    autotuner.Autotuner.do_bench = property(lambda self: self._do_bench or run_once)


def run_child(path: Path, exercise: str, device: str, exact: bool) -> None:
    """Run every case of one file in this process, printing each case's result as it ends.

    One line per case (so a case that kills the process leaves the earlier ones); never raises."""
    import numpy as np
    import torch

    guard = CPU_GUARD if device == "cpu" else GUARD
    spec = load_spec(exercise)

    def emit(kind: str, payload: dict[str, Any]) -> None:
        sys.stdout.write(f"\n@@{kind}@@" + json.dumps(payload) + "\n")
        sys.stdout.flush()

    if device == "cpu" or exact:
        # Under memcheck too: the autotuner's timing loop would run each config hundreds of times
        # under the sanitizer; once each shows every config's accesses all the same.
        _bench_by_running_once()
    try:
        module_spec = importlib.util.spec_from_file_location(f"heldout_{path.stem}", path)
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
        launcher = getattr(module, spec["launcher"])
    except BaseException as exc:  # the file's own failure, reported as a value
        emit("ERROR", {"error": f"import: {type(exc).__name__}: {str(exc)[:400]}"})
        return

    def carve(values: np.ndarray | None, shape: tuple[int, ...], fill: float | None, bits: int) -> tuple[Any, Any]:
        """A tensor of `shape` inside a guarded storage (or exact, for memcheck), and its storage."""
        numel = int(np.prod(shape))
        if exact:
            t = torch.empty(shape, dtype=torch.float32, device=device)
            if values is not None:
                t.copy_(torch.from_numpy(values))
            return t, None
        store = torch.empty(numel + 2 * guard, dtype=torch.float32, device=device)
        if fill is None:
            store.view(torch.int32).fill_(bits)
        else:
            store.fill_(fill)
        t = store[guard:guard + numel].view(shape)
        if values is None:
            t.view(torch.int32).fill_(bits)
        else:
            t.copy_(torch.from_numpy(values))
        return t, store

    bits_of = {name: poison_bits(index) for index, name in enumerate(spec["params"])}
    for sizes in spec["cases"]:
        case: dict[str, Any] = {"sizes": sizes}
        sys.stdout.write(f"\n@@START@@{json.dumps(sizes)}\n")
        sys.stdout.flush()
        try:
            inputs, refs = make_inputs(exercise, sizes, spec["eps"])
            scale = refs.pop("_scale", None)
            outputs_by_fill: list[dict[str, np.ndarray]] = []
            for fill in ([None] if exact else [None, 0.0]):
                tensors: dict[str, Any] = {}
                stores: dict[str, Any] = {}
                for index, name in enumerate(spec["params"]):
                    if name in inputs:
                        tensors[name], stores[name] = carve(inputs[name], inputs[name].shape, fill, poison_bits(index))
                    elif name in refs:
                        tensors[name], stores[name] = carve(
                            None, output_shape(exercise, name, sizes), fill, poison_bits(index))
                args = []
                for name in spec["params"]:
                    if name in tensors:
                        args.append(tensors[name])
                    elif name == "eps":
                        args.append(spec["eps"])
                    else:
                        args.append(sizes[name])
                for _ in range(1 if exact or fill is not None else 3):
                    launcher(*args)
                if device == "cuda":
                    torch.cuda.synchronize()
                if exact:
                    continue
                got = {name: tensors[name].cpu().numpy().copy() for name in refs}
                outputs_by_fill.append(got)
                if fill is None:
                    case["guards_changed"] = sorted(
                        name for name, store in stores.items()
                        if not bool((store[:guard].view(torch.int32) == bits_of[name]).all())
                        or not bool((store[-guard:].view(torch.int32) == bits_of[name]).all()))
                    case["inputs_changed"] = sorted(
                        name for name in inputs if not np.array_equal(
                            tensors[name].cpu().numpy().view(np.uint32), inputs[name].view(np.uint32)))
            if exact:
                case["ok"] = None
                emit("CASE", case)
                continue
            first = outputs_by_fill[0]
            bad_total = 0
            for name, ref in refs.items():
                out = first[name].astype(np.float64)
                if scale is not None:
                    allowed = MATMUL_REL * scale + MATMUL_ABS
                else:
                    allowed = spec["atol"] + spec["rtol"] * np.abs(ref)
                err = np.abs(out - ref)
                bad = ~(err <= allowed)  # NaN counts as bad
                never = first[name].view(np.uint32) == bits_of[name]
                bad_total += int(bad.sum())
                case.setdefault("outputs", {})[name] = {
                    "bad": int(bad.sum()), "never_written": int(never.sum()),
                    "max_abs_err": float(np.nanmax(err)) if np.isfinite(err).any() else None,
                    "first_bad_index": [int(i) for i in np.argwhere(bad)[0]] if bad.any() else None}
            # The same launch with guards of 0.0: an output that moves read outside its tensor.
            case["reads_guard"] = any(
                not np.array_equal(np.nan_to_num(first[name], nan=1.5e38), np.nan_to_num(outputs_by_fill[1][name], nan=1.5e38))
                for name in refs)
            case["ok"] = bad_total == 0 and not case["inputs_changed"]
        except BaseException as exc:  # the kernel's or launcher's failure, reported as a value
            case["ok"] = False
            case["error"] = f"{type(exc).__name__}: {str(exc)[:400]}"
            case["traceback_tail"] = traceback.format_exc()[-600:]
        emit("CASE", case)


def verdict(child: dict[str, Any], crashed: str | None) -> dict[str, Any]:
    """Fold the per-case results into the file's verdict."""
    cases = child.get("cases", [])
    out = {
        "correct": bool(cases) and not child.get("error") and crashed is None and all(c.get("ok") for c in cases),
        "writes_out_of_bounds": any(c.get("guards_changed") for c in cases),
        "reads_out_of_bounds": any(c.get("reads_guard") for c in cases),
        "inputs_changed": any(c.get("inputs_changed") for c in cases),
        "crashed": crashed,
        "error": child.get("error"),
        "stderr_tail": child.get("stderr_tail"),
        "cases": cases,
    }
    return out


def run_file(path: Path, exercise: str, args: argparse.Namespace) -> dict[str, Any]:
    """The file's verdict: a guarded child, then (GPU) a memcheck child."""
    env = dict(os.environ)
    device = "cpu" if args.cpu else "cuda"
    if args.cpu:
        env["TRITON_INTERPRET"] = "1"
    cmd = [sys.executable, __file__, "--child", str(path), "--exercise", exercise, "--device", device]
    t0 = time.time()
    child, crashed = _spawn(cmd, env, args.timeout)
    result = {"file": str(path), "exercise": exercise, "device": device,
              "guard_elements": CPU_GUARD if args.cpu else GUARD, **verdict(child, crashed)}
    result["seconds"] = round(time.time() - t0, 1)
    result["memcheck_errors"] = None
    if args.cpu:
        result["memcheck"] = "skipped: CPU run (the interpreter touches host memory; no sanitizer)"
    elif args.no_memcheck:
        result["memcheck"] = "skipped: --no-memcheck"
    elif not shutil.which("compute-sanitizer"):
        result["memcheck"] = "skipped: compute-sanitizer not on PATH"
    else:
        env_mc = dict(env, PYTORCH_NO_CUDA_MEMORY_CACHING="1")
        mc_cmd = ["compute-sanitizer", "--tool", "memcheck", "--error-exitcode", "99",
                  "--print-limit", "20"] + cmd + ["--exact"]
        try:
            proc = subprocess.run(mc_cmd, env=env_mc, capture_output=True, text=True, timeout=args.timeout)
            text = proc.stdout + proc.stderr
            summary = re.search(r"ERROR SUMMARY: (\d+) error", text)
            result["memcheck_errors"] = int(summary.group(1)) if summary else None
            result["memcheck_exit"] = proc.returncode
            result["memcheck"] = [line for line in text.splitlines() if line.startswith("=========")][:24]
        except subprocess.TimeoutExpired:
            result["memcheck"] = f"timed out after {args.timeout} s"
    return result


def _spawn(cmd: list[str], env: dict[str, str], timeout: int) -> tuple[dict[str, Any], str | None]:
    """Run a child; the cases it finished, and what killed it (None when it ended normally)."""
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        stdout, crashed = proc.stdout, (None if proc.returncode == 0 else f"exit status {proc.returncode}")
        stderr = proc.stderr
    except subprocess.TimeoutExpired as exc:
        stdout = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        stderr, crashed = "", f"timed out after {timeout} s"
    child: dict[str, Any] = {"cases": []}
    started = None
    for line in stdout.splitlines():
        if line.startswith("@@START@@"):
            started = json.loads(line[len("@@START@@"):])
        elif line.startswith("@@CASE@@"):
            child["cases"].append(json.loads(line[len("@@CASE@@"):]))
            started = None
        elif line.startswith("@@ERROR@@"):
            child["error"] = json.loads(line[len("@@ERROR@@"):])["error"]
    if crashed:
        if started is not None:
            child["cases"].append({"sizes": started, "ok": False, "error": f"the process died: {crashed}"})
        child["stderr_tail"] = stderr[-600:]
    return child, crashed


def main() -> int:
    """Parse the command line; run the children or the whole corpus."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", nargs="?", type=Path, help="folder of <exercise>/<name>.py")
    parser.add_argument("--out", type=Path, help="where the JSON verdicts go")
    parser.add_argument("--cpu", action="store_true", help="TRITON_INTERPRET=1 and CPU tensors; no memcheck")
    parser.add_argument("--no-memcheck", action="store_true", help="skip the compute-sanitizer pass")
    parser.add_argument("--only", default="", help="only files whose exercise/name contains this")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per child (the guarded one, the memcheck one)")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--exercise", help=argparse.SUPPRESS)
    parser.add_argument("--device", default="cuda", help=argparse.SUPPRESS)
    parser.add_argument("--exact", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run_child(args.child, args.exercise, args.device, args.exact)
        return 0
    if not args.root or not args.out:
        parser.error("ROOT and --out are required")
    summary = []
    for exercise in EXERCISES:
        for path in sorted((args.root / exercise).glob("*.py")):
            label = f"{exercise}/{path.stem}"
            if args.only not in label:
                continue
            result = run_file(path.resolve(), exercise, args)
            dest = args.out / exercise / f"{path.stem}.json"
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(json.dumps(result, indent=1))
            row = {k: result[k] for k in ("exercise", "correct", "writes_out_of_bounds", "reads_out_of_bounds",
                                          "inputs_changed", "crashed", "memcheck_errors", "seconds")}
            row["name"] = path.stem
            summary.append(row)
            print(f"{label:60s} correct={result['correct']!s:5} oob_write={result['writes_out_of_bounds']!s:5} "
                  f"oob_read={result['reads_out_of_bounds']!s:5} memcheck={result['memcheck_errors']} "
                  f"{result['seconds']} s", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
