"""Which CUDA operations many processes can do at once, on one GPU and on two.

A batch's gradings slow each other down on a GPU host even where each has a GPU of its own. This
probe finds out which operations share a queue across the whole machine: K worker processes (each
with its CUDA context made beforehand) repeat one operation for a few seconds, all starting at the
same instant, and the probe reports how many the K did per second in all. An operation whose total
rate stays flat as K grows, also when the K are spread over two GPUs, waits in a queue that is not
a GPU's; one whose total rate doubles from one GPU to two waits for its GPU.

    python bench/gpu_primitives.py --procs 1,4,8,16 --seconds 1.5          # every GPU visible
    python bench/gpu_primitives.py --ops malloc_4m,module --procs 1,16     # some of the operations
    python bench/gpu_primitives.py --ops launch_sync --sync blocking       # contexts that sleep in a wait

With two or more GPUs visible, each K runs twice: all K on the first GPU, then spread over all GPUs.
The CPU-only operations (numpy_*) are the control: they show what the machine's cores give.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

MIB = 1 << 20
_KERNEL = r"""
extern "C" __global__ void touch(float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}
"""


def _operations(cubin: str) -> dict[str, Callable[[], None]]:
    """One unit of each operation, with whatever it needs made once beforehand (in a worker)."""
    import cupy as cp
    import numpy as np

    rt, drv = cp.cuda.runtime, cp.cuda.driver
    dev = cp.cuda.Device()
    pinned = rt.hostAlloc(4 * MIB, 0)
    host = np.ones(MIB, dtype=np.float32)
    back = np.empty_like(host)
    dptr = rt.malloc(4 * MIB)
    small = cp.zeros(1, dtype=cp.float32)
    a = np.random.default_rng(0).random(MIB, dtype=np.float32)
    b = a + np.float32(1e-3)
    m = np.random.default_rng(1).random((256, 256))

    def malloc(size: int) -> Callable[[], None]:
        def op() -> None:
            rt.free(rt.malloc(size))
        return op

    def pool_job() -> None:  # a warm worker's job: three guarded 4 MiB buffers, then the pool given back
        bufs = [cp.empty(MIB + 2048, dtype=cp.float32) for _ in range(3)]
        for x in bufs:
            x.fill(0)
        del bufs
        cp.get_default_memory_pool().free_all_blocks()

    def pool_reuse() -> None:  # the same with the pool kept
        bufs = [cp.empty(MIB + 2048, dtype=cp.float32) for _ in range(3)]
        for x in bufs:
            x.fill(0)
        del bufs

    def module() -> None:
        handle = drv.moduleLoad(cubin)
        drv.moduleGetFunction(handle, "touch")
        drv.moduleUnload(handle)

    def launch_sync() -> None:
        cp.add(small, 1, out=small)
        dev.synchronize()

    def h2d_pageable() -> None:
        rt.memcpy(dptr, host.ctypes.data, 4 * MIB, rt.memcpyHostToDevice)

    def d2h_pageable() -> None:
        rt.memcpy(back.ctypes.data, dptr, 4 * MIB, rt.memcpyDeviceToHost)

    def h2d_pinned() -> None:
        rt.memcpy(dptr, pinned, 4 * MIB, rt.memcpyHostToDevice)

    def host_alloc() -> None:
        rt.freeHost(rt.hostAlloc(4 * MIB, 0))

    def cupy_roundtrip() -> None:  # what a launch's upload and read-back do through CuPy
        cp.asarray(host).get()

    def numpy_fresh_pages() -> None:  # 32 MiB of new pages, written once: page faults, kernel time
        np.ones(8 * MIB, dtype=np.float32)

    def numpy_compare() -> None:  # user-space work on warm memory
        float(np.max(np.abs(a - b)))

    def numpy_blas() -> None:
        m @ m

    ops = {"malloc_4m": malloc(4 * MIB), "malloc_64m": malloc(64 * MIB), "pool_job": pool_job,
           "pool_reuse": pool_reuse, "module": module, "launch_sync": launch_sync,
           "h2d_pageable_4m": h2d_pageable, "d2h_pageable_4m": d2h_pageable, "h2d_pinned_4m": h2d_pinned,
           "host_alloc_4m": host_alloc, "cupy_roundtrip_4m": cupy_roundtrip,
           "numpy_fresh_pages": numpy_fresh_pages, "numpy_compare": numpy_compare, "numpy_blas": numpy_blas}
    for op in ops.values():  # each once, so the first use's costs are not in the timing
        op()
    dev.synchronize()
    return ops


def worker(cubin: str) -> int:
    """A worker: answers each line `OP SECONDS GO_AT` with a JSON line of what it did."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from grader.run.child.cuda_context import set_schedule

    set_schedule(0)  # $KERNEL_GRADER_CUDA_SYNC, as the grader's children do (--sync)
    ops = _operations(cubin)
    print("ready", flush=True)
    for line in sys.stdin:
        name, seconds, go_at = line.split()
        op = ops[name]
        while time.time() < float(go_at):
            time.sleep(0.0005)
        r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        end, count = t0 + float(seconds), 0
        while time.perf_counter() < end:
            op()
            count += 1
        t1, r1 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
        print(json.dumps({"count": count, "wall": t1 - t0, "user": r1.ru_utime - r0.ru_utime,
                          "sys": r1.ru_stime - r0.ru_stime}), flush=True)
    return 0


def _gpu_count() -> int:
    import cupy as cp

    return cp.cuda.runtime.getDeviceCount()


def _start(gpus: list[int], cubin: str, sync: str) -> list[subprocess.Popen]:
    """Workers on the given GPUs (one per entry), each ready: context made, operations warmed."""
    procs = []
    for gpu in gpus:
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(gpu), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
                   MKL_NUM_THREADS="1", KERNEL_GRADER_CUDA_SYNC=sync)
        procs.append(subprocess.Popen([sys.executable, __file__, "--worker", cubin], env=env, text=True,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE))
    for p in procs:
        assert p.stdout.readline().strip() == "ready", "a worker did not start"
    return procs


def _round(procs: list[subprocess.Popen], op: str, seconds: float) -> dict[str, float]:
    go_at = time.time() + 0.3
    for p in procs:
        p.stdin.write(f"{op} {seconds} {go_at}\n")
        p.stdin.flush()
    got = [json.loads(p.stdout.readline()) for p in procs]
    rate = sum(g["count"] / g["wall"] for g in got)
    cpu = sum(g["user"] + g["sys"] for g in got)
    return {"rate": rate, "sys_share": sum(g["sys"] for g in got) / cpu if cpu else 0.0,
            "cpu_per_op_ms": 1000 * cpu / max(1, sum(g["count"] for g in got))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--procs", default="1,4,8,16", help="numbers of workers at once (comma-separated)")
    parser.add_argument("--seconds", type=float, default=1.5, help="how long each round repeats its operation")
    parser.add_argument("--ops", default="", help="operations to run (comma-separated; default all)")
    parser.add_argument("--sync", default="auto", choices=("auto", "spin", "yield", "blocking"),
                        help="how the workers' contexts wait for the GPU (auto: the driver's default, a spin here)")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    parser.add_argument("--worker", metavar="CUBIN", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker)

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from grader.compile import compile_source
    import cupy as cp

    major, minor = cp.cuda.Device(0).compute_capability[:1], cp.cuda.Device(0).compute_capability[1:]
    built = compile_source(_KERNEL, "touch.cu", arch=f"sm_{major}{minor}")
    assert built.ok, built.log
    cubin = Path(tempfile.mkdtemp()) / "touch.cubin"
    cubin.write_bytes(built.cubin)
    counts = [int(k) for k in args.procs.split(",")]
    gpus = _gpu_count()
    layouts = {"one GPU": [0] * max(counts)}
    if gpus > 1:
        layouts[f"{gpus} GPUs"] = [i % gpus for i in range(max(counts))]
    rows = []
    print(f"{gpus} GPU(s) visible, {os.cpu_count()} CPUs; {args.seconds} s a round; waits: {args.sync}", flush=True)
    for layout, placement in layouts.items():
        procs = _start(placement, str(cubin), args.sync)
        names = [o for o in args.ops.split(",") if o] or list(_operations_names())
        try:
            for op in names:
                base = None
                for k in counts:
                    got = _round(procs[:k], op, args.seconds)
                    base = base or got["rate"]
                    rows.append({"layout": layout, "sync": args.sync, "op": op, "procs": k, **got})
                    print(f"{layout:>7} {args.sync:>8} {op:>18} K={k:<3} {got['rate']:>10.1f}/s  x{got['rate'] / base:5.2f} of K=1  "
                          f"{got['cpu_per_op_ms']:7.3f} CPU-ms/op  {100 * got['sys_share']:3.0f}% system", flush=True)
        finally:
            for p in procs:
                p.stdin.close()
                p.wait()
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


def _operations_names() -> tuple[str, ...]:
    return ("malloc_4m", "malloc_64m", "pool_job", "pool_reuse", "module", "launch_sync", "h2d_pageable_4m",
            "d2h_pageable_4m", "h2d_pinned_4m", "host_alloc_4m", "cupy_roundtrip_4m", "numpy_fresh_pages",
            "numpy_compare", "numpy_blas")


if __name__ == "__main__":
    sys.exit(main())
