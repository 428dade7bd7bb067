"""Is there a GPU? Asked in a child process so the grading parent never holds a CUDA context."""
from __future__ import annotations

import functools
import json
import sys
from dataclasses import dataclass

from .sandbox import python_argv, run_child

PROBE_SECONDS = 60.0


@dataclass(frozen=True)
class GpuInfo:
    """The visible GPU, or why there is none."""

    available: bool
    name: str = ""
    arch: str = ""
    reason: str = ""


@functools.lru_cache(maxsize=1)
def probe() -> GpuInfo:
    """Ask CuPy (in a child) for device 0's name and compute capability."""
    run = run_child(python_argv("grader.device_probe"), timeout=PROBE_SECONDS)
    try:
        data = json.loads(run.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return GpuInfo(False, reason=f"the GPU probe {run.describe()}")
    return GpuInfo(**data)


def _main() -> int:
    try:
        import cupy

        count = cupy.cuda.runtime.getDeviceCount()
        if count < 1:
            raise RuntimeError("no CUDA device is visible")
        props = cupy.cuda.runtime.getDeviceProperties(0)
        name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        info = {"available": True, "name": name, "arch": f"sm_{props['major']}{props['minor']}"}
    except Exception as exc:  # no driver, no device, no CuPy: all mean "no GPU here"
        info = {"available": False, "reason": f"{type(exc).__name__}: {exc}".splitlines()[0][:300]}
    print(json.dumps(info))
    return 0


if __name__ == "__main__":
    sys.exit(_main())
