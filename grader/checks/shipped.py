"""Reading the reference's shipped memory counters (reference_counters.json of a student bundle), as
the counter checks do. grader.shipped_counters measures and writes them."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

FILE_NAME = "reference_counters.json"
CATEGORIES = ("traffic", "bank-conflicts")


def sizes_of(conf) -> dict[str, int]:
    """The size a counter check measures at on the emulator."""
    return dict(conf.emu_size or conf.size)


def load(exercise_root: Path, category: str, conf) -> Mapping[str, float] | None:
    """The shipped counters of one check, if the file is there and measured at the check's size."""
    path = Path(exercise_root) / FILE_NAME
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))["checks"][category]
        counters = {str(k): float(v) for k, v in entry["counters"].items()}
        sizes = {str(k): int(v) for k, v in entry["sizes"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return counters if sizes == sizes_of(conf) else None
