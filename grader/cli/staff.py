"""Course-staff commands: `grade batch`, `grade gradescope`, `grade prairielearn`, `grade autolab`,
`grade gradebook`, `grade student`.

A thin click layer over grader.staff.batch, grader.staff.gradescope, grader.staff.prairielearn,
grader.staff.autolab, grader.staff.gradebook and grader.staff.student_bundle; registered on the
main `grade` group by register().
"""
from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import click

from .. import api
from .. import exercise as exercise_module
from ..errors import ExitCode
from ..kinds.registry import kind_of
from .guard import guard, sigterm_as_interrupt


def register(group: click.Group) -> None:
    """Add the staff commands to the `grade` group."""
    group.add_command(batch_cmd)
    group.add_command(gradescope_cmd)
    group.add_command(prairielearn_cmd)
    group.add_command(autolab_cmd)
    group.add_command(gradebook_cmd)
    group.add_command(student_cmd)


_EXERCISE = click.argument("exercise_dir", metavar="EXERCISE", type=click.Path(exists=True, file_okay=False, path_type=Path))


@click.command("batch")
@_EXERCISE
@click.argument("submissions", type=click.Path(exists=True, path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder for results/<student>.json, grades.csv, summary.txt and report.html (created; reused to resume).")
@click.option("--workers", type=click.IntRange(min=1), help="Submissions graded at once. Default: one per CPU core "
              "(never more than the cores); on a GPU, --per-gpu per visible GPU.")
@click.option("--per-gpu", type=click.IntRange(min=1), default=8, show_default=True,
              help="On a GPU host, at most this many submissions share one GPU (each child sees only its GPU). "
                   "Timings still run alone: a lock keeps the others off the GPU while one is timed.")
@click.option("--profile-group", type=click.IntRange(min=0), default=8, show_default=True,
              help="On a GPU host, one Nsight Compute run profiles up to this many submissions' counter launches "
                   "together (ncu's start-up is paid once per group; GPUs of one kind share one profiler, whose "
                   "oldest request waits up to 2 s for the group to fill); 0: each grading runs its own ncu.")
@click.option("--backend", type=click.Choice(api.BACKENDS), default="auto", show_default=True,
              help="gpu, emu (the CPU emulator), or auto: the GPU if one is visible.")
@click.option("--warm/--no-warm", default=True, show_default=True,
              help="Start each grading's Python children by forking a warm process per slot that imported the "
                   "grader once, and on a GPU run each slot's launches and hidden tests in two warm workers that "
                   "keep their CUDA context (Linux; same isolation, limits and results). --no-warm: a fresh "
                   "interpreter and CUDA context each.")
@click.option("--timeout", type=click.FloatRange(min=1), help="Seconds allowed per submission before it is stopped "
              "and recorded as a timeout. Default: from the exercise's [limits] (compile x2 + run + 60 s).")
@click.option("--seed", type=int, help="One base seed for every student (reproducible inputs). Default: fresh per student.")
@click.option("--regrade", is_flag=True, help="Grade everyone again, ignoring results already in --out.")
@click.option("--ray", "ray", is_flag=False, flag_value="", default=None, metavar="[ADDRESS]",
              help="Grade on a Ray cluster, each submission a Ray task (1/--per-gpu of a GPU, or one CPU on the emulator); "
                   "results come back here. ADDRESS as for `ray.init` (e.g. ray://head:10001, or auto); alone, "
                   "RAY_ADDRESS or the cluster on this machine. Needs `pip install 'kernel-grader[ray]'`. See docs/cluster.md.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no summary; print only where the gradebook is.")
def batch_cmd(exercise_dir: Path, submissions: Path, out: Path, workers: int | None, per_gpu: int, profile_group: int,
              backend: str, warm: bool, timeout: float | None, seed: int | None, regrade: bool, ray: str | None, quiet: bool) -> None:
    """Grade a whole class: every submission in SUBMISSIONS against EXERCISE.

    \b
    SUBMISSIONS is one of:
      a folder of .cu files             alice.cu, bob.cu, ...    (id = file name)
      a folder of Colab notebooks       alice.ipynb, ...         (the %%writefile submission.cu cell is graded)
      a folder of student folders       alice/kernel.cu, ...     (id = folder name; one .cu, or one .ipynb, each)
      a .zip of either                  e.g. Gradescope's "Export Submissions" zip

    \b
    Writes, in --out:
      results/<id>.json   each student's results (the document `grade --json` writes), as each finishes
      grades.csv          id, total, one column per test, status; the second line is the maximum points
      summary.txt/.json   score histogram, most failed checks, identical submissions
      report.html         the class page; reports/<id>.html, each student's page (grade --html)

    \b
    status is graded, compile-error (did not compile, or no usable .cu file or notebook),
    timeout (stopped after --timeout), or grader-error (the grader failed: re-run). Each submission
    is graded in its own process, so a hang, crash or output flood costs only its own row.

    \b
    Interrupted (Ctrl-C, a killed job)? Run the same command again: students whose results file
    exists and whose submission is unchanged are skipped. grades.csv only exists once all are graded.

    \b
      grade batch exercises/level2 submissions.zip --out grades/level2
      grade batch exercises/level2 subs/ --out grades/level2 --backend emu --workers 8 --timeout 300
      grade batch exercises/level2 submissions.zip --out grades/level2 --ray auto
    """
    from ..staff import batch

    def work() -> None:
        options = batch.Options(backend=backend, workers=workers, per_gpu=per_gpu, timeout=timeout, seed=seed, regrade=regrade,
                                ray=ray, profile_group=profile_group, fork_server=warm)
        bar = None

        def on_start(todo: int, skipped: int) -> None:
            nonlocal bar
            if skipped and not quiet:
                click.echo(f"{skipped} already graded (unchanged since the last run); grading {todo}", err=True)
            if todo and not quiet and sys.stderr.isatty():
                bar = click.progressbar(length=todo, label="grading", show_eta=True, show_pos=True, file=sys.stderr,
                                        item_show_func=lambda o: f"{o.student}: {o.status}" if o else None)
                bar.__enter__()

        def on_done(outcome) -> None:
            if bar is not None:
                bar.update(1, outcome)
            elif not quiet:  # a log file, not a terminal: one line per student instead of a bar
                click.echo(f"  {outcome.student}: {outcome.status}, {outcome.score:g} points ({outcome.seconds:.0f} s)", err=True)

        with sigterm_as_interrupt():  # a `kill` of the batch stops its children and keeps finished results
            try:
                result = batch.run_batch(exercise_dir, submissions, out, options, on_start=on_start, on_done=on_done)
            except KeyboardInterrupt:
                if bar is not None:
                    bar.__exit__(None, None, None)
                click.echo(f"grade: interrupted; finished results are kept in {out / batch.RESULTS}. "
                           "Run the same command again to grade the rest.", err=True)
                sys.exit(130)
            if bar is not None:
                bar.__exit__(None, None, None)
        if quiet:
            click.echo(str(result.csv_path))
        else:
            click.echo("\n".join(result.summary.lines()))
            click.echo(f"graded {result.graded_now} now, {result.skipped} unchanged, with {result.workers} worker(s) "
                       f"in {result.seconds:.0f} s")
            click.echo(f"gradebook: {result.csv_path}\nsummary:   {result.out / 'summary.txt'}\nresults:   {result.out / batch.RESULTS}/")
            click.echo(f"report:    {result.out / 'report.html'} (each student's page in {result.out / 'reports'}/)")
        errors = result.summary.by_status.get("grader-error", 0)
        if errors:
            # Those rows have no total: the gradebook is not final until a run grades them.
            click.echo(f"grade: error: {errors} submission(s) were not graded (status grader-error: the grader failed, "
                       f"or the exercise's own code raised; each results file's extra_data.not_run says which). "
                       "Fix the cause and run the same command again: only those are graded again.", err=True)
            sys.exit(int(ExitCode.GRADER_FAILED))

    guard(work)


@click.command("gradescope")
@_EXERCISE
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The autograder zip to write, e.g. autograder.zip.")
@click.option("--filename", default="submission.cu", show_default=True,
              help="The file name students are told to submit (one .cu with another name is still graded, with a note).")
@click.option("--timeout", type=click.FloatRange(min=10), default=480, show_default=True,
              help="Seconds one grading may take; keep it below the assignment's Gradescope timeout (10 min by default).")
def gradescope_cmd(exercise_dir: Path, out: Path, filename: str, timeout: float) -> None:
    """Build a Gradescope autograder zip for EXERCISE.

    The zip holds setup.sh (installs Python and this grader), run_autograder (grades
    /autograder/submission/*.cu and always writes /autograder/results/results.json), the grader's
    source and the exercise, including its hidden cases, hidden tests and the reference solution
    (traffic is graded against it). Gradescope has no GPU: the CPU emulator grades, and the
    performance check is listed as not run.

    \b
    Upload it under the assignment's "Configure Autograder", Ubuntu 22.04 base image.
      grade gradescope exercises/level2 --out autograder.zip
    """
    from ..staff import gradescope

    def work() -> None:
        bundle = gradescope.build_bundle(exercise_dir, out, filename=filename, timeout=timeout)
        click.echo(f"wrote {bundle.path} ({bundle.size / 1024:.0f} KiB, {len(bundle.members)} files) for {bundle.exercise}")
        submitted = json.loads(zipfile.ZipFile(bundle.path).read("bundle.json"))["filename"]
        click.echo(f"upload it to Gradescope (Configure Autograder); students submit {submitted} or their Colab notebook")

    guard(work)


@click.command("prairielearn")
@_EXERCISE
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder to write questions/<id>/ (the PrairieLearn question) and image/ (the grader image) in.")
@click.option("--filename", default="submission.cu", show_default=True, help="The file name students submit.")
@click.option("--upload", is_flag=True, help="A file upload (pl-file-upload) instead of the in-browser editor.")
@click.option("--timeout", type=click.FloatRange(min=10, max=570), default=300, show_default=True,
              help="Seconds one grading may take; the question's job timeout is 30 s more (PrairieLearn allows 600).")
@click.option("--image", default="kernel-grader-pl", show_default=True,
              help="The grader image's name on Docker Hub (or your registry), as info.json names it.")
@click.option("--topic", default="CUDA kernels", show_default=True, help="The question's topic in info.json.")
def prairielearn_cmd(exercise_dir: Path, out: Path, filename: str, upload: bool, timeout: float, image: str, topic: str) -> None:
    """Write a PrairieLearn question for EXERCISE, externally graded, and its grader image.

    \b
    OUT/questions/<id>/   info.json, question.html, skeleton.cu, tests/ (the exercise, hidden
                          tests and reference, and run_grader, the entrypoint): copy into the
                          course's questions/ folder
    OUT/image/            Dockerfile (no GPU: the emulator grades), Dockerfile.gpu, the grader's source

    \b
      grade prairielearn exercises/level2 --out pl --image myorg/kernel-grader-pl
      docker build -t myorg/kernel-grader-pl pl/image && docker push myorg/kernel-grader-pl
    """
    from ..staff import prairielearn

    def work() -> None:
        q = prairielearn.build_question(exercise_dir, out, filename=filename, upload=upload, timeout=timeout, image=image, topic=topic)
        click.echo(f"wrote {q.question}/ (uuid {q.uuid}, job timeout {q.timeout} s) and {q.image}/")
        click.echo(f"build the image: docker build -t {image} {q.image}   (GPU host: -f {q.image / 'Dockerfile.gpu'})")

    guard(work)


@click.command("autolab")
@_EXERCISE
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder to write autograde.tar, autograde-Makefile, image/ and README.md in.")
@click.option("--handin", default="submission.cu", show_default=True, help="The lab's handin base name in Autolab.")
@click.option("--problem", default="autograded", show_default=True,
              help="The Autolab problem the total goes to (define it in the lab, worth the exercise's points).")
@click.option("--timeout", type=click.FloatRange(min=10), default=300, show_default=True,
              help="Seconds one grading may take; keep the lab's autograding timeout above it.")
def autolab_cmd(exercise_dir: Path, out: Path, handin: str, problem: str, timeout: float) -> None:
    """Write Autolab's autograde.tar and autograde-Makefile for EXERCISE.

    Autolab runs `make` beside the two and the student's handin; the last line printed is the
    autoresult, {"scores": {PROBLEM: total}, "scoreboard": [total, speed]}, the total being the
    score `grade` gives the same file. OUT/README.md says what to define in the lab.

    \b
      grade autolab exercises/level2 --out autolab/level2
    """
    from ..staff import autolab

    def work() -> None:
        lab = autolab.build_lab(exercise_dir, out, handin=handin, timeout=timeout, problem=problem)
        click.echo(f"wrote {lab.tarball} ({len(lab.members)} files), {lab.makefile}, {lab.image}/ and {lab.readme}")
        click.echo(f"in Autolab: problem {lab.problem!r}, handin {lab.handin}; see {lab.readme}")

    guard(work)


@click.command("gradebook")
@click.argument("batch_out", metavar="BATCH_OUT", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--roster", "roster", required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="The staff's roster CSV (for Canvas: the Canvas gradebook export).")
@click.option("--format", "fmt", type=click.Choice(["canvas", "moodle", "generic"]), required=True, help="The LMS to import into.")
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False, path_type=Path), help="The CSV to write.")
@click.option("--key", default=None, help="The roster column matched with each submission's id (or a Gradescope "
              "submitter's email or SID). Default: SIS Login ID (canvas), Email address (moodle), id (generic).")
@click.option("--assignment", default="", help="The grade column's title. Default: BATCH_OUT's folder name.")
@click.option("--assignment-id", default="", help="Canvas: the id of an existing assignment (its URL's last number).")
@click.option("--points", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Scale scores to this many points. Default: the exercise's maximum.")
def gradebook_cmd(batch_out: Path, roster: Path, fmt: str, out: Path, key: str | None, assignment: str, assignment_id: str,
                  points: float | None) -> None:
    """Export a finished `grade batch` folder as a gradebook CSV for Canvas, Moodle or a spreadsheet.

    Submissions are matched to roster rows by exact identity only (the --key column equals the
    submission's id, or a submitter's email or SID). Unmatched submissions, roster rows with no
    submission and ambiguous matches are listed on stderr and in OUT.problems.csv; their grade
    cells stay empty.

    \b
      grade gradebook grades/level2 --roster canvas_export.csv --format canvas --out level2_canvas.csv
      grade gradebook grades/level2 --roster roster.csv --format moodle --key "ID number" --out level2_moodle.csv
    """
    from ..staff import gradebook

    def work() -> None:
        result = gradebook.export(batch_out, roster, fmt, out, key=key, assignment=assignment, assignment_id=assignment_id,
                                  points=points)
        for line in gradebook.problem_lines(result):
            click.echo(line, err=True)
        click.echo(f"wrote {result.path}: {result.rows} row(s), {result.graded} with a grade; "
                   f"{len(result.problems)} problem(s) listed in {result.problems_path}")

    guard(work)


@click.command("student")
@_EXERCISE
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder to write the bundle in; the files go in OUT/<exercise id>/.")
@click.option("--pip-source", default=None,
              help="What the notebook's install cell pip-installs the grader from: a wheel URL, a git+https URL, "
                   "a PyPI name. Default: a placeholder URL you must replace (build the wheel with `pip wheel --no-deps .`).")
def student_cmd(exercise_dir: Path, out: Path, pip_source: str | None) -> None:
    """Write the student bundle for EXERCISE: README.md, skeleton.cu, spec.toml, harness.py and a Colab notebook.

    For a Python exercise: README.md, skeleton.py, checks.py, its public modules, spec.toml and a
    notebook with a TODO cell and a check cell per function (docs/python-exercises.md).

    Nothing secret goes in: the hidden cases and [hidden_tests] are removed from spec.toml, and
    neither the exercise's tests/ folder nor anything from reference/ is copied. Without the
    reference solution, the student's local performance check is listed as not run; traffic and bank
    conflicts are graded against the reference's counters, measured on the emulator and shipped as
    numbers (reference_counters.json).

    \b
      grade student exercises/level2 --out handout --pip-source https://course.example.edu/kernel_grader-0.1.0-py3-none-any.whl
      cd handout/level2 && grade . skeleton.cu
    """
    from ..staff import student_bundle as student

    def work() -> None:
        source = pip_source or student.PLACEHOLDER_PIP_SOURCE
        exercise = exercise_module.load(exercise_dir)
        bundle = kind_of(exercise).student_bundle(exercise, Path(out), source)
        click.echo(f"wrote {bundle.folder}/: " + ", ".join(p.name for p in bundle.files))
        if pip_source is None and source in bundle.notebook.read_text(encoding="utf-8"):
            click.echo(f"note: the notebook installs the grader from a placeholder ({source}); "
                       "pass --pip-source with where you host the wheel", err=True)

    guard(work)
