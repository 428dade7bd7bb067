"""The graded checks, in the order the pipeline runs them (compile is judged by the pipeline itself)."""
from __future__ import annotations

from .base import Check, Context
from .correctness import CorrectnessCheck
from .counters import MEASURES, CountersCheck
from .memory_safety import MemorySafetyCheck
from .performance import PerformanceCheck
from .race import RaceCheck

REGISTRY: dict[str, Check] = {
    "correctness": CorrectnessCheck(),
    "race": RaceCheck(),
    "memory-safety": MemorySafetyCheck(),
    **{category: CountersCheck(category, measure) for category, measure in MEASURES.items()},
    "performance": PerformanceCheck(),
}

NAMES = {
    "compile": "Compiles", "correctness": "Correctness", "race": "Races and barriers", "memory-safety": "Memory safety",
    **{category: measure.name for category, measure in MEASURES.items()}, "performance": "Performance",
}

__all__ = ["Check", "Context", "NAMES", "REGISTRY"]
