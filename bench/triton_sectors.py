"""The Triton traffic model against Nsight Compute, per reference and wrong file (run on a GPU machine).

    PYTHONPATH=$PWD python bench/triton_sectors.py [exercise_id] [--sizes=1000,4096,4099,65536]
    PYTHONPATH=$PWD python bench/triton_sectors.py triton_softmax --sizes=32x1000,32x1024

For each reference/<id>/solution.py and wrong/*.py of a Triton exercise (the launcher's params are
the spec's; a size is one number for every size name, or AxB... for the spec's size names in order;
the defaults: 1000,4096,4099,65536 for one size name, 32x1000,32x1024,7x4099 for two), at each size: the CPU model's load and store sectors
(a child with TRITON_INTERPRET=1 and grader/triton/watch.py), ncu's (the same launcher JIT-compiled
on CUDA tensors, the kernel chosen by name: `-k regex:<the @triton.jit function>`), and
compute-sanitizer memcheck's error count on the same guarded launch. Sizes divisible and not
divisible by 16 show the vectorisation rule. Prints one row per (file, size); copy the table into
docs/emulator.md ("Triton traffic"). Needs torch (CUDA), Triton, ncu and compute-sanitizer.

`--parts=model,ncu,memcheck` (the default: all three) picks the columns to fill; the others print
"?". A machine whose Triton interpreter cannot run a kernel's loop (Triton 3.6 with NumPy 2.4, see
docs/triton-exercises.md) measures with `--parts=ncu,memcheck`, and the model's columns come from
`--parts=model` on a machine with a newer Triton; the rows join on file and size. memcheck runs with
PYTORCH_NO_CUDA_MEMORY_CACHING=1, so each tensor's storage is its own allocation and an access past
it is outside every allocation (memcheck cannot see one that lands inside PyTorch's cached blocks).
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
METRICS = ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
           "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")
GUARD = 64


def _params(exercise_id: str, sizes: dict) -> list[dict]:
    sys.path.insert(0, str(ROOT))
    from grader.exercise import load

    spec = load(ROOT / "exercises" / exercise_id).spec
    return [{"name": p.name, "role": p.role, "dtype": p.dtype, "shape": list(p.shape_for(sizes)) if p.is_tensor else [],
             "value": None if p.is_tensor else p.scalar_for(sizes)} for p in spec.params]


def _load(path: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location("submission", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["submission"] = module
    spec.loader.exec_module(module)
    return module


def _tensors(params: list[dict], device: str):
    import torch

    out, storages = [], []
    for p in params:
        if p["role"] in ("int", "float"):
            out.append(p["value"])
            continue
        n = 1
        for d in p["shape"]:
            n *= d
        storage = torch.full((n + 2 * GUARD,), float("nan"), dtype=getattr(torch, p["dtype"]), device=device)
        t = storage[GUARD:GUARD + n].view(*p["shape"])
        if p["role"] == "in":
            t.uniform_(-1, 1)
        out.append(t)
        storages.append((p["name"], storage, t, n))
    return out, storages


def model(path: str, exercise_id: str, launcher: str, sizes: dict) -> None:
    """(child, TRITON_INTERPRET=1) the model's sectors, as JSON on stdout."""
    import triton.runtime.interpreter as interpreter

    sys.path.insert(0, str(ROOT))
    from grader.triton.watch import Watch

    watch = Watch(os.path.basename(path))
    watch.install(interpreter)
    params = _params(exercise_id, sizes)
    args, storages = _tensors(params, "cpu")
    for name, storage, t, n in storages:
        watch.register(name, storage.untyped_storage().data_ptr(), storage.numel() * storage.element_size(), t.data_ptr(),
                       n, storage.element_size(), True)
    getattr(_load(path), launcher)(*args)
    rows = watch.summary()["traffic"]
    print(json.dumps({k: sum(r["sectors"] for r in rows if r["kind"] == k) for k in ("load", "store")}
                     | {"load_requests": sum(r["requests"] for r in rows if r["kind"] == "load")}))


def launch(path: str, exercise_id: str, launcher: str, sizes: dict) -> None:
    """(child, on the GPU) one launch of the launcher on guarded CUDA tensors, for ncu or memcheck."""
    import torch

    args, storages = _tensors(_params(exercise_id, sizes), "cuda")
    getattr(_load(path), launcher)(*args)
    torch.cuda.synchronize()
    for name, storage, t, n in storages:
        guard = torch.cat([storage[:GUARD], storage[GUARD + n:]])
        if not torch.isnan(guard).all():
            print(f"GUARD {name} changed")


def _kernel_names(path: Path) -> list[str]:
    return re.findall(r"@triton\.jit[^\n]*\n\s*def\s+(\w+)", path.read_text())


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    exercise_id = args[0] if args else "triton_vector_add"
    sys.path.insert(0, str(ROOT))
    from grader.exercise import load

    spec = load(ROOT / "exercises" / exercise_id).spec
    default = "1000,4096,4099,65536" if len(spec.sizes) == 1 else "32x1000,32x1024,7x4099"
    sizes_arg = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--sizes=")), default)
    files = [ROOT / "reference" / exercise_id / "solution.py", *sorted((ROOT / "reference" / exercise_id / "wrong").glob("*.py"))]
    parts = set(next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--parts=")), "model,ncu,memcheck").split(","))
    ncu = shutil.which("ncu") if "ncu" in parts else None
    sanitizer = shutil.which("compute-sanitizer") if "memcheck" in parts else None
    print("file | size | model ld / st / ld requests | ncu ld / st / ld requests | memcheck errors | guards")
    for path in files:
        names = _kernel_names(path)
        if not names:
            continue
        for size in sizes_arg.split(","):
            values = [int(v) for v in size.split("x")]
            sizes = dict(zip(spec.sizes, values if len(values) == len(spec.sizes) else values[:1] * len(spec.sizes)))
            job = [sys.executable, __file__, "--child", "X", str(path), exercise_id, spec.launcher, json.dumps(sizes)]
            # The checkout first, and whatever else the caller's path holds (the machine's own packages).
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
                       TRITON_INTERPRET="1")
            mine: dict = {}
            if "model" in parts:
                job[3] = "model"
                got = subprocess.run(job, capture_output=True, text=True, env=env, timeout=600)
                mine = json.loads(got.stdout.strip().splitlines()[-1]) if got.returncode == 0 and got.stdout.strip() else {}
                if not mine:
                    print(f"{path.name} {size}: the model's child failed: {got.stderr[-600:]}", file=sys.stderr)
            env.pop("TRITON_INTERPRET")
            job[3] = "launch"
            measured, errors, guards = {}, "?", ""
            if ncu:
                cmd = [ncu, "--csv", "--metrics", ",".join(METRICS), "-k", f"regex:^({'|'.join(names)})$", *job]
                done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
                for row in csv.DictReader(io.StringIO("\n".join(l for l in done.stdout.splitlines() if l.startswith('"')))):
                    key = row.get("Metric Name", "")
                    measured[key] = measured.get(key, 0) + float(row.get("Metric Value", "0").replace(",", "") or 0)
                guards = "; ".join(l for l in done.stdout.splitlines() if l.startswith("GUARD"))
                if not measured:  # say why: a launch that failed, or no kernel matched the names
                    print(f"{path.name} {size}: no ncu rows for {names} (exit {done.returncode}): "
                          f"{(done.stdout + done.stderr)[-800:]}", file=sys.stderr)
            if sanitizer:
                done = subprocess.run([sanitizer, "--tool", "memcheck", *job], capture_output=True, text=True,
                                      env=dict(env, PYTORCH_NO_CUDA_MEMORY_CACHING="1"), timeout=600)
                found = re.search(r"ERROR SUMMARY: (\d+)", done.stdout + done.stderr)
                errors = found.group(1) if found else "?"
            ld, st, rq = (str(int(measured[m])) if m in measured else "-" for m in METRICS)
            print(f"{path.parent.name}/{path.name} | {size} | {mine.get('load', '?')} / {mine.get('store', '?')} / "
                  f"{mine.get('load_requests', '?')} | {ld} / {st} / {rq} | {errors} | {guards or ('intact' if ncu else '-')}")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        role, path, exercise_id, launcher, sizes = sys.argv[2:7]
        (model if role == "model" else launch)(path, exercise_id, launcher, json.loads(sizes))
    else:
        main()
