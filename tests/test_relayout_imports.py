"""bench/relayout_imports.py: old module names become the layered ones, in code and text, once and only once."""
# relayout_imports: leave this file as it is (it writes the old names on purpose)
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench" / "relayout_imports.py"


def _script():
    spec = importlib.util.spec_from_file_location("relayout_imports", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_file_of_the_project_names_a_module_by_its_old_name():
    files = subprocess.run(["git", "ls-files", "*.py", "*.md", "*.sh"], cwd=ROOT, capture_output=True, text=True)
    if files.returncode != 0:
        import pytest

        pytest.skip("not a git checkout")
    proc = subprocess.run([sys.executable, str(SCRIPT), "--check", *files.stdout.split(), ".ci/run"], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_file_outside_the_package_is_rewritten_once(tmp_path: Path):
    source = tmp_path / "tool.py"
    source.write_text(
        "from grader import api, stages\n"
        "from grader.stages import Runner  # noqa: E402\n"
        "from grader.cli import main\n"
        "argv = python_argv('grader.runner', 'job.json')\n"
        "doc = 'see grader/pysandbox.py and grader.launch_budget, not grader.launch'\n"
        "def f(r: Runner) -> None: ...\n")
    assert subprocess.run([sys.executable, str(SCRIPT), str(source)], capture_output=True).returncode == 0
    assert source.read_text() == (
        "from grader import api\n"
        "from grader.run.parent import supervisor as stages\n"
        "from grader.run.parent.supervisor import TaskSupervisor  # noqa: E402\n"
        "from grader.cli import main\n"
        "argv = python_argv('grader.run.child.runner', 'job.json')\n"
        "doc = 'see grader/pyexercise/sandbox.py and grader.run.child.launch_budget, not grader.run.child.launch'\n"
        "def f(r: TaskSupervisor) -> None: ...\n")
    again = subprocess.run([sys.executable, str(SCRIPT), "--check", str(source)], capture_output=True, text=True)
    assert again.returncode == 0, again.stdout


def test_relative_imports_are_read_from_where_the_text_was_written():
    script = _script()
    modules = script.existing_modules()
    # A line merged into a moved module, written for its old place (grader/stages.py).
    moved = ROOT / "grader" / "run" / "parent" / "supervisor.py"
    text = "from .tasks import Task\nfrom . import __version__\nfrom .sandbox import run_child\nfrom .spec import Limits\n"
    assert script.rewrite_imports(text, moved, modules) == (
        "from ..tasks import Task\nfrom ... import __version__\nfrom .sandbox import run_child\nfrom ...spec import Limits\n")
    # A new module beside the old ones, in the flat layout.
    flat = ROOT / "grader" / "new_module.py"
    text = "from . import api, pyvalues, math_threads\nfrom .tasks import (Task,\n    TaskResult)\n"
    assert script.rewrite_imports(text, flat, modules) == (
        "from . import api\nfrom .pyexercise import values as pyvalues\nfrom .run.parent import math_threads\n"
        "from .run.tasks import Task, TaskResult\n")
    # Already in the new layout: left as it is.
    done = "from ..tasks import Task\nfrom ... import __version__\nfrom .sandbox import run_child\n"
    assert script.rewrite_imports(done, moved, modules) == done
