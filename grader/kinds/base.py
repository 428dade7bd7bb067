"""The interface every exercise kind implements, and the options a grading is given."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Protocol

from ..exercise import Exercise
from ..grading.submitted import Submitted
from ..grading.validation import Validation
from ..results import NotRun, TestResult, Report

if TYPE_CHECKING:  # the student bundle's record; its module writes kernel bundles (and imports no kind)
    from ..staff.student_bundle import StudentBundle


@dataclass(frozen=True)
class Options:
    """How to grade, as api.grade was asked: the backend asked for ("auto", "gpu", "emu"; a kind
    with no backend to choose ignores it), a fixed base seed or None (derived from the submission),
    a scratch folder to use and keep, and when the grading started (time.perf_counter())."""

    started: float
    backend: str = "auto"
    seed: int | None = None
    workdir: Path | None = None
    keep_workdir: bool = False


@dataclass(frozen=True)
class KindTraits:
    """The facts about a kind that callers outside grader.kinds act on, instead of its name.

    suffix: the source file a submission, the skeleton and the solution are (".cu"); wrong/*<suffix>
        is the wrong corpus. grader.exercise keeps the same fact by kind name (it sits below the kinds).
    python_source: the source is Python, so a notebook's graded text is its definitions, not a kernel cell.
    on_gpu: its submissions run on a GPU when there is one: Nsight Compute profiles them and a batch
        keeps warm GPU workers in its slots for them.
    sized: the exercise has sizes (cases.public, cases.hidden) and a harness: the conventions on
        public sizes apply, and, with on_gpu, the one on a harness that runs on CuPy arrays.
    profiled: `grade profile` gives its memory counters per source line.
    requires: what an image that grades this kind installs beyond the grader's own dependencies, each
        the arguments of one `pip install` run before the grader's (the Gradescope bundle's setup.sh,
        the PrairieLearn and Autolab Dockerfiles); the base install needs none.
    """

    suffix: str
    python_source: bool
    on_gpu: bool
    sized: bool
    profiled: bool
    requires: tuple[str, ...] = ()

    @property
    def default_filename(self) -> str:
        """The file name a Gradescope bundle expects unless told: submission<suffix>."""
        return f"submission{self.suffix}"


# How a kind's validate grades a file: grader.api.grade, handed down (no kind imports the API).
Grade = Callable[..., Report]


class Kind(Protocol):
    """One kind of exercise: how its submissions are read, graded, and listed when not graded, and
    what the staff's tools (validate, the student bundle, the Gradescope zip, a batch) do with it."""

    name: str
    traits: KindTraits
    # The README.md of its Gradescope zip, a str.format template of id, title, filename, timeout, version.
    gradescope_readme: str

    def read(self, exercise: Exercise, path: Path) -> Submitted:
        """Read the submission at `path` once, applying the kind's source policy; never raises for
        anything the file holds (a refusal is a Submitted whose verdict says why)."""
        ...

    def grade(self, exercise: Exercise, submitted: Submitted, options: Options) -> Report:
        """Grade a submission already read; never raises for anything the submission does."""
        ...

    def not_graded(self, exercise: Exercise, backend: str, reason: str) -> tuple[list[TestResult], list[NotRun]]:
        """Every test of the exercise failed, the first with `reason`, for a submission that could not
        be graded at all (no file, a timeout, a grader that died): the shape a refusal takes."""
        ...

    def summary(self, exercise: Exercise) -> str:
        """What `grade list` says of the exercise under its title: its kernel and checks, or its functions."""
        ...

    def student_bundle(self, exercise: Exercise, out: Path, pip_source: str) -> "StudentBundle":
        """Write the student bundle OUT/<id>/ (README, skeleton, notebook, ...); `pip_source` is where
        the notebook installs the grader from, for a kind whose notebook installs it."""
        ...

    def hidden_in_bundle(self, exercise: Exercise) -> list[str]:
        """What of the exercise's hidden material its student bundle holds (empty: nothing), for the
        conventions; a kind whose validate checks its bundle itself returns []."""
        ...

    def validate(self, exercise: Exercise, *, grade: Grade, conventions: Callable[[Exercise, Validation], None],
                 backend: str, seed: int, progress: Callable[[str], None]) -> Validation:
        """Prove the exercise's promises (`grade validate`): the spec line, then `conventions` (adds one
        item per convention), then its reference, skeleton and wrong corpus graded through `grade`."""
        ...
