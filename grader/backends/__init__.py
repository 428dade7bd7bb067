"""Where a kernel runs: the GPU through CuPy, or the PTX emulator. Both give the runner one interface.

These modules run inside the child process (grader.run.child.runner), never in the grading parent.
"""
from __future__ import annotations

from .base import Buffer, Device, LaunchOutcome


def open_device(backend: str, *, pool: bool = True) -> Device:
    """The device for a backend name ("gpu" or "emu")."""
    if backend == "gpu":
        from .gpu import GpuDevice

        return GpuDevice(pool=pool)
    if backend == "emu":
        from .emu import EmuDevice

        return EmuDevice()
    raise ValueError(f"unknown backend {backend!r}")


__all__ = ["Buffer", "Device", "LaunchOutcome", "open_device"]
