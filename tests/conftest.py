"""Shared fixtures and the `gpu` marker: GPU tests skip cleanly where CuPy sees no device."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Tests never read or fill the user's compile cache; children inherit this.
os.environ.setdefault("KERNEL_GRADER_CACHE", tempfile.mkdtemp(prefix="kg-test-cache-"))


def pytest_collection_modifyitems(config, items):
    if not any("gpu" in item.keywords for item in items):
        return
    from grader.run.parent.device_probe import probe

    info = probe()
    if info.available:
        return
    skip = pytest.mark.skip(reason=f"no GPU: {info.reason}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture
def level2(root: Path) -> Path:
    return root / "exercises" / "level2"
