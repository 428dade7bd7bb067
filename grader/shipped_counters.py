"""The reference solution's memory counters, measured once and shipped with the student bundle.

A student's copy of an exercise has no reference solution, so the traffic and bank-conflict
checks would have nothing to compare with. `grade student` measures the reference on the
emulator (exact, PTX-level counts) at each counter check's emulator size and writes the numbers,
never the code, to `reference_counters.json` in the bundle; the counter checks compare the
student's kernel, also measured on the emulator, with them. A file measured for other sizes (the
spec changed since) is ignored.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from . import __version__
from .checks.counters import MEASURES
from .checks.shipped import CATEGORIES, FILE_NAME, load, sizes_of  # noqa: F401 - read by the bundle and the checks
from .errors import SpecError
from .profile import profile


def measure(exercise) -> dict[str, Any]:
    """The reference's emulator counters for each counter check of the exercise (numbers only)."""
    checks: dict[str, Any] = {}
    measured: dict[str, Any] = {}  # one launch per size, whichever checks share it
    for category in CATEGORIES:
        conf = exercise.spec.checks.get(category)
        if conf is None or not (conf.emu_size or conf.size):
            continue
        sizes = sizes_of(conf)
        key = json.dumps(sizes, sort_keys=True)
        if key not in measured:
            measured[key] = profile(exercise.root, exercise.solution_path, sizes, backend="emu")
        result = measured[key]
        if result.error or not result.counters:
            raise SpecError(f"{exercise.solution_path}: measuring it at {sizes} for the student bundle failed: "
                            f"{result.error or 'no counters'}")
        names = MEASURES[category].compared + MEASURES[category].reported
        checks[category] = {"sizes": sizes, "counters": {k: float(result.counters.get(k, 0)) for k in names}}
    return {"about": "The reference solution's memory counters, measured on the emulator; numbers only.",
            "grader_version": __version__, "exercise": exercise.id, "checks": checks}


def text_for(exercise) -> str | None:
    """The file's text for an exercise (None when it has no counter check or no reference)."""
    if not Path(exercise.solution_path).is_file():
        return None
    # The same reference, spec and grader measure the same: once per process (tests build many bundles).
    key = (str(exercise.root), exercise.solution_path.read_bytes(), (exercise.root / "spec.toml").read_bytes())
    if key not in _MEASURED:
        doc = measure(exercise)
        _MEASURED[key] = json.dumps(doc, indent=2, sort_keys=True) + "\n" if doc["checks"] else None
    return _MEASURED[key]


_MEASURED: dict[tuple, str | None] = {}
