"""The GPU probe: a parent's answer handed down in KERNEL_GRADER_GPU, else a child asks the driver."""
from __future__ import annotations

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
