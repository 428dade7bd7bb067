"""bench/ncu_launch_cost.py against a stand-in ncu that prints canned output: each variant's command
line reaches ncu as documented, and the table reads the passes and backed-up bytes from the log."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Records its argv, writes a canned log where --log-file says, and runs no target: the passes as the
# profiler__replayer_passes column where that metric was asked for, else as ncu's progress line.
FAKE_NCU = r'''#!{python}
import json, sys
args = sys.argv[1:]
with open({calls!r}, "a") as f:
    f.write(json.dumps(args) + "\n")
metrics = args[args.index("--metrics") + 1].split(",")
with open(args[args.index("--log-file") + 1], "w") as f:
    if "profiler__replayer_passes" in metrics:
        f.write('"ID","Kernel Name","profiler__replayer_passes","profiler__replayer_bytes_mem_backed_up.sum"\n')
        f.write('"","","pass","byte"\n')
        f.write('"0","matmul_tiled","9","12,000,000"\n"1","matmul_tiled","8","12,000,000"\n')
    else:
        f.write('==PROF== Profiling "matmul_tiled" - 0: 0%....50%....100% - 7 passes\n')
'''


def _script():
    spec = importlib.util.spec_from_file_location("ncu_launch_cost", ROOT / "bench" / "ncu_launch_cost.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("ncu_launch_cost", module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_variants_reach_ncu_and_the_table_reads_its_log(tmp_path, capsys):
    calls = tmp_path / "calls.jsonl"
    ncu = tmp_path / "ncu"
    ncu.write_text(FAKE_NCU.format(python=sys.executable, calls=str(calls)))
    ncu.chmod(0o755)
    names = ["grader", "passes", "one-metric", "no-atomics", "cache-none", "half-size", "replay-application"]
    assert _script().main(["--ncu", str(ncu), "--jobs", "1", "--variants", ",".join(names)]) == 0
    argvs = dict(zip(names, (json.loads(line) for line in calls.read_text().splitlines())))
    for name, argv in argvs.items():
        target = argv.index("-m")  # ncu's options all come before the runner's argv
        assert argv[target + 1] == "grader.run.child.runner"
        assert ("profiler__replayer_passes" in argv[argv.index("--metrics") + 1]) == (name != "grader")
    assert argvs["cache-none"].index("none") < argvs["cache-none"].index("-m")
    assert argvs["cache-none"][argvs["cache-none"].index("--cache-control") + 1] == "none"
    assert argvs["replay-application"][argvs["replay-application"].index("--replay-mode") + 1] == "application"
    assert "--cache-control" not in argvs["grader"] and "--replay-mode" not in argvs["grader"]
    assert len(argvs["one-metric"][argvs["one-metric"].index("--metrics") + 1].split(",")) == 3
    # The grader's set for atomic-free modules: load and store sectors and requests, and the pass metrics.
    no_atomics = argvs["no-atomics"][argvs["no-atomics"].index("--metrics") + 1].split(",")
    grader = argvs["grader"][argvs["grader"].index("--metrics") + 1].split(",")
    assert len(grader) == 8 and [m for m in no_atomics if m in grader] == [m for m in grader if "atom" not in m and "red" not in m]
    assert len(no_atomics) == 4 + 2 and not any("_op_atom" in m or "_op_red" in m for m in no_atomics)
    rows = {line.split(" | ")[0].lstrip("| "): line for line in capsys.readouterr().out.splitlines()
            if line.startswith("| ") and not line.startswith(("| variant", "| ---"))}
    assert set(rows) == set(names)
    assert "| 7 | - |" in rows["grader"]  # the progress line's passes
    assert "| 8-9 | 12,000,000 |" in rows["passes"]
    assert "| N = 500 |" in rows["half-size"] and "| N = 1000 |" in rows["grader"]


def test_an_unknown_variant_is_refused(tmp_path):
    import pytest

    with pytest.raises(SystemExit):
        _script().main(["--ncu", str(tmp_path / "ncu"), "--variants", "grader,warp-speed"])
