import json
import subprocess
import sys

from click.testing import CliRunner

from grader import api
from grader.cli import main
from grader.run.parent.device_probe import GpuInfo


def test_help_lists_subcommands_and_usage():
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    assert "grade exercises/level2 submission.cu" in result.output
    assert "list" in result.output


def test_gpu_backend_without_gpu_is_a_one_line_usage_error(level2, root, monkeypatch):
    monkeypatch.setattr(api, "probe", lambda: GpuInfo(False, reason="no CUDA device is visible"))
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
