"""Is there a GPU? Asked in a child process so the grading parent never holds a CUDA context.

The child asks the CUDA driver directly (ctypes, no CuPy import): a probe costs a Python start and
cuInit, a fraction of a second. `grade batch` probes each GPU once and hands the answer to its
children in KERNEL_GRADER_GPU, so they do not probe again.
"""
from __future__ import annotations

import ctypes
import functools
import importlib.util
import json
import os
import sys
from dataclasses import asdict, dataclass
from typing import Mapping

from .sandbox import python_argv, run_child

PROBE_SECONDS = 60.0
PRESET_VARIABLE = "KERNEL_GRADER_GPU"  # a GpuInfo as JSON, set by a parent that already probed
_CC_MAJOR, _CC_MINOR = 75, 76  # CUdevice_attribute values for the compute capability


@dataclass(frozen=True)
class GpuInfo:
    """The visible GPU, or why there is none."""

    available: bool
    name: str = ""
    arch: str = ""
    reason: str = ""

    def to_env(self) -> str:
        """The value of KERNEL_GRADER_GPU that hands this answer to a child."""
        return json.dumps(asdict(self))

    @classmethod
    def from_env(cls, value: str | None) -> "GpuInfo | None":
        """The answer a KERNEL_GRADER_GPU value hands down; None when it is unset or malformed."""
        if not value:
            return None
        try:
            return cls(**json.loads(value))
        except (ValueError, TypeError):
            return None


@functools.lru_cache(maxsize=1)
def probe() -> GpuInfo:
    """Device 0's name and compute capability, from KERNEL_GRADER_GPU if a parent set it, else a child."""
    return GpuInfo.from_env(os.environ.get(PRESET_VARIABLE)) or probe_device()  # malformed: probe for real


def probe_device(env: Mapping[str, str] | None = None) -> GpuInfo:
    """Probe in a child whose environment adds `env` (e.g. CUDA_VISIBLE_DEVICES=3); never cached."""
    child_env = {k: v for k, v in os.environ.items() if k != PRESET_VARIABLE}
    child_env.update(env or {})
    run = run_child(python_argv("grader.run.parent.device_probe"), timeout=PROBE_SECONDS, env=child_env)
    try:
        data = json.loads(run.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return GpuInfo(False, reason=f"the GPU probe {run.describe()}")
    return GpuInfo(**data)


def _driver_info() -> dict:
    """Name and compute capability of device 0 from the CUDA driver; raises when there is none."""
    if importlib.util.find_spec("cupy") is None:
        raise RuntimeError("CuPy is not installed (pip install cupy-cuda12x)")
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        raise RuntimeError("no NVIDIA driver was found (libcuda.so.1 cannot be loaded)") from None
    count, dev, major, minor = ctypes.c_int(), ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    name = ctypes.create_string_buffer(256)

    def call(result: int, what: str) -> None:
        if result != 0:
            raise RuntimeError(f"{what} failed with CUDA error {result}")

    call(cuda.cuInit(0), "cuInit")
    call(cuda.cuDeviceGetCount(ctypes.byref(count)), "cuDeviceGetCount")
    if count.value < 1:
        raise RuntimeError("no CUDA device is visible")
    call(cuda.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    call(cuda.cuDeviceGetName(name, len(name), dev), "cuDeviceGetName")
    call(cuda.cuDeviceGetAttribute(ctypes.byref(major), _CC_MAJOR, dev), "cuDeviceGetAttribute")
    call(cuda.cuDeviceGetAttribute(ctypes.byref(minor), _CC_MINOR, dev), "cuDeviceGetAttribute")
    return {"available": True, "name": name.value.decode(errors="replace"), "arch": f"sm_{major.value}{minor.value}"}


def _main() -> int:
    try:
        info = _driver_info()
    except Exception as exc:  # no driver, no device, no CuPy: all mean "no GPU here"
        info = {"available": False, "reason": f"{type(exc).__name__}: {exc}".splitlines()[0][:300]}
    print(json.dumps(info))
    return 0


if __name__ == "__main__":
    sys.exit(_main())
