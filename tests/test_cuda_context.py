"""grader.run.child.cuda_context without a usable driver: it holds nothing and raises nothing (CuPy
then meets and reports the problem in its own words). On a GPU: tests/gpu/test_cuda_context.py."""
from __future__ import annotations

import ctypes

from grader.run.child import cuda_context


class _Driver:
    """A stand-in for libcuda whose calls return the given CUDA error codes."""

    def __init__(self, init: int = 0, retain: int = 0, active: int = 0, flags: int = 0):
        self.calls: list[str] = []
        self._init, self._retain = init, retain
        self._active, self._flags = active, flags

    def cuDevicePrimaryCtxGetState(self, device, flags, active):
        self.calls.append("cuDevicePrimaryCtxGetState")
        flags._obj.value, active._obj.value = self._flags, self._active
        return 0

    def cuInit(self, flags):
        self.calls.append("cuInit")
        return self._init

    def cuDeviceGet(self, device, ordinal):
        self.calls.append("cuDeviceGet")
        return 0

    def cuDevicePrimaryCtxSetFlags_v2(self, device, flags):
        self.calls.append(f"cuDevicePrimaryCtxSetFlags_v2 {flags.value}")
        return 0

    def cuDevicePrimaryCtxRetain(self, context, device):
        self.calls.append("cuDevicePrimaryCtxRetain")
        return self._retain


def _run(monkeypatch, loader):
    monkeypatch.setattr(cuda_context, "_held", [])
    monkeypatch.setattr(cuda_context.ctypes, "CDLL", loader)
    cuda_context.open_early().join(10)
    return cuda_context._held


def test_no_driver_library_means_nothing_held(monkeypatch):
    def missing(name):
        raise OSError(f"{name}: cannot open shared object file")

    assert _run(monkeypatch, missing) == []


def test_a_driver_that_fails_to_initialise_is_left_alone(monkeypatch):
    driver = _Driver(init=100)  # CUDA_ERROR_NO_DEVICE
    assert _run(monkeypatch, lambda name: driver) == []
    assert driver.calls == ["cuInit"]


def test_a_retained_context_is_kept_for_the_child_s_life(monkeypatch):
    driver = _Driver()
    held = _run(monkeypatch, lambda name: driver)
    assert driver.calls == ["cuInit", "cuDeviceGet", "cuDevicePrimaryCtxGetState", "cuDevicePrimaryCtxSetFlags_v2 4",
                            "cuDevicePrimaryCtxRetain"]
    assert len(held) == 1 and isinstance(held[0], ctypes.c_void_p)


def test_the_context_sleeps_in_a_wait_unless_told_otherwise(monkeypatch):
    """CU_CTX_SCHED_BLOCKING_SYNC (4) by default; $KERNEL_GRADER_CUDA_SYNC picks another, a value
    it does not know means the default."""
    for wanted, flag in ((None, 4), ("spin", 1), ("Yield", 2), ("auto", 0), ("fast", 4)):
        if wanted is None:
            monkeypatch.delenv(cuda_context.SYNC_VARIABLE, raising=False)
        else:
            monkeypatch.setenv(cuda_context.SYNC_VARIABLE, wanted)
        driver = _Driver()
        monkeypatch.setattr(cuda_context.ctypes, "CDLL", lambda name: driver)
        assert cuda_context.set_schedule(0)
        assert driver.calls[-1] == f"cuDevicePrimaryCtxSetFlags_v2 {flag}", wanted


def test_a_context_already_made_is_left_as_it_is(monkeypatch):
    monkeypatch.delenv(cuda_context.SYNC_VARIABLE, raising=False)
    for flags, answer in ((4, True), (1, False)):
        driver = _Driver(active=1, flags=flags)
        monkeypatch.setattr(cuda_context.ctypes, "CDLL", lambda name: driver)
        assert cuda_context.set_schedule(0) is answer
        assert not any("SetFlags" in call for call in driver.calls)
