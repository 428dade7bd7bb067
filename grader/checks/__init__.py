"""The graded checks, in the order the pipeline runs them (compile is judged by the pipeline itself)."""
from __future__ import annotations

from .base import Check, Context
from .correctness import CorrectnessCheck
from .counters import BANKS, TRAFFIC, CountersCheck
from .memory_safety import MemorySafetyCheck
from .performance import PerformanceCheck
from .race import RaceCheck

REGISTRY: dict[str, Check] = {
    "correctness": CorrectnessCheck(),
    "race": RaceCheck(),
    "memory-safety": MemorySafetyCheck(),
    "traffic": CountersCheck("traffic", TRAFFIC),
    "bank-conflicts": CountersCheck("bank-conflicts", BANKS),
    "performance": PerformanceCheck(),
}

NAMES = {
    "compile": "Compiles", "correctness": "Correctness", "race": "Races and barriers", "memory-safety": "Memory safety",
    "traffic": TRAFFIC.name, "bank-conflicts": BANKS.name, "performance": "Performance",
}

__all__ = ["Check", "Context", "NAMES", "REGISTRY"]
