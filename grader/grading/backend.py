"""Which backend a grading runs on: the GPU when one is usable, else the CPU emulator."""
from __future__ import annotations

import os
import threading
from concurrent.futures import Future

from ..errors import UsageError
from ..run.parent.device_probe import GpuInfo, probe

BACKENDS = ("auto", "gpu", "emu")


def resolve_backend(requested: str, answer: Future | None = None) -> tuple[str, GpuInfo | None, str]:
    """("gpu" | "emu", GPU info, note). --backend gpu without a GPU is a usage error with a one-line
    reason. `answer`: a probe already under way (ask_for_gpu), else the probe runs now."""
    if requested not in BACKENDS:
        raise UsageError(f"unknown backend {requested!r}; choose one of {', '.join(BACKENDS)}")
    if requested == "emu":
        return "emu", None, ""
    info = answer.result() if answer is not None else probe()
    if info.available:
        return "gpu", info, ""
    if requested == "gpu":
        raise UsageError(f"--backend gpu: no usable GPU ({info.reason})")
    return "emu", None, f"No GPU is visible ({info.reason}), so this was graded on the CPU emulator; performance needs a GPU."


def ask_for_gpu(requested: str) -> Future | None:
    """Start the GPU probe in the background (None for --backend emu): the grading meanwhile sets up
    its folder and, on a machine with an NVIDIA driver, starts its GPU children."""
    if requested == "emu" or requested not in BACKENDS:
        return None
    answer: Future = Future()

    def ask() -> None:
        try:
            answer.set_result(probe())
        except BaseException as exc:  # noqa: BLE001 - raised again where the answer is read
            answer.set_exception(exc)

    threading.Thread(target=ask, name="gpu-probe", daemon=True).start()
    return answer


def driver_present() -> bool:
    """Whether this machine has an NVIDIA driver at all (its device files): only then is it worth
    starting GPU children before the probe has answered."""
    return any(os.path.exists(p) for p in ("/dev/nvidiactl", "/proc/driver/nvidia/version"))
