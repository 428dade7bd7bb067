"""`grade batch`: grade a whole class, resumably, in parallel, one child process per submission.

Input: a folder of .cu files or Colab notebooks (.ipynb), a folder of per-student folders, or a
zip of either (a Gradescope "export submissions" zip included). Output, in DIR:

    results/<student>.json   the results document of each student (as `grade --json` writes it,
                             plus extra_data.batch: status, input fingerprint, ...)
    grades.csv               rebuilt from results/*.json at the end: header, max points, one row per student
    summary.txt, summary.json  score histogram, most failed checks, identical submissions

Each results file is written atomically as its grading finishes. Re-running the same command
skips every student whose results file exists and whose submission (and exercise) is unchanged,
so an interrupted batch resumes where it stopped; grades.csv only exists for a complete batch.

Its parts, each a module here, in the order a batch uses them:

    intake     anything a course hands in (folders, zips, Gradescope exports) -> entries
    plan       the options, the slots of a local batch, the time limit of one submission
    executor   the Executor interface: where the gradings run, and the values that cross it
    local      LocalExecutor: child processes on this machine, with warm slots (the default)
    ray        RayExecutor: a Ray cluster (`--ray`; imported only then)
    record     results files and resume, the gradebook and the summary: every executor writes
               through record.record(), so the output and its resume are the same whichever ran
    run        run_batch(): the steps above in order, then the pages

An executor for another kind of cluster is one more module beside local and ray.
"""
from .executor import Outcome
from .plan import Options
from .record import CSV_NAME, RESULTS
from .run import BatchResult, run_batch

__all__ = ["CSV_NAME", "RESULTS", "BatchResult", "Options", "Outcome", "run_batch"]
