"""The exercise kinds by the spec's `kind`: the one place a new kind is added."""
from __future__ import annotations

from ..errors import SpecError
from ..exercise import Exercise
from .base import Kind
from .cuda import CudaKind
from .python import PythonKind
from .triton import TritonKind

KINDS: dict[str, Kind] = {kind.name: kind for kind in (CudaKind(), PythonKind(), TritonKind())}


def kind_of(exercise: Exercise) -> Kind:
    """The kind that grades `exercise`."""
    try:
        return KINDS[exercise.kind]
    except KeyError:
        raise SpecError(f"{exercise.root}: no grading pipeline for exercise kind {exercise.kind!r} "
                        f"(known: {', '.join(sorted(KINDS))})") from None
