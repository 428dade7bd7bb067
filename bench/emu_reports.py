"""Every corpus kernel's emulator report at every emulator size of its exercise, as one JSON file.

For checking that an emulator change leaves its verdicts alone: run it on two trees and compare the
files byte for byte (the trees' own grader is the one on PYTHONPATH; the kernels come from this
checkout):

    PYTHONPATH=/path/to/old python bench/emu_reports.py /tmp/old.json
    PYTHONPATH=. python bench/emu_reports.py /tmp/new.json
    cmp /tmp/old.json /tmp/new.json

Each launch records the emulator's findings (status, message, counters, per-line counters,
hazards, memory errors, uninitialised and early reads, unwritten elements), its steps and a digest
of every buffer afterwards. Kernels: each exercise's reference and wrong corpus, and for level2 the
hostile corpus (but its compile bombs, which NVRTC takes minutes over here, without the grader's
time limit) and the slow kernels; launches stop at 5,000 steps. Device printf goes to stdout.
"""
from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from grader.backends.emu import EmuDevice
from grader.compile import compile_source
from grader.exercise import Harness, load
from grader.run.child.launch import launch_kernel, load_chain

ROOT = Path(__file__).resolve().parent.parent
STEP_LIMIT = 5_000
SEED = 7


def kernels(exercise: str) -> list[Path]:
    """The .cu files graded against `exercise` here."""
    files = sorted((ROOT / "reference" / exercise).rglob("*.cu"))
    if exercise == "level2":
        files += sorted(f for f in (ROOT / "tests" / "hostile").glob("*.cu") if "compile_bomb" not in f.name)
        files += sorted((ROOT / "tests" / "data" / "slow_kernels").glob("*.cu"))
    return files


def report(spec, harness, ptx: Path, sizes: dict[str, int]) -> dict | str:
    """One launch on a fresh emulator device: what it found, its steps, a digest of its buffers."""
    try:
        device = EmuDevice()
        kernel = load_chain(device, str(ptx), spec)
        launched = launch_kernel(spec, device, kernel, sizes, harness.make_inputs(sizes, np.random.default_rng(SEED)),
                                 step_limit=STEP_LIMIT)
    except Exception as exc:  # noqa: BLE001 - a kernel the emulator refuses is a result too
        return f"exception {type(exc).__name__}: {exc}"
    digest = hashlib.sha256(b"".join(np.ascontiguousarray(v).tobytes() for _, v in sorted(launched.contents.items())))
    return {"error": launched.outcome.error, "findings": launched.outcome.findings, "steps": device.last_steps,
            "digest": digest.hexdigest()}


def main(out: Path) -> int:
    reports: dict[str, object] = {}
    work = Path(tempfile.mkdtemp())
    for ex_dir in sorted((ROOT / "exercises").iterdir()):
        try:
            exercise = load(ex_dir)
        except Exception:  # noqa: BLE001 - not a kernel exercise (or not one at all)
            continue
        spec = exercise.spec
        if getattr(spec, "kernel", None) is None:
            continue
        harness = Harness(exercise)
        sizes = [dict(c) for c in spec.emu_cases] + [dict(c.emu_size) for c in spec.checks.values() if c.emu_size]
        for path in kernels(ex_dir.name):
            name = f"{ex_dir.name}/{path.relative_to(ROOT)}"
            try:
                compiled = compile_source(path.read_text(), path.name)
            except UnicodeDecodeError:
                reports[name] = "not UTF-8"
                continue
            if not compiled.ok:
                reports[name] = "compile error"
                continue
            ptx = work / f"{abs(hash(name))}.ptx"
            ptx.write_text(compiled.ptx)
            for s in sizes:
                reports[f"{name} {json.dumps(s, sort_keys=True)}"] = report(spec, harness, ptx, s)
            print(name, file=sys.stderr, flush=True)
    out.write_text(json.dumps(reports, sort_keys=True, default=str, indent=0))
    print(f"{len(reports)} reports in {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(Path(sys.argv[1])))
