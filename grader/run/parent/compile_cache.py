"""A cache of compile results keyed by everything that decides them: the source, the name it is
reported under, the architecture, the options, the include allowlist, the grader and CuPy versions.

The reference solution is compiled for every grading, and students resubmit unchanged files: a hit
skips NVRTC, and when every source hits, the compile child too. Only results the compile child
produced are stored (a compile that timed out is not a fact about the source). A cache that cannot
be read or written is simply not used.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Mapping, Sequence

from ... import __version__
from ...compile import BASE_OPTIONS

VARIABLE = "KERNEL_GRADER_CACHE"  # a folder; "off" disables the cache


def cache_root() -> Path | None:
    """$KERNEL_GRADER_CACHE, else $XDG_CACHE_HOME/kernel-grader, else ~/.cache/kernel-grader; None when off."""
    chosen = os.environ.get(VARIABLE)
    if chosen == "off":
        return None
    if chosen:
        return Path(chosen) / "compile"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kernel-grader" / "compile"


def key(source: str, name: str, arch: str, allowed_includes: Sequence[str], memory_bytes: int) -> str:
    """The cache key of one compile (the compiler's memory cap included: a bomb may stop at it)."""
    parts = [__version__, _toolchain(), _headers(), arch, " ".join(BASE_OPTIONS), "\0".join(allowed_includes),
             str(memory_bytes), name, source]
    return hashlib.sha256("\0\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


@functools.lru_cache(maxsize=1)
def _headers() -> str:
    """What an include resolves to: the grader's own headers (their text) and the toolkit folder that
    stands in where NVRTC bundles none. A changed header must not be answered from the cache."""
    from ... import headers

    digest = hashlib.sha256()
    for path in sorted(headers.own_dir().iterdir()):
        if path.is_file():
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return f"{digest.hexdigest()}:{headers.toolkit_include()}"


def load(root: Path | None, cache_key: str, out: str) -> dict[str, Any] | None:
    """The summary entry of a cached compile with its artifacts copied to `out`.ptx/.cubin, or None."""
    if root is None:
        return None
    entry = root / cache_key[:2] / cache_key
    try:
        summary = json.loads((entry / "summary.json").read_text())
        if summary.get("ok"):
            for suffix in ("ptx", "cubin"):
                shutil.copyfile(entry / f"artifact.{suffix}", f"{out}.{suffix}")
                summary[suffix] = f"{out}.{suffix}"
        summary["cached"] = True
        return summary
    except (OSError, ValueError):
        return None


def store(root: Path | None, cache_key: str, summary: Mapping[str, Any]) -> None:
    """Keep one compile's summary and artifacts (written to a temporary folder, then renamed in)."""
    if root is None:
        return
    entry = root / cache_key[:2] / cache_key
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        if entry.exists():
            return
        tmp = Path(tempfile.mkdtemp(dir=entry.parent, prefix=".tmp-"))
        stored = dict(summary)
        if summary.get("ok"):
            for suffix in ("ptx", "cubin"):
                shutil.copyfile(summary[suffix], tmp / f"artifact.{suffix}")
                stored.pop(suffix)
        (tmp / "summary.json").write_text(json.dumps(stored))
        try:
            tmp.rename(entry)
        except OSError:  # another grading stored it first
            shutil.rmtree(tmp, ignore_errors=True)
    except (OSError, KeyError):
        return


def _toolchain() -> str:
    """Which CuPy (and so which NVRTC) compiles: its version file, read without importing CuPy."""
    spec = importlib.util.find_spec("cupy")
    if spec is None or not spec.origin:
        return "no-cupy"
    version_file = Path(spec.origin).parent / "_version.py"
    try:
        found = version_file.read_text()[:200] + os.environ.get("CUDA_PATH", "")
    except OSError:
        found = spec.origin
    # NVRTC comes in its own wheel, and its version decides the bundled headers too.
    for dist in ("nvidia-cuda-nvrtc", "nvidia-cuda-nvrtc-cu12"):
        try:
            found += f" {dist} {importlib.metadata.version(dist)}"
        except importlib.metadata.PackageNotFoundError:
            pass
    return found
