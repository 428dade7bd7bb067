"""The base seed of a grading, the same for every exercise kind."""
from __future__ import annotations

import hashlib
import os

SECRET_VARIABLE = "KERNEL_GRADER_SECRET"  # a course's secret, mixed into every seed (derive_seed)


def derive_seed(exercise_id: str, sha256: str | None, secret: str | None = None) -> int:
    """The base seed of a grading: from the exercise, the submission's exact bytes and the course's
    secret ($KERNEL_GRADER_SECRET, where staff set one), so a regrade of the same file draws the same
    inputs and gets the same results, while students cannot know the inputs without the secret."""
    secret = os.environ.get(SECRET_VARIABLE, "") if secret is None else secret
    text = "\0".join(["kernel-grader seed", exercise_id, sha256 or "unreadable", secret])
    return int.from_bytes(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:4], "little") & 0x7FFFFFFF
