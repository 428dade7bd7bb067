import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from grader.grading import backend as backend_module
from grader.cli import main
from grader.run.parent.device_probe import GpuInfo


def test_help_lists_subcommands_and_usage():
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    assert "grade exercises/level2 submission.cu" in result.output
    assert "list" in result.output


def test_gpu_backend_without_gpu_is_a_one_line_usage_error(level2, root, monkeypatch):
    monkeypatch.setattr(backend_module, "probe", lambda: GpuInfo(False, reason="no CUDA device is visible"))
    result = CliRunner().invoke(main, [str(level2), str(root / "reference/level2/solution.cu"), "--backend", "gpu"])
    assert result.exit_code == 2
    assert result.output.strip().count("\n") == 0 and "no usable GPU" in result.output


def test_compile_error_is_graded_not_crashed(level2, root, tmp_path):
    out = tmp_path / "r.json"
    result = CliRunner().invoke(main, [str(level2), str(root / "reference/level2/wrong/does_not_compile.cu"),
                                       "--backend", "emu", "--json", str(out)])
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert doc["score"] == 0
    compile_test = doc["tests"][0]
    assert compile_test["tags"] == ["compile"] and compile_test["status"] == "failed"
    assert "does_not_compile.cu(" in compile_test["output"]  # the student's own file name, not a temp path
    assert "/tmp" not in compile_test["output"]


def test_bad_spec_exits_2_naming_the_file(tmp_path, root):
    ex = tmp_path / "broken"
    ex.mkdir()
    (ex / "spec.toml").write_text('id = "broken"\ntitle = 3\n')
    result = CliRunner().invoke(main, [str(ex), str(root / "reference/level2/solution.cu")])
    assert result.exit_code == 2 and "spec.toml" in result.output


def test_module_entry_point_runs(root):
    proc = subprocess.run([sys.executable, "-m", "grader", "--help"], capture_output=True, text=True, cwd=root)
    assert proc.returncode == 0 and "Usage" in proc.stdout


def _left_in(folder) -> list[int]:
    """Processes whose scratch folder ($TMPDIR, set for every child of a grading) lies in `folder`."""
    import os
    from pathlib import Path

    needle = f"TMPDIR={folder}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if any(item.startswith(needle) for item in (entry / "environ").read_bytes().split(b"\0")):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT", "SIGHUP", "SIGKILL"])
def test_a_killed_grading_takes_its_children_with_it(root, tmp_path, sig):
    """`kill` (SIGTERM), Ctrl-C (SIGINT) or a closed terminal (SIGHUP) mid-grading ends `grade` at
    once, and nothing it started runs on (the children run in sessions of their own, out of reach of
    the signal). The kernel spins: its children would run on for seconds if they were waited for.
    A SIGKILL gives the grader no time at all: then its reaper (grader.run.parent.reaper) kills them."""
    import os
    import signal
    import time

    source = tmp_path / "spin.cu"
    source.write_bytes((root / "tests" / "hostile" / "endless_loop_all.cu").read_bytes())
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch)}
    proc = subprocess.Popen([sys.executable, "-m", "grader", str(root / "exercises" / "level2"), str(source), "--backend", "emu"],
                            cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while len([p for p in _left_in(scratch) if p != proc.pid]) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len([p for p in _left_in(scratch) if p != proc.pid]) >= 2, "the grading started no children"
        time.sleep(0.5)
        proc.send_signal(getattr(signal, sig))
        sent = time.monotonic()
        _, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        proc.kill()
    if sig == "SIGKILL":
        assert proc.returncode == -9
    else:
        assert proc.returncode == 130 and err.strip() == "grade: interrupted"
        assert took < 3.0, f"grade ran on for {took:.1f} s after the signal"
    deadline = time.monotonic() + 5
    while _left_in(scratch) and time.monotonic() < deadline:  # SIGKILLed: gone as soon as they are reaped
        time.sleep(0.1)
    assert _left_in(scratch) == []
