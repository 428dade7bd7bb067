"""The GPU probe: a parent's answer handed down in KERNEL_GRADER_GPU, else a child asks the driver."""
from __future__ import annotations

import time
from pathlib import Path

from grader.run.parent import device_probe
from grader.run.parent.device_probe import PRESET_VARIABLE, GpuInfo


def test_a_preset_answer_is_used_without_probing(monkeypatch):
    monkeypatch.setenv(PRESET_VARIABLE, GpuInfo(True, "NVIDIA H200", "sm_90").to_env())
    monkeypatch.setattr(device_probe, "probe_device", lambda env=None: (_ for _ in ()).throw(AssertionError("probed")))
    device_probe.probe.cache_clear()
    try:
        assert device_probe.probe() == GpuInfo(True, "NVIDIA H200", "sm_90")
    finally:
        device_probe.probe.cache_clear()


def test_a_malformed_preset_falls_back_to_a_real_probe(monkeypatch):
    monkeypatch.setenv(PRESET_VARIABLE, "{not json")
    monkeypatch.setattr(device_probe, "probe_device", lambda env=None: GpuInfo(False, reason="probed"))
    device_probe.probe.cache_clear()
    try:
        assert device_probe.probe().reason == "probed"
    finally:
        device_probe.probe.cache_clear()


def test_the_child_probe_answers_with_a_reason_when_there_is_no_gpu():
    info = device_probe.probe_device({"CUDA_VISIBLE_DEVICES": ""})
    if info.available:  # on a GPU machine the empty device list still hides every GPU
        raise AssertionError(f"CUDA_VISIBLE_DEVICES='' should hide every GPU, got {info}")
    assert info.reason and len(info.reason) <= 300


def test_gpu_children_started_while_the_probe_runs_are_dropped_when_it_finds_no_gpu(monkeypatch, tmp_path):
    """On a machine with an NVIDIA driver, `grade` starts its GPU children before the probe answers.
    Where the probe then finds no usable GPU, --backend auto grades on the emulator exactly as it
    would have, with a note, and the GPU children started for nothing are stopped."""
    from grader import api
    from grader.grading import backend as backend_module
    from grader.kinds import cuda
    from grader.run.parent import supervisor

    started = []
    real_prestart = supervisor.TaskSupervisor.prestart

    def watched(self, backend, **kwargs):
        child = real_prestart(self, backend, **kwargs)
        started.append((backend, child))
        return child

    def slow_probe():
        time.sleep(0.3)  # the children start before the answer
        return GpuInfo(False, reason="no GPU in this test")

    root = Path(__file__).resolve().parents[1]
    monkeypatch.setattr(supervisor.TaskSupervisor, "prestart", watched)
    monkeypatch.setattr(cuda, "driver_present", lambda: True)
    monkeypatch.setattr(backend_module, "probe", slow_probe)
    report = api.grade(root / "exercises" / "vector_add", root / "reference" / "vector_add" / "solution.cu", workdir=tmp_path)
    assert report.backend == "emu" and "no GPU in this test" in " ".join(report.notes)
    assert [b for b, _ in started] == ["gpu", "emu"], started
    gpu_child = started[0][1].child.proc
    gpu_child.wait(timeout=10)  # killed when the probe answered (a wait, not a race: it is already dying)
    assert gpu_child.returncode < 0, gpu_child.returncode  # stopped by the grader, not ended on its own
    monkeypatch.setattr(cuda, "driver_present", lambda: False)
    alone = api.grade(root / "exercises" / "vector_add", root / "reference" / "vector_add" / "solution.cu",
                      workdir=tmp_path / "alone", backend="emu")
    assert [(t.name, t.score) for t in report.tests] == [(t.name, t.score) for t in alone.tests]
