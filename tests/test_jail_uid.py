"""The jail's sandbox uid, where the grader is root and another uid can run the interpreter.

Also the last resort on a kernel with neither namespaces nor Landlock: the uid alone keeps a root-only
file shut (what the Gradescope bundle's run_autograder makes of the course's files).

The grader's own Python here may live where no other uid can go (a root-only /root/.pyenv), so this
test drives the jail from the system's Python (/usr/bin/python3 with Debian's python3-numpy, which
.ci/run installs) in a child process, and skips where there is none. In both walls: the jail runs as
a uid of its own; it cannot signal the grader or read a root-only file even with the seccomp filter
off; a fork bomb stops at RLIMIT_NPROC; a setsid daemon is killed with the uid when the jail ends.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SYSTEM_PYTHON = "/usr/bin/python3"

SCRIPT = r'''
import json, os, sys, time
from dataclasses import replace
from pathlib import Path
from grader.run.jail import layers
from grader.run.jail.launch import Cell, Jailed
from grader.run.jail.syscalls import SyscallPolicy

secret, no_ns = sys.argv[1], sys.argv[2] != "namespaces"
if sys.argv[2] == "uid only":  # as on a kernel without Landlock
    from grader.run.jail import confine
    confine.landlock_abi = lambda: 0
walls = layers._probe(no_ns)
out = {"walls": walls.describe(), "uid": walls.sandbox_uid, "namespaces": walls.namespaces}
ATTACK = """
import json, os, signal, sys, time
seen = {"uid": os.getuid()}
def attempt(name, fn):
    try:
        seen[name] = ["ok", repr(fn())[:100]]
    except BaseException as exc:
        seen[name] = [type(exc).__name__, str(exc)[:100]]
attempt("kill grader", lambda: os.kill(int(sys.argv[1]), signal.SIGKILL))
attempt("read secret", lambda: open(sys.argv[2]).read())
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv("/bin/sleep", [sys.argv[3], "300"])
    os._exit(0)
children = 0
try:
    for _ in range(200):
        if os.fork() == 0:
            time.sleep(5)
            os._exit(0)
        children += 1
except OSError as exc:
    seen["fork bomb"] = [type(exc).__name__, children]
else:
    seen["fork bomb"] = ["ok", children]
print(json.dumps(seen))
"""
marker = f"kg-uid-daemon-{os.getpid()}"
cell = Cell(packages=("numpy",), syscalls=SyscallPolicy(processes=True, threads=True, signals=True), processes_limit=32)
with Jailed(cell, replace(walls, seccomp=False)) as jail:  # the uid and the wall alone: no seccomp
    out["leased"] = jail.lease.uid if jail.lease else None
    jail.write("attack.py", ATTACK)
    proc = jail.popen([jail.python, "-I", "-S", "-B", "attack.py", str(os.getppid()), secret, marker],
                      env={"PATH": "/usr/bin:/bin", "OPENBLAS_NUM_THREADS": "1"})
    line = proc.stdout.readline()
    out["seen"] = json.loads(line) if line.strip() else proc.stderr.read().decode()[-500:]
time.sleep(0.5)
alive = []
for entry in Path("/proc").iterdir():
    try:
        if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
            alive.append(int(entry.name))
    except OSError:
        pass
out["survivors"] = alive
print(json.dumps(out))
'''


def _system_python_with_numpy() -> bool:
    if not os.path.exists(SYSTEM_PYTHON):
        return False
    return subprocess.run([SYSTEM_PYTHON, "-c", "import numpy"], capture_output=True).returncode == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="sandbox uids are leased only where the grader is root")
@pytest.mark.skipif(not _system_python_with_numpy(), reason="no /usr/bin/python3 with NumPy (apt-get install python3-numpy)")
@pytest.mark.parametrize("wall", ["namespaces", "landlock", "uid only"])
def test_a_sandbox_uid_cannot_signal_read_bomb_or_leave_a_daemon(wall, tmp_path):
    import pyseccomp

    lib = tmp_path / "lib"  # only the binding travels to the system's Python: a folder any uid can read
    lib.mkdir()
    shutil.copy(pyseccomp.__file__, lib / "pyseccomp.py")
    tmp_path.chmod(0o755)
    secret = tmp_path / "root-only.txt"
    secret.write_text("only root reads this")
    secret.chmod(0o600)
    private = tmp_path / "grading-tmp"  # a grading's own TMPDIR is a 0700 folder of root's, as a batch's are
    private.mkdir(mode=0o700)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{ROOT}:{lib}", "LANG": "C.UTF-8", "TMPDIR": str(private)}
    if wall == "namespaces" and not shutil.which("bwrap"):
        pytest.skip("no bubblewrap")
    proc = subprocess.run([SYSTEM_PYTHON, "-c", SCRIPT, str(secret), wall], capture_output=True, text=True,
                          timeout=120, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["uid"] and out["namespaces"] == (wall == "namespaces"), out
    if wall == "uid only":
        assert out["walls"].startswith("a sandbox uid and seccomp only"), out
    seen = out["seen"]
    assert isinstance(seen, dict), seen
    if wall != "namespaces":  # no user namespace: the process's uid is the leased one itself
        assert seen["uid"] == out["leased"], out
    assert seen["kill grader"][0] in ("PermissionError", "ProcessLookupError"), seen
    assert seen["read secret"][0] in ("PermissionError", "FileNotFoundError"), seen
    assert seen["fork bomb"][0] == "BlockingIOError" and seen["fork bomb"][1] < 40, seen  # RLIMIT_NPROC = 32
    assert out["survivors"] == [], out
