"""Nsight Compute and compute-sanitizer: finding them, wrapping a child with them, reading their output."""
from __future__ import annotations

import csv
import io
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from .run import gpu_lock

_SEARCH = ("/usr/local/cuda/bin", "/opt/nvidia/nsight-compute", "/usr/local/cuda/nsight-compute")
# The counters `grade profile` prints and the reports show per source line (Nsight Compute's names).
PROFILE_METRICS = (
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
    "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",
    "smsp__inst_executed_op_shared_atom.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum",
)
SANITIZER_EXIT = 86  # --error-exitcode: without it compute-sanitizer exits 0 after reporting a race


@dataclass(frozen=True)
class Tools:
    """Paths of the external tools found on this machine (None when absent)."""

    ncu: str | None = None
    sanitizer: str | None = None


def find_tools(env: Mapping[str, str] | None = None) -> Tools:
    """Look for ncu and compute-sanitizer on PATH and in the usual CUDA folders."""
    env = env if env is not None else os.environ
    return Tools(ncu=_which("ncu", env), sanitizer=_which("compute-sanitizer", env))


def _which(name: str, env: Mapping[str, str]) -> str | None:
    found = shutil.which(name, path=env.get("PATH"))
    if found:
        return found
    for folder in _SEARCH:
        candidate = Path(folder) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def ncu_wrapper(ncu: str, metrics: Sequence[str], kernel: str | Sequence[str]) -> list[str]:
    """argv prefix: profile every launch of `kernel` (or of each of several kernels), cache-blind
    counters, CSV into {log}."""
    names = [kernel] if isinstance(kernel, str) else list(kernel)
    pattern = "|".join(re.escape(n) for n in names)
    return [ncu, "--clock-control", "none", "--csv", "--page", "raw", "--disable-extra-suffixes",
            "--metrics", ",".join(metrics), "-k", f"regex:^({pattern})$", "--log-file", "{log}"]


def sum_rows(rows: Sequence[Mapping[str, float]], per_group: int) -> list[dict[str, float]]:
    """ncu's rows, one per profiled kernel launch, summed in consecutive groups of `per_group` (the
    kernels of one launch of an exercise's chain)."""
    out = []
    for i in range(0, len(rows) - per_group + 1, per_group):
        group: dict[str, float] = {}
        for row in rows[i:i + per_group]:
            for key, value in row.items():
                group[key] = group.get(key, 0.0) + value
        out.append(group)
    return out


def file_name_part(text: str, empty: str) -> str:
    """`text` (a GPU's name for CUDA_VISIBLE_DEVICES, say) fit to be part of a file name: letters,
    digits, '-', '_' and '.' kept, anything else '_'; `empty` for an empty text."""
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text) or empty


def ncu_env(gpu: str | None = None) -> dict[str, str]:
    """What an ncu run needs over the grading's environment: one temp folder shared by every ncu run
    on one GPU (`gpu`, a CUDA_VISIBLE_DEVICES value; by default this process's first visible device).

    ncu keeps its lock against other ncu runs in the temp folder. Each grading's children get a
    TMPDIR of their own, so two gradings' ncu runs did not see each other: on an H200 one of two
    overlapping runs on one GPU exited with status 9 (bench/ncu_startup.sh; sharing one folder, both
    finished). That lock profiles one kernel at a time across all ncu runs sharing the folder, while
    each run's start-up overlaps the others'; the grader adds no turns of its own (in a batch of 100
    on an H200, turns that also covered ncu's start-up cost 4.5 s per grading). The conflict is one
    GPU's, so each GPU has its own folder and two GPUs' runs do not wait for each other's lock
    (whether the driver then profiles on both at once, bench/ncu_startup.sh measures on two GPUs).
    """
    if gpu is None:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
        gpu = visible or "0"  # nothing said: device 0, as CUDA counts them
    folder = gpu_lock.lock_folder() / f"ncu-tmp-{file_name_part(gpu, empty='0')}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return {}  # no shared folder: ncu falls back to the grading's own TMPDIR
    return {"TMPDIR": str(folder)}


def sanitizer_wrapper(sanitizer: str, tool: str) -> list[str]:
    """argv prefix for one compute-sanitizer tool, failing the child when it reports anything."""
    return [sanitizer, "--tool", tool, "--error-exitcode", str(SANITIZER_EXIT), "--print-limit", "20",
            "--log-file", "{log}"]


@dataclass(frozen=True)
class NcuRows:
    """Profiled launches in order, each a metric -> value mapping; `missing` lists metrics ncu did not report."""

    rows: tuple[Mapping[str, float], ...]
    missing: tuple[str, ...]


def parse_ncu_csv(text: str, metrics: Sequence[str]) -> NcuRows:
    """Parse `ncu --csv --page raw` output: a header, a units row, one row per launch; strip thousands separators."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    if not lines:
        return NcuRows((), tuple(metrics))
    reader = list(csv.reader(io.StringIO("\n".join(lines))))
    header = reader[0]
    missing = tuple(m for m in metrics if m not in header)  # ncu silently drops names it does not know
    rows = []
    for row in reader[1:]:
        if len(row) != len(header) or (row and row[0] == ""):
            continue  # the units row has an empty ID
        values = {}
        for m in metrics:
            if m in header:
                cell = row[header.index(m)].replace(",", "").strip()
                try:
                    values[m] = float(cell)
                except ValueError:
                    values[m] = float("nan")
        rows.append(values)
    return NcuRows(tuple(rows), missing)


@dataclass(frozen=True)
class SanitizerReport:
    """compute-sanitizer's verdict: the error count it summarised and the first report lines."""

    errors: int
    lines: tuple[str, ...]


def parse_sanitizer(text: str) -> SanitizerReport:
    """Read the ERROR SUMMARY count and the first interesting lines of a sanitizer log."""
    count = 0
    summary = re.search(r"ERROR SUMMARY:\s*([\d,]+)\s+error", text)
    if summary:
        count = int(summary.group(1).replace(",", ""))
    keep = []
    for line in text.splitlines():
        body = line.lstrip("= ").rstrip()
        if not body or body.startswith(("COMPUTE-SANITIZER", "ERROR SUMMARY", "Saved host backtrace", "Host Frame")):
            continue
        if re.match(r"^(Race reported|Invalid|Barrier error|Error|Uninitialized|Address|Warning|.*\.cu:\d+|at )", body):
            keep.append(body)
        if len(keep) >= 8:
            break
    return SanitizerReport(count, tuple(keep))
