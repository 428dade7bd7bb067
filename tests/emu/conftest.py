"""Shared fixtures for the emulator tests: compile CUDA source to PTX with NVRTC (no GPU needed)."""

from __future__ import annotations

import functools

import pytest


@functools.lru_cache(maxsize=None)
def _compile(src: str, extra: tuple[str, ...] = ()) -> str:
    nvrtc = pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    prog = nvrtc.createProgram(src, "submission.cu", [], [])
    try:
        nvrtc.compileProgram(prog, ["-lineinfo", "--gpu-architecture=compute_90", *extra])
    except Exception as e:  # noqa: BLE001 - surface the compiler log in the failure
        raise AssertionError(f"NVRTC failed: {e}\n{nvrtc.getProgramLog(prog)}") from e
    ptx = nvrtc.getPTX(prog)
    return ptx.decode() if isinstance(ptx, bytes) else ptx


@pytest.fixture
def compile_ptx():
    """Return a function: CUDA source (+ optional NVRTC options) -> PTX text."""
    return lambda src, *extra: _compile(src, tuple(extra))
