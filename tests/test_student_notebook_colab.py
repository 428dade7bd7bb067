"""The student notebook of level2, run top to bottom as Colab runs it, grades the pasted reference
at full marks: `!` lines as shell commands in a fresh virtual environment, `%%writefile` cells as
files, the install cell pointed (--pip-source) at a wheel built from this checkout.

Slow (it installs CuPy, NVRTC and the grader from the package index into a fresh environment).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = ROOT / "reference" / "level2" / "solution.cu"


def run_like_colab(notebook: nbformat.NotebookNode, cwd: Path, venv: Path) -> list[str]:
    """Run every code cell: `%%writefile` cells write their file, `!` lines run in a shell whose PATH
    starts with the venv (Colab's pip and python are its own); the output of each cell."""
    env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}", "VIRTUAL_ENV": str(venv)}
    env.pop("PYTHONPATH", None)  # nothing of this checkout but the wheel the notebook installs
    outputs = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        first, _, body = cell.source.partition("\n")
        if first.startswith("%%writefile "):
            path = cwd / first.split(None, 1)[1].strip()
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body if body.endswith("\n") else body + "\n")
            outputs.append(f"Writing {path.name}")
            continue
        printed = []
        for line in cell.source.splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            assert line.startswith("!"), f"a line Colab would run as Python: {line!r}"
            proc = subprocess.run(line[1:], shell=True, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
            assert proc.returncode == 0, f"{line}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
            printed.append(proc.stdout)
        outputs.append("".join(printed))
    return outputs


@pytest.mark.slow
def test_student_notebook_runs_top_to_bottom_and_grades_the_reference_at_full_marks(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(ROOT)], check=True,
                   timeout=600)
    wheel = next(dist.glob("kernel_grader-*.whl"))
    handout = tmp_path / "handout"
    subprocess.run([sys.executable, "-m", "grader", "student", str(ROOT / "exercises" / "level2"), "--out", str(handout),
                    "--pip-source", str(wheel)], check=True, cwd=ROOT, timeout=300)
    notebook = nbformat.read(str(handout / "level2" / "level2.ipynb"), as_version=4)
    kernel = [c for c in notebook.cells if c.cell_type == "code" and c.source.startswith("%%writefile submission.cu")]
    assert len(kernel) == 1
    kernel[0].source = "%%writefile submission.cu\n" + SOLUTION.read_text()  # the student pastes the reference
    content = tmp_path / "content"  # Colab's working folder: empty but for what the cells write
    content.mkdir()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    outputs = run_like_colab(notebook, content, venv)
    graded = outputs[-1]
    assert "FAIL" not in graded and "grader fault" not in graded, graded
    score = re.search(r"score: ([\d.]+) / ([\d.]+)", graded)
    assert score and score.group(1) == score.group(2), graded
    assert re.search(r"PASS\s+Global memory traffic", graded), graded  # against the shipped counters
    assert "no reference solution" not in graded
