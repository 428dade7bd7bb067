"""The `grade` command: a thin click layer over grader.api.

`grade EXERCISE SUBMISSION` grades one file; subcommands (`grade list`, `grade validate`, ...)
sit beside it. Parsing and rendering live here; every decision lives in the API.
"""
from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path

import click

from .. import __version__, api
from .. import exercise as exercise_module
from .guard import guard
from ..errors import ExitCode, UsageError
from ..kinds.registry import kind_of
from .staff import register as register_staff_commands
from ..results import inert, summary_lines, to_json, write_atomic

_DEFAULTS = inspect.signature(api.grade).parameters


class _GradeGroup(click.Group):
    """A group whose first positional argument may be an exercise folder instead of a subcommand."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["run", *args]
        return super().parse_args(ctx, args)

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write_usage("grade", "EXERCISE_DIR SUBMISSION [OPTIONS]\n       grade COMMAND [ARGS]...")


@click.group(cls=_GradeGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kernel-grader")
def main() -> None:
    """Grade GPU kernel homework: CUDA kernels, Triton kernels, and Python (NumPy) lessons.

    \b
    Grade one submission (the usual case):
      grade exercises/level2 submission.cu
      grade exercises/level2 submission.cu --backend emu --json results.json
      grade exercises/triton_softmax my_kernel.py       (a Triton kernel and its launcher)

    Every check prints a verdict and, when it fails, what to fix. With a GPU a CUDA kernel runs on it
    (CuPy, CUDA events, Nsight Compute, compute-sanitizer); without one, on the built-in PTX emulator,
    which reports exact memory traffic, bank conflicts, races and out-of-bounds accesses per source line.
    A Triton kernel runs under Triton's interpreter on the CPU, every load and store watched, and
    where there is a GPU also compiled by Triton and run on it.
    Exit status: 0 graded (whatever the score), 1 the grader failed (or a tool it needs is missing:
    see `grade doctor`), 2 usage or exercise-spec error.
    """


def _backend_option(f):
    return click.option("--backend", type=click.Choice(api.BACKENDS), default=_DEFAULTS["backend"].default, show_default=True,
                        help="gpu: run on the GPU; emu: the CPU emulator; auto: the GPU if CuPy sees one, else the emulator.")(f)


@main.command("run")
@click.argument("exercise_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("submission", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@_backend_option
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), help="Write the results JSON (Gradescope format) here.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write a self-contained HTML report here: the verdicts, and the source with each line's cost and findings.")
@click.option("--seed", type=int, help="Base seed for the random inputs (default: derived from the exercise, the file's "
              "content and $KERNEL_GRADER_SECRET, so a regrade draws the same inputs; the one used is in the JSON).")
@click.option("--quiet", "-q", is_flag=True, help="Print only the score line.")
def run_cmd(exercise_dir: Path, submission: Path, backend: str, json_path: Path | None, html_path: Path | None,
            seed: int | None, quiet: bool) -> None:
    """Grade SUBMISSION (a .cu file, a .py file for a Triton or Python exercise, or a Colab notebook
    .ipynb) against the exercise in EXERCISE_DIR.

    A notebook is never run: the grader reads the kernel from its `%%writefile submission.cu` cell
    (or a `%%cuda` cell), or a Python exercise's definitions from its code cells, and names lines as
    `notebook cell 7, line 12`.
    This is what `grade EXERCISE_DIR SUBMISSION` runs.
    """
    def work() -> None:
        report = api.grade(exercise_dir, submission, backend=backend, seed=seed)
        if json_path:
            write_atomic(to_json(report), json_path)
        if html_path:
            from ..report import submission_page

            python = kind_of(exercise_module.load(exercise_dir)).traits.python_source
            submission_page.write_for(report, submission, html_path, python=python)
        lines = summary_lines(report, color=sys.stdout.isatty())
        click.echo(lines[-1].strip() if quiet else "\n".join(lines))
        if report.grader_faults:
            # The results would mislead: a tool of the grader's own failed, or the exercise's own code
            # raised, whatever the score says. Its traceback is for whoever runs the grader (staff).
            details = list(dict.fromkeys(n.detail for n in report.grader_faults if n.detail))
            for detail in details:
                click.echo(f"grade: the exercise's own code raised:\n{detail.rstrip()}", err=True)
            advice = "fix the exercise (the traceback is above)" if details else "`grade doctor` says what is missing"
            by_reason: dict[str, list[str]] = {}
            for n in report.grader_faults:
                by_reason.setdefault(n.reason, []).append(n.name)
            click.echo("grade: error: the grader could not run every check here (" +
                       "; ".join(f"{', '.join(names)}: {reason}" for reason, names in by_reason.items()) + f"); {advice}",
                       err=True)
            sys.exit(int(ExitCode.GRADER_FAILED))

    guard(work)


@main.command("list")
@click.argument("root", type=click.Path(file_okay=False, path_type=Path), default="exercises")
def list_cmd(root: Path) -> None:
    """List the exercises under ROOT (default: exercises/ in the current folder) with their kernels
    and graded checks. An exercise is a folder with a spec.toml; ROOT may also be one such folder."""
    def work() -> None:
        found = exercise_module.discover(root) if not (root / "spec.toml").is_file() else [exercise_module.load(root)]
        if not found:
            where = root.resolve()
            raise UsageError(f"no exercises found in {where} ({'no such folder' if not root.is_dir() else 'no sub-folder has a spec.toml'}). "
                             "Run `grade list` where the course's exercises/ folder is, or name it: `grade list path/to/exercises`")
        for ex in found:
            click.echo(f"{ex.id:<12} {ex.spec.title}\n{'':<12} {kind_of(ex).summary(ex)}")

    guard(work)


@main.command("doctor")
def doctor_cmd() -> None:
    """Say what this machine can grade: NVRTC, the emulator, pytest, the GPU, ncu, compute-sanitizer.

    Each tool is tried for real where that is cheap (a test kernel is compiled and emulated). Exit 0
    when grading works here (on the emulator at least), 1 when a tool it needs is missing or broken.
    """
    from .. import doctor

    def work() -> None:
        findings = doctor.examine()
        paint = (lambda text, code: f"\x1b[{code}m{text}\x1b[0m") if sys.stdout.isatty() else (lambda text, _: text)
        click.echo("\n".join(doctor.report_lines(findings, paint)))
        sys.exit(0 if doctor.healthy(findings) else int(ExitCode.GRADER_FAILED))

    guard(work)


@main.command("schema")
@click.argument("which", type=click.Choice(["results", "spec"]))
def schema_cmd(which: str) -> None:
    """Print the JSON Schema of the results document or of spec.toml."""
    from .. import results, spec

    click.echo(json.dumps((results if which == "results" else spec).schema(), indent=2))


@main.command("validate")
@click.argument("exercise_dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@_backend_option
@click.option("--seed", type=int, default=1, show_default=True, help="Base seed, so a validation is reproducible.")
def validate_cmd(exercise_dirs: tuple[Path, ...], backend: str, seed: int) -> None:
    """Prove exercises are ready to hand out.

    Checks that the spec validates, the exercise keeps every convention (docs/exercise-format.md),
    the reference scores full marks, the skeleton compiles and fails correctness, and each wrong
    submission fails the category its `// expect:` line names (and nothing its `// also:` line does
    not declare). A check gated behind an earlier failure is "not graded", never "passed"; a grading
    the exercise's own code broke is "not graded (grader fault)". Exit 0 only if every promise holds.
    """
    from ..staff.validate import validate

    def work() -> None:
        all_ok = True
        for folder in exercise_dirs:
            result = validate(folder, backend=backend, seed=seed, progress=lambda what: click.echo(f"  ... {what}", err=True))
            click.echo(f"{result.exercise} ({result.backend}):")
            for ok, text in result.items:
                click.echo(f"  {'ok  ' if ok else 'FAIL'}  {text}")
            all_ok &= result.ok
        click.echo("all exercises valid" if all_ok else "some promises do not hold")
        sys.exit(0 if all_ok else 1)

    guard(work)


@main.command("profile")
@click.argument("exercise_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("submission", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--size", "size_text", required=True, help='Problem size: "256", or "rows=70,cols=45".')
@_backend_option
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), help="Write the counters as JSON here.")
def profile_cmd(exercise_dir: Path, submission: Path, size_text: str, backend: str, json_path: Path | None) -> None:
    """Memory counters of one launch, per source line.

    Global sectors and requests, shared-memory instructions and wavefronts, keyed by Nsight Compute's
    metric names. The emulator attributes them to your source lines; on a GPU, ncu gives the totals.
    SUBMISSION may be a .cu file or a Colab notebook (.ipynb).
    """
    from .. import profile as profile_module

    def work() -> None:
        ex = exercise_module.load(exercise_dir)
        if not kind_of(ex).traits.profiled:
            raise UsageError(f"{ex.id} is a {ex.kind} exercise: `grade profile` has no memory counters per line for it")
        sizes = profile_module.parse_sizes(size_text, ex.spec.sizes)
        result = profile_module.profile(exercise_dir, submission, sizes, backend=backend)
        if json_path:
            json_path.write_text(json.dumps(result.to_json(), indent=2))
        # The table quotes the submission's source lines: inert, so no escape sequence in them reaches the terminal.
        click.echo("\n".join(inert(line) for line in profile_module.table(result)))

    guard(work)

# The course-staff commands (batch, gradescope, student) live in grader/cli/staff.py.
register_staff_commands(main)
