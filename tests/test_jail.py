"""The jail (grader/run/jail), attacked directly in every wall this machine allows.

Each attack runs as a jailed Python with no audit hook: only the kernel stands in its way. Where an
attack must fail, a control shows the same code succeeding outside the jail, so that a broken test
cannot pass by accident.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from grader.run.jail import layers as jail_layers
from grader.run.jail import uids, view as views
from grader.run.jail.launch import Cell, Jailed, Unavailable
from grader.run.jail.syscalls import SyscallPolicy

ROOT = Path(__file__).resolve().parent.parent


def walls_of(kind: str) -> jail_layers.Layers:
    walls = jail_layers._probe(kind == "landlock")
    if walls.namespaces != (kind == "namespaces") or not walls.kernel_wall:
        pytest.skip(f"no {kind} here: {walls.describe()}; {'; '.join(walls.missing)}")
    return walls


@pytest.fixture(params=["namespaces", "landlock"])
def walls(request) -> jail_layers.Layers:
    return walls_of(request.param)


def jailed(walls: jail_layers.Layers, code: str, *args: str, cell: Cell | None = None, timeout: float = 60) -> dict:
    """Run `code` in a jail; it prints one JSON object as its last line, which is returned."""
    with Jailed(cell or Cell(), walls) as jail:
        jail.write("attack.py", code)
        proc = jail.popen([jail.python, "-I", "-S", "-B", "attack.py", *args],
                          env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "OPENBLAS_NUM_THREADS": "1"})
        out, err = proc.communicate(timeout=timeout)
    lines = out.decode().strip().splitlines()
    assert lines, err.decode(errors="replace")[-2000:]
    return json.loads(lines[-1])


TRY = '''
import json, os, sys
seen = {}
def attempt(name, fn):
    try:
        seen[name] = ["ok", repr(fn())[:200]]
    except BaseException as exc:
        seen[name] = [type(exc).__name__, str(exc)[:200]]
'''


def test_it_cannot_unmount_remount_or_make_namespaces(walls):
    code = TRY + '''
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def call(result):
    if result != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return result
for target in ("/usr", "/proc", os.getcwd()):
    attempt("umount " + target, lambda t=target: call(libc.umount2(t.encode(), 2)))
attempt("mount tmpfs", lambda: call(libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)))
attempt("remount /usr rw", lambda: call(libc.mount(None, b"/usr", None, 32 | 4096, None)))  # MS_REMOUNT|MS_BIND
attempt("unshare user+mount", lambda: call(libc.unshare(0x10000000 | 0x00020000)))
attempt("chroot", lambda: call(libc.chroot(b"/tmp")))
print(json.dumps(seen))
'''
    seen = jailed(walls, code)
    assert all(outcome == "PermissionError" or outcome == "OSError" for outcome, _ in seen.values()), seen


def test_it_reads_nothing_outside(walls, tmp_path, monkeypatch):
    canary = tmp_path / "canary.txt"
    canary.write_text("the canary")
    monkeypatch.setenv("KERNEL_GRADER_SECRET", "canary-secret-7f3a")
    code = TRY + '''
for path in sys.argv[1:]:
    attempt(path, lambda p=path: open(p, "rb").read(200) if not os.path.isdir(p) else os.listdir(p))
attempt("ppid environ", lambda: open(f"/proc/{os.getppid()}/environ", "rb").read())
print(json.dumps(seen))
'''
    targets = [str(canary), "/etc/passwd", str(ROOT / "grader" / "api.py"), str(ROOT / ".git" / "HEAD"),
               str(ROOT / "exercises" / "lesson_numpy" / "tests"), str(ROOT / "reference" / "lesson_numpy" / "solution.py"),
               str(Path(views.__file__).resolve().parents[2]), f"/proc/{os.getpid()}/environ",
               f"/proc/{os.getpid()}/cmdline", "/tmp", str(Path.home())]
    seen = jailed(walls, code, *targets, cell=Cell(hidden=(ROOT,)))
    # Listed at most: the folders on the way to the interpreter's prefix (namespaces make them to bind it).
    way = {p.name for p in Path(views.interpreter()).parents}
    for target in targets:
        outcome, value = seen[target]
        shown = set(json.loads(value.replace("'", '"'))) if outcome == "ok" and value.startswith("[") else None
        assert outcome in ("FileNotFoundError", "PermissionError") or (shown is not None and shown <= way), (target, seen[target])
    assert "canary-secret" not in json.dumps(seen)
    # Control: outside the jail the same reads succeed.
    assert canary.read_text() == "the canary" and Path("/etc/passwd").exists()


def test_it_writes_nothing_outside(walls, tmp_path):
    results = tmp_path / "results.json"
    results.write_text('{"score": 0}')
    numpy_init = Path(__import__("numpy").__file__)
    stdlib = Path(os.__file__).parent
    code = TRY + '''
for path in sys.argv[1:]:
    attempt(path, lambda p=path: open(p, "a").write("# planted\\n"))
attempt("rename into its folder", lambda: os.rename(sys.argv[1], "stolen.json"))
attempt("own folder", lambda: open("mine.txt", "w").write("fine"))
print(json.dumps(seen))
'''
    targets = [str(results), str(numpy_init), str(stdlib / "os.py"), str(ROOT / "grader" / "__init__.py"), "/usr/lib/planted.py"]
    before = {t: Path(t).read_bytes() for t in targets if Path(t).exists()}
    seen = jailed(walls, code, *targets, cell=Cell(hidden=(ROOT,)))
    for target in targets:
        assert seen[target][0] in ("PermissionError", "OSError", "FileNotFoundError"), (target, seen[target])
    assert seen["rename into its folder"][0] != "ok" and seen["own folder"][0] == "ok", seen
    assert {t: Path(t).read_bytes() for t in before} == before
    assert not Path("/usr/lib/planted.py").exists()


def test_it_cannot_signal_trace_or_kill_the_grader(walls):
    code = TRY + '''
import ctypes, signal
grader = int(sys.argv[1])
attempt("kill grader", lambda: os.kill(grader, signal.SIGKILL))
attempt("kill -1", lambda: os.kill(-1, signal.SIGKILL))
attempt("killpg", lambda: os.killpg(os.getpgid(0), signal.SIGKILL))
libc = ctypes.CDLL(None, use_errno=True)
def ptrace():
    if libc.ptrace(16, grader, None, None) != 0:  # PTRACE_ATTACH
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
attempt("ptrace grader", ptrace)
print(json.dumps(seen))
'''
    seen = jailed(walls, code, str(os.getpid()))
    assert all(outcome in ("PermissionError", "ProcessLookupError", "OSError") for outcome, _ in seen.values()), seen
    assert os.getpid() > 0  # still here


def test_no_connection_reaches_a_live_loopback_listener(walls):
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    code = TRY + '''
import socket
port = int(sys.argv[1])
attempt("tcp", lambda: socket.create_connection(("127.0.0.1", port), timeout=3).close())
attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", port)))
attempt("unix", lambda: socket.socket(socket.AF_UNIX).connect("/run/systemd/private"))
attempt("netlink", lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0))
print(json.dumps(seen))
'''
    # Layer by layer: with the seccomp filter (no socket at all) and without it (the network namespace,
    # or Landlock, which covers TCP only: UDP is seccomp's to refuse).
    for w in (walls, replace(walls, seccomp=False)):
        seen = jailed(w, code, str(port))
        assert seen["tcp"][0] != "ok" and seen["unix"][0] != "ok", (w.describe(), seen)
        if w.seccomp:
            assert all(outcome == "PermissionError" for outcome, _ in seen.values()), (w.describe(), seen)
        with pytest.raises(OSError):
            listener.accept()
    # Control: the listener is live.
    socket.create_connection(("127.0.0.1", port), timeout=3).close()
    listener.accept()[0].close()
    listener.close()


def test_no_process_or_thread_starts_under_the_python_policy(walls):
    code = TRY + '''
import threading
attempt("fork", os.fork)
attempt("thread", lambda: threading.Thread(target=print).start())
attempt("posix_spawn", lambda: os.posix_spawn("/bin/true", ["true"], {}))
print(json.dumps(seen))
'''
    seen = jailed(walls, code, cell=Cell(syscalls=SyscallPolicy()))
    assert [seen[k][0] for k in ("fork", "thread", "posix_spawn")] == ["PermissionError", "RuntimeError", "PermissionError"], seen


DAEMON = '''
import json, os, sys, time
marker = sys.argv[1]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open("daemon.pid", "w") as f:
            f.write(str(os.getpid()))
        os.execv("/bin/sleep", [marker, "300"])  # the marker as its name, to find it by
    os._exit(0)
for _ in range(100):
    if os.path.exists("daemon.pid") and open("daemon.pid").read():
        break
    time.sleep(0.05)
time.sleep(0.2)
os.kill(int(open("daemon.pid").read()), 0)  # alive (raises if not)
print(json.dumps({"started": True}))
'''


def _with_marker(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def test_a_daemon_dies_with_the_jail_where_processes_are_allowed(walls, tmp_path):
    """The Triton kind will let a process start others (a compiler): a double-forked, setsid daemon
    still ends with the jail. Control: the same code outside the jail leaves it running."""
    marker = f"kg-daemon-{os.getpid()}-{time.monotonic_ns()}"
    cell = Cell(packages=(), syscalls=SyscallPolicy(processes=True, threads=True, signals=True))
    if not walls.namespaces and not walls.sandbox_uid:  # nothing could find the daemon: the jail refuses
        with pytest.raises(Unavailable, match="needs namespaces"):
            jailed(walls, DAEMON, marker, cell=cell)
        return
    with Jailed(cell, walls) as jail:  # not jailed(): the daemon holds stdout open until the jail ends
        jail.write("attack.py", DAEMON)
        proc = jail.popen([jail.python, "-I", "-S", "-B", "attack.py", marker], env={"PATH": "/usr/bin:/bin"})
        assert json.loads(proc.stdout.readline()) == {"started": True}  # the daemon was running then
        proc.wait(timeout=30)
    for _ in range(50):
        if not _with_marker(marker):
            break
        time.sleep(0.1)
    assert not _with_marker(marker), "a daemon outlived its jail"
    control = subprocess.run([sys.executable, "-c", DAEMON, marker + "-control"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, timeout=30, start_new_session=True, cwd=tmp_path)
    assert control.returncode == 0
    try:
        assert _with_marker(marker + "-control"), "the control daemon did not start: the test proves nothing"
    finally:
        for pid in _with_marker(marker + "-control"):
            os.kill(pid, signal.SIGKILL)


def test_landlock_rules_grant_around_what_is_covered(tmp_path):
    """A root holding a site-packages folder and a hidden one is granted entry by entry around them."""
    root = tmp_path / "prefix"
    (root / "lib" / "site-packages" / "grader").mkdir(parents=True)
    (root / "lib" / "os.py").write_text("")
    (root / "secret").mkdir()
    (root / "bin").mkdir()
    v = views.View(roots=(root,), files=(), site_folders=(root / "lib" / "site-packages",), hidden=(root / "secret",),
                   packages=())
    rules = dict(views.landlock_rules(v))
    assert str(root / "bin") in rules and str(root / "lib" / "os.py") in rules
    assert str(root / "secret") not in rules and str(root / "lib" / "site-packages") not in rules
    assert not any(p.startswith(str(root / "lib" / "site-packages") + "/") for p in rules)
    assert rules.get(str(root)) is None  # the folder holding a hidden one: not even its names
    assert str(root / "lib") in rules  # names only: the import system lists the folders it searches
    args = views.bwrap_arguments(v)
    assert ["--tmpfs", str(root / "secret")] == args[args.index("--tmpfs"):][:2] or str(root / "secret") in args


@pytest.mark.skipif(os.geteuid() != 0, reason="sandbox uids are leased only where the grader is root")
def test_sandbox_uids_are_never_shared_and_kill_all_ends_a_uids_processes():
    first, second = uids.lease(), uids.lease()
    try:
        assert first and second and first.uid != second.uid
        sleeper = subprocess.Popen(["sleep", "300"], user=first.uid, group=first.gid, extra_groups=[])
        uids.kill_all(first.uid)
        assert sleeper.wait(timeout=10) == -signal.SIGKILL
    finally:
        for lease in (first, second):
            if lease:
                lease.release()
    again = uids.lease()
    assert again is not None
    again.release()


def test_the_probe_says_which_walls_and_why_others_are_missing():
    walls = jail_layers.current()
    text = walls.describe()
    assert text and (walls.kernel_wall or "no kernel sandbox" in text)
    cached = json.loads(os.environ[jail_layers.CACHE_VARIABLE])
    assert cached["namespaces"] == walls.namespaces  # the grader's own children read it, not probe again


def test_under_a_filter_like_dockers_default_profile_the_jail_falls_back_to_landlock(tmp_path):
    """Docker's default seccomp profile refuses unshare, setns, mount, namespace flags on clone and
    clone3 (without CAP_SYS_ADMIN), as a Gradescope image may run. Under a filter that refuses the same,
    bubblewrap cannot start, the jail picks Landlock, and the reference still gets full marks."""
    import errno

    from grader.run.jail import confine, syscalls

    if not jail_layers._probe(True).kernel_wall:
        pytest.skip("no Landlock here")
    sc = syscalls._seccomp()
    f = sc.SyscallFilter(sc.ALLOW)
    for name in ("unshare", "setns", "mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen"):
        f.add_rule(sc.ERRNO(errno.EPERM), name)
    for flag in syscalls.NAMESPACE_FLAGS:
        f.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    bpf = tmp_path / "docker-like.bpf"
    with open(bpf, "wb") as out:
        f.export_bpf(out)
    fd = os.open(bpf, os.O_RDONLY)
    results = tmp_path / "results.json"
    env = {k: v for k, v in os.environ.items() if k not in (jail_layers.CACHE_VARIABLE, jail_layers.NO_NAMESPACES_VARIABLE)}
    config = {"argv": [sys.executable, "-m", "grader", "exercises/lesson_numpy", "reference/lesson_numpy/solution.py",
                       "--json", str(results)], "env": env, "seccomp_fd": fd, "cwd": str(ROOT)}
    try:
        proc = subprocess.run([sys.executable, "-I", "-S", "-B", confine.__file__, json.dumps(config)], pass_fds=(fd,),
                              capture_output=True, text=True, timeout=300, cwd=ROOT)
    finally:
        os.close(fd)
    assert proc.returncode == 0, proc.stderr[-2000:]
    document = json.loads(results.read_text())
    assert document["score"] == 100 and "Landlock" in document["extra_data"]["device"], document["extra_data"]["device"]


def test_the_doctor_says_plainly_when_there_is_no_kernel_sandbox(monkeypatch):
    from grader import doctor

    monkeypatch.setattr(jail_layers, "current", lambda: jail_layers.Layers(missing=("no Landlock: this kernel has none",)))
    finding = doctor._sandbox()
    assert not finding.present and "could read the hidden tests" in finding.detail and "no Landlock" in finding.detail
    monkeypatch.setattr(jail_layers, "current", lambda: jail_layers.Layers(namespaces=True, seccomp=True))
    assert doctor._sandbox().present and "walled in by the kernel" in doctor._sandbox().detail


def test_it_changes_no_attributes_no_limits_of_others_and_leaves_no_ipc(walls, tmp_path):
    """What neither namespaces nor Landlock cover: modes, owners and times of files it can name (its
    bound /dev nodes; under Landlock as uid 0, any root-owned file), the grader's rlimits, System V IPC.
    (Without the seccomp rules for them, this test changed /dev/full and set pytest's open-file limit to 3.)"""
    target = tmp_path / "course-file.txt"
    target.write_text("x")
    target.chmod(0o644)
    before = {p: os.stat(p) for p in (str(target), "/dev/full")}
    grader_limit = __import__("resource").getrlimit(__import__("resource").RLIMIT_NOFILE)
    code = TRY + '''
import ctypes, resource
for path in sys.argv[2:]:
    attempt("chmod " + path, lambda p=path: os.chmod(p, 0o777))
    attempt("utime " + path, lambda p=path: os.utime(p, (0, 0)))
    attempt("chown " + path, lambda p=path: os.chown(p, 1, 1))
attempt("prlimit grader", lambda: resource.prlimit(int(sys.argv[1]), resource.RLIMIT_NOFILE, (3, 3)))
attempt("own limit", lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)))
libc = ctypes.CDLL(None, use_errno=True)
def shm():
    if libc.shmget(0x4B47, 4096, 0o1000 | 0o666) < 0:  # IPC_CREAT
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
attempt("shmget", shm)
print(json.dumps(seen))
'''
    try:
        seen = jailed(walls, code, str(os.getpid()), *before)
    finally:  # where the wall failed, the machine's /dev/full is put back as it was
        full = before["/dev/full"]
        os.chmod("/dev/full", full.st_mode & 0o7777)
        os.utime("/dev/full", ns=(full.st_atime_ns, full.st_mtime_ns))
    assert all(seen[k][0] != "ok" for k in seen if k.split()[0] in ("chmod", "utime", "chown")), seen
    assert seen["prlimit grader"][0] != "ok" and seen["own limit"][0] == "ok" and seen["shmget"][0] != "ok", seen
    after = {p: os.stat(p) for p in before}
    assert all((after[p].st_mode, after[p].st_uid, after[p].st_mtime) == (before[p].st_mode, before[p].st_uid,
               before[p].st_mtime) for p in before)
    assert __import__("resource").getrlimit(__import__("resource").RLIMIT_NOFILE) == grader_limit
