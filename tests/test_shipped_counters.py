"""grader.shipped_counters: the reference's emulator counts in the student bundle, numbers only."""
from __future__ import annotations

import json
import re
from pathlib import Path

from grader import api, shipped_counters
from grader.staff import student_bundle as student
from grader.exercise import load

ROOT = Path(__file__).resolve().parent.parent
LEVEL2 = ROOT / "exercises" / "level2"


def test_file_holds_numbers_only_at_the_checks_emulator_size(tmp_path):
    bundle = student.build_bundle(LEVEL2, tmp_path)
    doc = json.loads((bundle.folder / shipped_counters.FILE_NAME).read_text())
    spec = load(LEVEL2).spec
    assert set(doc["checks"]) == {c for c in shipped_counters.CATEGORIES if c in spec.checks}
    for category, entry in doc["checks"].items():
        assert entry["sizes"] == dict(spec.checks[category].emu_size)
        assert entry["counters"] and all(isinstance(v, float) for v in entry["counters"].values())
    text = (bundle.folder / shipped_counters.FILE_NAME).read_text()
    assert "__global__" not in text and "matmul" not in text  # no code of the reference
    nb = (bundle.folder / "level2.ipynb").read_text()
    assert f"%%writefile level2/{shipped_counters.FILE_NAME}" in nb


def test_a_file_measured_at_another_size_is_ignored(tmp_path):
    bundle = student.build_bundle(LEVEL2, tmp_path)
    path = bundle.folder / shipped_counters.FILE_NAME
    doc = json.loads(path.read_text())
    doc["checks"]["traffic"]["sizes"] = {"N": 7}
    path.write_text(json.dumps(doc))
    conf = load(bundle.folder).spec.checks["traffic"]
    assert shipped_counters.load(bundle.folder, "traffic", conf) is None
    report = api.grade(bundle.folder, ROOT / "reference/level2/solution.cu", backend="emu", seed=1)
    assert "traffic" in {n.category for n in report.not_run}


def test_a_wasteful_kernel_fails_traffic_against_the_shipped_counts(tmp_path):
    bundle = student.build_bundle(LEVEL2, tmp_path)
    report = api.grade(bundle.folder, ROOT / "reference/level2/wrong/no_tiling.cu", backend="emu", seed=1)
    traffic = next(t for t in report.tests if t.category == "traffic")
    assert not traffic.passed and re.search(r"ratio \d+\.\d+", traffic.output)


def test_install_cell_installs_every_runtime_dependency_for_cuda_12(tmp_path):
    import tomllib

    import nbformat

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {re.split(r"[<>=;\s]", d, maxsplit=1)[0] for d in deps}
    names -= {"cupy-cuda13x", "nvidia-cuda-nvrtc", "tomli"}  # CUDA 13 wheels are swapped for 12; tomli is for 3.10
    line = student.cuda12_requirements()
    for name in names | {"cupy-cuda12x", "nvidia-cuda-nvrtc-cu12", "pytest"}:
        assert f'"{name}' in line, name
    assert "cupy-cuda13x" not in line and '"nvidia-cuda-nvrtc>' not in line
    bundle = student.build_bundle(LEVEL2, tmp_path)
    cells = nbformat.read(str(bundle.notebook), as_version=4).cells
    assert any(f"!pip install -q {line}" in c.source for c in cells)
