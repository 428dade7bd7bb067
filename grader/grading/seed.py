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


def class_seed(exercise_id: str, fixed: int | None, secret: str | None = None) -> int:
    """The base seed of the launches every grading of an exercise shares: the counter checks' profile
    launches, whose reference counts are then one per class, not one per student (a batch's
    profiler measures them once, grader.run.parent.profile_broker). A fixed --seed is used as it is
    (a grading with --seed S profiles what it always did); else it comes from the exercise and the
    course's secret alone, never from the submission, so that which student is graded changes
    nothing the reference is measured on."""
    if fixed is not None:
        return fixed
    secret = os.environ.get(SECRET_VARIABLE, "") if secret is None else secret
    text = "\0".join(["kernel-grader class seed", exercise_id, secret])
    return int.from_bytes(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:4], "little") & 0x7FFFFFFF
