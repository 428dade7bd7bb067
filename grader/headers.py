"""The headers a submission may include, and the folders NVRTC finds them in.

Students write `#include <cstdio>` or `#include <cuda_runtime.h>` by habit: nvcc accepts them, and
printf debugging needs cstdio in their own builds. NVRTC knows none of them by default, so the
grader gives it two folders of its own, never one a submission can name:

- `grader/include/`: small headers of ours for what nvcc users take for granted (`<cstdio>`,
  `<cuda_runtime.h>`, `<cstdint>`, `<cmath>`, `<cfloat>`, `<climits>`, `<cassert>` and their `.h`
  forms). Each builds on the CUDA C++ library that NVRTC bundles where there is one. One more,
  `nvcc_implicit.h`, is never named by a submission: grader/compile.py pre-includes it in a source
  that uses a macro nvcc gives every file unasked (INFINITY, INT_MAX, M_PI, ...).
- the toolkit headers and CCCL that NVRTC itself bundles (`cuda_fp16.h`, `cuda_bf16.h`,
  `cuda/std/...`), extracted once by `nvrtcInstallBundledHeaders` (NVRTC 13.x) into a folder
  beside the compile cache. An NVRTC without that call (CUDA 12) still compiles every header of
  ours; `cuda_fp16.h` then cannot be opened, and the compiler says so.

Which names a submission may include is the exercise's `limits.allowed_includes` (default
EVERYDAY); the source policy in grader/submission.py refuses every other include before NVRTC
runs, and grader/compile.py refuses PTX that names a file outside these folders.
"""
from __future__ import annotations

import ctypes
import os
import tempfile
from importlib import resources
from pathlib import Path

# The headers students write by habit, which nvcc accepts: allowed unless an exercise says otherwise.
EVERYDAY: tuple[str, ...] = (
    "cstdio", "stdio.h", "cuda_runtime.h", "cuda_runtime_api.h", "cuda.h", "device_launch_parameters.h",
    "cstdint", "stdint.h", "cmath", "math.h", "cfloat", "float.h", "climits", "limits.h", "cassert", "assert.h",
    "cuda_fp16.h", "cuda_bf16.h", "cooperative_groups.h",
)

_INSTALL_SKIP_IF_EXISTS = 0  # NVRTC_INSTALL_HEADERS_SKIP_IF_EXISTS in nvrtc.h


def own_dir() -> Path:
    """The folder of the grader's own headers (package data)."""
    return Path(str(resources.files("grader").joinpath("include")))


def bundle_base() -> Path:
    """Where NVRTC's bundled headers are extracted: beside the compile cache, or in the temp folder
    when the cache is off ($KERNEL_GRADER_CACHE=off)."""
    chosen = os.environ.get("KERNEL_GRADER_CACHE")
    if chosen == "off":
        return Path(tempfile.gettempdir()) / "kernel-grader-nvrtc-headers"
    if chosen:
        return Path(chosen) / "nvrtc-headers"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kernel-grader" / "nvrtc-headers"


def install_bundle(version: tuple[int, int]) -> Path | None:
    """Extract NVRTC's bundled headers (once per NVRTC version) and return their folder, or None when
    this NVRTC bundles none or the folder cannot be written. Call it where NVRTC is loaded (the
    compile child): it finds the library among those the process has loaded."""
    target = bundle_base() / f"{version[0]}.{version[1]}"
    try:
        lib = ctypes.CDLL(f"libnvrtc.so.{version[0]}")
        install = lib.nvrtcInstallBundledHeaders
    except (OSError, AttributeError):
        return None
    install.argtypes = (ctypes.c_char_p, ctypes.c_uint, ctypes.POINTER(ctypes.c_char_p))
    install.restype = ctypes.c_int
    error = ctypes.c_char_p()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    # NVRTC takes a lock of its own and skips the work when the version marker is already there.
    if install(str(target).encode(), _INSTALL_SKIP_IF_EXISTS, ctypes.byref(error)) != 0:
        return None
    return target if (target / "cuda_fp16.h").exists() else None


def toolkit_include(env: dict[str, str] | None = None) -> Path | None:
    """An installed CUDA toolkit's include folder ($CUDA_PATH, else /usr/local/cuda), where it holds
    cuda_fp16.h: the stand-in for the bundle where NVRTC has none to extract (NVRTC before 13.x's
    nvrtcInstallBundledHeaders). The policy still decides which of its headers a submission names."""
    env = env if env is not None else dict(os.environ)
    for root in (env.get("CUDA_PATH"), env.get("CUDA_HOME"), "/usr/local/cuda"):
        if root and (Path(root) / "include" / "cuda_fp16.h").is_file():
            return Path(root) / "include"
    return None


def include_dirs(bundle: Path | None) -> tuple[Path, ...]:
    """The folders NVRTC searches, ours first (ours decide what `<cmath>` means)."""
    dirs = [own_dir()]
    if bundle is not None:
        # cooperative_groups.h includes its own parts by relative path, which --no-source-include
        # (no search beside the including file) would not find.
        dirs += [bundle, bundle / "cccl", bundle / "cooperative_groups", bundle / "cooperative_groups" / "details"]
    return tuple(dirs)


def within(path: str, dirs: tuple[Path, ...]) -> bool:
    """Whether a file NVRTC reports (a PTX .file entry) lies inside one of the include folders."""
    real = os.path.realpath(path)
    return any(real.startswith(os.path.realpath(d) + os.sep) for d in dirs)
