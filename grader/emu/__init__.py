"""A GPU-free PTX emulator: a NumPy SIMT interpreter of the PTX that NVRTC emits.

See docs/emulator.md for the contract.
"""

from .api import BarrierError, Emulator, Hazard, LaunchReport, MemoryFault, ParamInfo, UninitRead

__all__ = ["Emulator", "LaunchReport", "BarrierError", "MemoryFault", "Hazard", "UninitRead", "ParamInfo"]
