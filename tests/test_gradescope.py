"""grader.staff.gradescope: the autograder zip, run in a simulated /autograder tree, always writes a valid results.json."""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from grader.staff import gradescope
from grader.cli import main
from grader.results import validate


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    root = Path(__file__).resolve().parent.parent
    out = tmp_path_factory.mktemp("bundle") / "autograder.zip"
    gradescope.build_bundle(root / "exercises" / "level2", out)
    return out


def lay_out(bundle: Path, tmp_path: Path, files: dict[str, bytes]) -> Path:
    """An /autograder tree as Gradescope makes it: source/ from the zip, run_autograder copied, submission/."""
    ag = tmp_path / "autograder"
    with zipfile.ZipFile(bundle) as zf:
        zf.extractall(ag / "source")
    shutil.copy(ag / "source" / "run_autograder", ag / "run_autograder")
    (ag / "submission").mkdir()
    for name, data in files.items():
        (ag / "submission" / name).parent.mkdir(parents=True, exist_ok=True)
        (ag / "submission" / name).write_bytes(data)
    return ag


def run_autograder(ag: Path, **env: str) -> dict:
    environ = {**os.environ, gradescope.ROOT_VARIABLE: str(ag), gradescope.PYTHON_VARIABLE: sys.executable, **env}
    proc = subprocess.run(["bash", str(ag / "run_autograder")], env=environ, capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stderr
    document = json.loads((ag / "results" / "results.json").read_text())
    validate(document)
    return document


def test_zip_layout(bundle):
    with zipfile.ZipFile(bundle) as zf:
        names = set(zf.namelist())
        modes = {i.filename: i.external_attr >> 16 for i in zf.infolist()}
        readme = zf.read("README.md").decode()
        config = json.loads(zf.read("bundle.json"))
    for required in ("setup.sh", "run_autograder", "README.md", "kernel-grader/pyproject.toml", "kernel-grader/grader/cli/commands.py",
                     "kernel-grader/grader/schemas/results.schema.json", "exercises/level2/spec.toml",
                     "exercises/level2/harness.py", "exercises/level2/tests/test_hidden.py", "reference/level2/solution.cu",
                     "kernel-grader/grader/include/cstdio", "kernel-grader/grader/include/cuda_runtime.h"):
        assert required in names, required
    assert not any("/wrong/" in n or "__pycache__" in n for n in names)
    assert modes["run_autograder"] & stat.S_IXUSR and modes["setup.sh"] & stat.S_IXUSR
    assert "no GPU" in readme and "emulator" in readme and "not run" in readme
    assert config == {"exercise": "exercises/level2", "filename": "submission.cu", "timeout": 480.0, "backend": "emu"}


def test_scripts_parse_and_setup_installs_the_bundled_grader(bundle, tmp_path):
    with zipfile.ZipFile(bundle) as zf:
        zf.extractall(tmp_path)
    for script in ("setup.sh", "run_autograder"):
        subprocess.run(["bash", "-n", str(tmp_path / script)], check=True)
    setup = (tmp_path / "setup.sh").read_text()
    assert 'pip install "$SOURCE/kernel-grader"' in setup and "apt-get install" in setup
    assert "bubblewrap libseccomp2" in setup  # the jail of student Python
    assert 'chmod -R go-rwx "$SOURCE"' in (tmp_path / "run_autograder").read_text()


def test_good_submission_scores_everything_the_emulator_grades(bundle, root, tmp_path):
    ag = lay_out(bundle, tmp_path, {"submission.cu": (root / "reference/level2/solution.cu").read_bytes()})
    doc = run_autograder(ag)
    assert all(t["status"] == "passed" for t in doc["tests"])
    # Full marks: performance cannot run without a GPU, so its points leave the denominator.
    assert doc["score"] == doc["extra_data"]["max_score"] == 100
    assert doc["extra_data"]["raw_score"] == doc["extra_data"]["raw_max_score"] == sum(t["max_score"] for t in doc["tests"])
    assert doc["extra_data"]["backend"] == "emu"
    assert [n["category"] for n in doc["extra_data"]["not_run"]] == ["performance"]


def test_bad_submission_is_graded_zero_with_the_compiler_error(bundle, root, tmp_path):
    ag = lay_out(bundle, tmp_path, {"submission.cu": (root / "reference/level2/wrong/does_not_compile.cu").read_bytes()})
    doc = run_autograder(ag)
    assert doc["score"] == 0
    assert doc["tests"][0]["tags"] == ["compile"] and doc["tests"][0]["status"] == "failed"
    assert "submission.cu" in doc["tests"][0]["output"]


def test_missing_file_explains_what_was_expected(bundle, tmp_path):
    ag = lay_out(bundle, tmp_path, {"kernel.txt": b"__global__ void k() {}\n"})
    doc = run_autograder(ag)
    assert doc["score"] == 0 and "submission.cu" in doc["tests"][0]["output"] and "kernel.txt" in doc["tests"][0]["output"]


def test_several_files_none_named_right_explains(bundle, tmp_path):
    ag = lay_out(bundle, tmp_path, {"a.cu": b"// a\n", "b.cu": b"// b\n"})
    doc = run_autograder(ag)
    text = doc["tests"][0]["output"]
    assert doc["score"] == 0 and "a.cu" in text and "b.cu" in text and "exactly one" in text


def test_one_file_with_another_name_is_graded_with_a_note(bundle, root, tmp_path):
    ag = lay_out(bundle, tmp_path, {"src/my_kernel.cu": (root / "reference/level2/wrong/does_not_compile.cu").read_bytes()})
    doc = run_autograder(ag)
    assert "my_kernel.cu" in doc["tests"][0]["output"]  # graded: the compiler error names the file
    assert "Expected a file named submission.cu" in doc["output"]


def test_python_that_cannot_start_still_leaves_results(bundle, tmp_path):
    ag = lay_out(bundle, tmp_path, {"submission.cu": b"// anything\n"})
    doc = run_autograder(ag, **{gradescope.PYTHON_VARIABLE: "/bin/false"})
    assert doc["score"] == 0 and "not graded" in doc["output"]


def test_cli_writes_the_zip(level2, tmp_path):
    out = tmp_path / "ag.zip"
    result = CliRunner().invoke(main, ["gradescope", str(level2), "--out", str(out), "--filename", "matmul.cu"])
    assert result.exit_code == 0, result.output
    with zipfile.ZipFile(out) as zf:
        assert json.loads(zf.read("bundle.json"))["filename"] == "matmul.cu"
    bad = CliRunner().invoke(main, ["gradescope", str(level2), "--out", str(out), "--filename", "../x.cu"])
    assert bad.exit_code == 2 and "--filename" in bad.output


def test_the_smoke_test_passes_only_with_full_marks(bundle, tmp_path):
    with zipfile.ZipFile(bundle) as zf:
        zf.extractall(tmp_path / "good")
    ok, text = gradescope.smoke_test(tmp_path / "good" / "bundle.json")
    assert ok and "scores 100 / 100" in text, text
    # A bundle whose reference no longer gets full marks must fail the image build, loudly.
    with zipfile.ZipFile(bundle) as zf:
        zf.extractall(tmp_path / "bad")
    solution = tmp_path / "bad" / "reference" / "level2" / "solution.cu"
    solution.write_text(solution.read_text().replace("acc +=", "acc -=", 1).replace("fmaf(", "-fmaf(", 1))
    proc = subprocess.run([sys.executable, "-m", "grader.staff.gradescope", "--smoke-test", str(tmp_path / "bad" / "bundle.json")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "Correctness" in proc.stderr, proc.stderr


def test_a_course_secret_travels_in_the_bundle(level2, tmp_path, monkeypatch):
    monkeypatch.setenv(gradescope.SECRET_VARIABLE, "s3cret")
    out = gradescope.build_bundle(level2, tmp_path / "ag.zip").path
    with zipfile.ZipFile(out) as zf:
        assert json.loads(zf.read("bundle.json"))["secret"] == "s3cret"


def test_a_kinds_requirements_are_installed_before_the_grader_in_every_image():
    """A Triton exercise's images install CPU torch and Triton (KindTraits.requires) before the
    grader; a CUDA exercise's install nothing beyond the grader."""
    from grader.exercise import load
    from grader.staff.gradescope import kind_installs

    root = Path(__file__).resolve().parent.parent
    triton = load(root / "exercises" / "triton_vector_add")
    lines = kind_installs(triton, "PIP").splitlines()
    assert lines == ["PIP torch --index-url https://download.pytorch.org/whl/cpu", "PIP triton"]
    assert kind_installs(load(root / "exercises" / "level2"), "PIP") == ""



def test_a_triton_bundles_setup_installs_cpu_torch_and_triton_before_the_grader(tmp_path):
    root = Path(__file__).resolve().parent.parent
    gradescope.build_bundle(root / "exercises" / "triton_vector_add", tmp_path / "tva.zip")
    setup = zipfile.ZipFile(tmp_path / "tva.zip").read("setup.sh").decode()
    torch_at = setup.index('-m pip install torch --index-url https://download.pytorch.org/whl/cpu')
    assert torch_at < setup.index("-m pip install triton") < setup.index('-m pip install "$SOURCE/kernel-grader"')
    assert "@REQUIRES@" not in setup
