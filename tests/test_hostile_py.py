"""The Python hostile corpus (tests/hostile_py/): malicious lesson_numpy submissions, each a clear failing verdict.

Every case is graded against a copy of exercises/lesson_numpy (and its reference) whose limits are
lowered so that endless loops and floods end in seconds, once with bubblewrap's namespaces and once
as on a machine that refuses them (Landlock). For every case: a schema-valid results JSON within
the time bound, the functions expected.toml names failed with words a student can act on, every
other function passed, and nothing of the reference, the hidden tests, /etc/passwd or the course's
secret in any output; no process left that carries the case's marker, no connection to the live
listeners carrying it; the cases where luck could matter graded twice, to the same score.

For each isolation as a whole (test_walls_held): nothing written outside (the course copy, the
installed grader package, NumPy's folder, the site-packages folder's own files, the device files
a jail sees), the grader's own process as it was (its limits, priority, CPUs), no sentinel file in
/tmp, no process with any case's marker, no connection at all, no jail folder left behind, no
System V IPC object or POSIX message queue made during the grading left on the machine.

Placeholders in a case's text, filled in before grading (in each code cell's text, for a notebook):
@SOLUTION@, @SKELETON@ (the reference solution's and the skeleton's text), @UNHOOK@ (unhook.snippet:
switches the worker's audit hook off), @ROOT@ (the course copy), @CHECKOUT@ (this checkout),
@GRADER@ (the installed grader package's folder), @NUMPY@ (NumPy's folder), @PORT@ and @UDP_PORT@
(live listeners on 127.0.0.1), @UNIX_SOCKET@ (a listening AF_UNIX socket's path), @ABSTRACT_SOCKET@
(an abstract one's name, without the leading NUL), @MARKER@ (kg-hostile-<case>: what the case puts
into the argv or environment of anything it starts, so that a survivor can be found).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import resource
import select
import shutil
import socket
import stat
import subprocess
import tempfile
import threading
import time
import traceback
import uuid
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy
import pytest

import grader
from grader import api, results
from grader.exercise import load
from grader.pyexercise.sandbox import namespaces_available
from grader.pyexercise.student_bundle import hidden_material_in
from grader.spec import tomllib

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "hostile_py"
EXPECTED = tomllib.loads((CORPUS / "expected.toml").read_text(encoding="utf-8"))
UNHOOK = (CORPUS / "unhook.snippet").read_text(encoding="utf-8")
RUN_SECONDS = 12
CALL_SECONDS = 3
BOUND_SECONDS = 2 * RUN_SECONDS + 30  # the public checks' child, then the hidden tests' (side by side), and start-up
SENTINELS = ("/tmp/kernel-grader-hostile-shell", "/tmp/kernel-grader-hostile-forked",
             "/tmp/kernel-grader-hostile-written", "/tmp/kernel-grader-hostile-daemon")
MARKER = "kg-hostile-"
# Graded twice (the second time after all the others): where threads, forged replies or a race could
# make the score depend on luck.
TWICE = ("forges_replies.py", "forges_replies_right_id.py", "starts_threads.py", "unhooked_starts_threads.py")
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")
# The installed grader package is this checkout, which people may be editing while the test runs: there
# a change counts when it is of mode or owner, or when the new text carries the corpus's mark
# ("kg-hostile", in everything the corpus writes). Everywhere else, any change counts.
LIVE = Path(grader.__file__).resolve().parent
SECRET_VARIABLE = api.SECRET_VARIABLE
CANARY = f"kg-canary-{uuid.uuid4().hex}"


def marker(name: str) -> str:
    return MARKER + Path(name).stem.replace("_", "-")


# ---------------------------------------------------------------------------------------------
# What the harness watches

class Listeners:
    """Live listeners a hostile case aims at: TCP and UDP on 127.0.0.1, an AF_UNIX socket by path and
    an abstract one. Whatever reaches them is kept in `heard` (with what it sent first)."""

    def __init__(self, folder: Path):
        self.heard: list[tuple[str, str, bytes]] = []
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.bind(("127.0.0.1", 0))
        self.tcp.listen(64)
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.unix_path = str(folder / "listener.sock")
        self.unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.unix.bind(self.unix_path)
        os.chmod(self.unix_path, 0o777)
        self.unix.listen(64)
        self.abstract_name = f"kg-hostile-listener-{uuid.uuid4().hex[:12]}"
        self.abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.abstract.bind("\0" + self.abstract_name)
        self.abstract.listen(64)
        self.port, self.udp_port = self.tcp.getsockname()[1], self.udp.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._listen, daemon=True)
        self._thread.start()

    def _listen(self) -> None:
        streams = {self.tcp: "tcp", self.unix: "unix", self.abstract: "abstract"}
        while not self._stop.is_set():
            ready, _, _ = select.select([*streams, self.udp], [], [], 0.2)
            for sock in ready:
                try:
                    if sock is self.udp:
                        data, peer = self.udp.recvfrom(65536)
                        self.heard.append(("udp", str(peer), data[:200]))
                        continue
                    conn, peer = sock.accept()
                    conn.settimeout(1.0)
                    try:
                        data = conn.recv(4096)
                    except OSError:
                        data = b""
                    conn.close()
                    self.heard.append((streams[sock], str(peer), data[:200]))
                except OSError:
                    pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        for sock in (self.tcp, self.udp, self.unix, self.abstract):
            sock.close()
        Path(self.unix_path).unlink(missing_ok=True)


def fingerprint(roots: list[Path]) -> dict[str, tuple]:
    """Every file and folder under the roots (mode, owner, ctime; for a file its size, mtime and
    content), every file of site-packages itself (a .pth or sitecustomize planted there would run in
    the grader), and each device file a jail sees (mode, owner, ctime: a chmod, chown, utime or
    xattr shows). Compiled bytecode is left out: the grader's own imports write it."""
    seen: dict[str, tuple] = {}

    def one(path: Path, content: bool = True) -> None:
        try:
            info = path.lstat()
        except OSError:
            return
        entry = (stat.S_IMODE(info.st_mode), stat.S_IFMT(info.st_mode), info.st_uid, info.st_gid, info.st_ctime_ns)
        if stat.S_ISREG(info.st_mode):
            digest = hashlib.sha256(path.read_bytes()).hexdigest() if content else ""
            entry += (info.st_size, info.st_mtime_ns, digest)
        elif stat.S_ISLNK(info.st_mode):
            entry += (os.readlink(path),)
        seen[str(path)] = entry

    for root in roots:
        one(root)
        for folder, dirs, files in os.walk(root):
            for name in dirs + files:
                path = Path(folder) / name
                if name == "__pycache__" or (path.parent.name == "__pycache__" and name.endswith(".pyc")):
                    continue
                one(path)
    site = Path(numpy.__file__).resolve().parent.parent
    for entry in os.scandir(site):
        if not entry.is_dir(follow_symlinks=False):
            one(Path(entry.path))
    for device in DEVICES:
        one(Path(device), content=False)
    return seen


def changed(before: dict[str, tuple], after: dict[str, tuple]) -> list[str]:
    out = []
    for path in sorted(set(before) | set(after)):
        if before.get(path) == after.get(path):
            continue
        if Path(path).is_relative_to(LIVE):
            try:
                regular = path in after and after[path][1] == stat.S_IFREG
                marked = regular and b"kg-hostile" in Path(path).read_bytes()
            except OSError:
                marked = False
            if not marked and (path not in before or path not in after or before[path][:4] == after[path][:4]):
                continue  # an edit of the checkout, not the corpus's
        if path not in after:
            out.append(f"removed: {path}")
        elif path not in before:
            out.append(f"added: {path} {after[path][:4]}")
        else:
            out.append(f"changed: {path} {before[path]} -> {after[path]}")
    return out


def own_process() -> dict[str, object]:
    """What another process could change of the grader's (this one, which runs api.grade): its
    resource limits, niceness, CPUs and scheduling policy."""
    state: dict[str, object] = {name: resource.getrlimit(getattr(resource, name))
                                for name in dir(resource) if name.startswith("RLIMIT_")}
    state.update(nice=os.getpriority(os.PRIO_PROCESS, 0), cpus=sorted(os.sched_getaffinity(0)),
                 policy=os.sched_getscheduler(0))
    return state


def restore_own_process(state: dict[str, object]) -> None:
    for name, value in state.items():
        if name.startswith("RLIMIT_") and resource.getrlimit(getattr(resource, name)) != value:
            try:
                resource.setrlimit(getattr(resource, name), value)
            except (ValueError, OSError):
                pass


def marked_processes() -> list[str]:
    """Every process on the machine with a hostile case's marker in its argv or environment."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        for what in ("cmdline", "environ"):
            try:
                data = (proc / what).read_bytes()
            except OSError:
                continue
            if MARKER.encode() in data:
                shown = data.replace(bytes(1), b" ")[:200]
                found.append(f"pid {proc.name} ({what}): {shown!r}")
                break
    return found


def leftovers() -> list[str]:
    """Jail folders that outlived their grading, found by a marked file in them (a case writes its
    marker into what it leaves in its folder): each one said, then removed."""
    found = []
    for folder in Path(tempfile.gettempdir()).glob("kg-jail-*"):
        hit = subprocess.run(["find", str(folder), "-name", f"{MARKER}*", "-print", "-quit"], capture_output=True,
                             text=True).stdout.strip()
        if hit:
            found.append(f"{folder} (holds {Path(hit).name})")
            subprocess.run(["rm", "-rf", "--one-file-system", str(folder)], check=False)
    return found


def ipc_objects() -> dict[tuple[str, int], int]:
    """The machine's System V IPC objects: (kind, key) -> id."""
    objects = {}
    for kind in ("shm", "msg", "sem"):
        try:
            lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            objects[(kind, int(fields[0]))] = int(fields[1])
    return objects


def remove_ipc(new: dict[tuple[str, int], int]) -> None:
    flags = {"shm": "-m", "msg": "-q", "sem": "-s"}
    for (kind, _), ident in new.items():
        subprocess.run(["ipcrm", flags[kind], str(ident)], capture_output=True, check=False)


def ipc_key(name: str) -> int:
    """The key a case that makes IPC objects uses (its marker's CRC)."""
    return zlib.crc32(marker(name).encode()) & 0x7FFFFFFF


def posix_queues() -> list[str]:
    """POSIX message queues named after a case's marker (removed once seen)."""
    import ctypes

    rt = ctypes.CDLL(None, use_errno=True)
    if not hasattr(rt, "mq_unlink"):  # a C library older than 2.34 keeps it in librt
        rt = ctypes.CDLL("librt.so.1", use_errno=True)
    found = []
    for name in EXPECTED:
        if rt.mq_unlink(f"/{marker(name)}".encode()) == 0:
            found.append(f"/{marker(name)}")
    return found


# ---------------------------------------------------------------------------------------------
# Grading the corpus

def substitute(text: str, name: str, course: Path, listeners: Listeners, solution: str, skeleton: str) -> str:
    for key, value in (("@UNHOOK@", UNHOOK), ("@SOLUTION@", solution), ("@SKELETON@", skeleton),
                       ("@ROOT@", str(course)), ("@CHECKOUT@", str(ROOT)),
                       ("@GRADER@", str(Path(grader.__file__).resolve().parent)),
                       ("@NUMPY@", str(Path(numpy.__file__).resolve().parent)), ("@PORT@", str(listeners.port)),
                       ("@UDP_PORT@", str(listeners.udp_port)), ("@UNIX_SOCKET@", listeners.unix_path),
                       ("@ABSTRACT_SOCKET@", listeners.abstract_name), ("@MARKER@", marker(name))):
        text = text.replace(key, value)
    return text


def write_corpus(course: Path, listeners: Listeners) -> Path:
    """The corpus with its placeholders filled in, under course/submissions."""
    solution = (ROOT / "reference" / "lesson_numpy" / "solution.py").read_text()
    skeleton = (ROOT / "exercises" / "lesson_numpy" / "skeleton.py").read_text()
    files = course / "submissions"
    files.mkdir()
    for name in EXPECTED:
        text = (CORPUS / name).read_text()
        if name.endswith(".ipynb"):  # in each cell's text, so that the JSON stays valid
            notebook = json.loads(text)
            for cell in notebook["cells"]:
                source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
                cell["source"] = substitute(source, name, course, listeners, solution, skeleton)
            text = json.dumps(notebook, indent=1)
        else:
            text = substitute(text, name, course, listeners, solution, skeleton)
        (files / name).write_text(text)
    return files


def prepare_course(course: Path) -> Path:
    """A copy of the exercise (its limits lowered) and of its reference; the exercise's folder."""
    exercise = course / "exercises" / "lesson_numpy"
    shutil.copytree(ROOT / "exercises" / "lesson_numpy", exercise, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "reference" / "lesson_numpy", course / "reference" / "lesson_numpy",
                    ignore=shutil.ignore_patterns("__pycache__"))
    spec = (exercise / "spec.toml").read_text()
    spec = re.sub(r"(?m)^points = (\d+)$", rf"points = \1\ncall_seconds = {CALL_SECONDS}", spec)
    spec = spec.replace("run_seconds = 60", f"run_seconds = {RUN_SECONDS}\nmemory_bytes = {768 * 1024**2}\n"
                        f"file_size_bytes = {64 * 1024**2}")
    (exercise / "spec.toml").write_text(spec)
    return exercise


def grade_one(exercise: Path, path: Path) -> dict:
    start = time.monotonic()
    try:
        document = results.to_json(api.grade(exercise, path, seed=1))
        error = ""
    except Exception:  # noqa: BLE001 - the grader must never raise for a submission: said by the test
        document, error = None, traceback.format_exc()
    return {"document": document, "seconds": time.monotonic() - start, "error": error}


@pytest.fixture(scope="module", params=["namespaces", "no-namespaces"])
def graded(request, tmp_path_factory) -> dict:
    """Every case graded (two at a time) per isolation: with bubblewrap's namespaces where the
    machine has them, and as on a machine that refuses them (Landlock); what the walls saw."""
    from grader.pyexercise.sandbox import NO_NAMESPACES_VARIABLE

    if request.param == "no-namespaces":
        os.environ[NO_NAMESPACES_VARIABLE] = "1"  # children (the hidden tests' pytest) inherit it
        request.addfinalizer(lambda: os.environ.pop(NO_NAMESPACES_VARIABLE, None))
    for sentinel in SENTINELS:
        Path(sentinel).unlink(missing_ok=True)
    course = tmp_path_factory.mktemp("course")
    exercise = prepare_course(course)
    listeners = Listeners(tmp_path_factory.mktemp("listen"))
    request.addfinalizer(listeners.close)
    files = write_corpus(course, listeners)
    roots = [course, LIVE, Path(numpy.__file__).resolve().parent]
    before = fingerprint(roots)
    devices = {d: os.stat(d) for d in DEVICES if os.path.exists(d)}
    process = own_process()
    ipc_before = ipc_objects()

    def put_back() -> None:  # what a breach changed (the test says what it was), even if the run stops
        for device, info in devices.items():
            now = os.stat(device)
            if (now.st_mode, now.st_uid, now.st_gid, now.st_mtime_ns) != (info.st_mode, info.st_uid, info.st_gid,
                                                                          info.st_mtime_ns):
                os.chmod(device, stat.S_IMODE(info.st_mode))
                os.chown(device, info.st_uid, info.st_gid)
                os.utime(device, ns=(info.st_atime_ns, info.st_mtime_ns))
        restore_own_process(process)

    request.addfinalizer(put_back)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(SECRET_VARIABLE, CANARY)  # the grader's, and the hidden tests' pytest's: never the child's
        with ThreadPoolExecutor(max_workers=2) as pool:
            names = sorted(EXPECTED)
            done = dict(zip(names, pool.map(lambda n: grade_one(exercise, files / n), names)))
            again = [n for n in TWICE if n in EXPECTED]
            for name, second in zip(again, pool.map(lambda n: grade_one(exercise, files / n), again)):
                done[name]["again"] = second
    time.sleep(1.0)  # anything that got out has had time to act
    after = fingerprint(roots)
    process_after = own_process()
    put_back()
    ipc_new = {k: v for k, v in ipc_objects().items() if k not in ipc_before}
    remove_ipc(ipc_new)
    want = "namespaces (bubblewrap)" if request.param == "namespaces" and namespaces_available() else "Landlock"
    return {"cases": done, "writes": changed(before, after), "processes": marked_processes(),
            "grader": [f"{k}: {process[k]} -> {process_after[k]}" for k in process if process[k] != process_after[k]],
            "sentinels": [s for s in SENTINELS if Path(s).exists()] + [
                str(p) for p in Path("/tmp").glob("kernel-grader-hostile-*") if str(p) not in SENTINELS],
            "heard": list(listeners.heard), "isolation": want, "leftovers": leftovers(),
            "ipc": [f"{kind} key {key:#x} (id {ident})" for (kind, key), ident in ipc_new.items()],
            "ipc_keys": {key for _, key in ipc_new}, "queues": posix_queues()}


def _text(document: dict) -> str:
    return "\n".join(t["output"] for t in document["tests"]) + "\n" + document["output"]


def _outside_material() -> list[str]:
    try:
        first = Path("/etc/passwd").read_text().splitlines()[0]
    except (OSError, IndexError):
        first = ""
    return [CANARY] + ([first] if first else [])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_hostile_python_submission(graded, name):
    expect = EXPECTED[name]
    case = graded["cases"][name]
    assert not case["error"], f"grading {name} raised:\n{case['error']}"
    document, seconds = case["document"], case["seconds"]
    results.validate(document)
    assert seconds < BOUND_SECONDS, f"{name} took {seconds:.0f} s"
    assert graded["isolation"] in document["extra_data"]["device"], document["extra_data"]["device"]
    exercise = load(ROOT / "exercises" / "lesson_numpy")
    tests = {t["name"]: t for t in document["tests"]}
    functions = {f"{fn}()": fn for fn in exercise.spec.names}
    failed = {functions[n] for n, t in tests.items() if n in functions and t["status"] == "failed"}
    text = _text(document)
    if expect.get("full"):
        assert not failed and document["score"] == exercise.spec.max_score, text[:3000]
    else:
        want = set(exercise.spec.names) if expect["fails"] == ["*"] else set(expect["fails"])
        assert failed == want, (failed, want, text[:3000])
        assert document["score"] < exercise.spec.max_score
    if expect.get("load") is False:
        assert tests["Loads"]["status"] == "failed"
    for word in expect.get("words", []):
        assert word in text, (word, text[:3000])
    everything = json.dumps(document) + "\n" + text
    leaks = hidden_material_in(everything, exercise)
    assert not leaks, leaks
    for material in _outside_material():
        assert material not in everything, f"{name}: {material[:40]!r} is in the results"
    assert len(document["output"]) < 20_000  # printed floods stay capped
    mine = marker(name)
    assert not [p for p in graded["processes"] if mine in p], graded["processes"]
    assert not [h for h in graded["heard"] if mine.encode() in h[2]], graded["heard"]
    assert not [f for f in graded["leftovers"] if mine in f], f"left on the machine: {graded['leftovers']}"
    assert ipc_key(name) not in graded["ipc_keys"], f"IPC objects that outlived the jail: {graded['ipc']}"
    assert f"/{mine}" not in graded["queues"], f"POSIX message queues that outlived the jail: {graded['queues']}"
    if "again" in case:
        second = case["again"]
        assert not second["error"], f"grading {name} again raised:\n{second['error']}"
        assert second["document"]["score"] == document["score"], (
            f"{name}: {document['score']} then {second['document']['score']}",
            [(t["name"], t["status"]) for t in second["document"]["tests"]])


@pytest.mark.slow
def test_walls_held(graded):
    """For the whole corpus in this isolation: nothing written outside, nothing of the grader's own
    process changed, no file where a shell or a fork would have put one, no survivor, nothing
    reached the listeners, no jail folder left behind, no IPC object left on the machine."""
    problems = []
    if graded["writes"]:
        problems.append("written outside the jail:\n  " + "\n  ".join(graded["writes"][:40]))
    for key, what in (("grader", "the grader's own process changed from outside"),
                      ("sentinels", "files a shell escape or a fork left in /tmp"),
                      ("processes", "marked processes alive"),
                      ("heard", "what the listeners heard"), ("leftovers", "jail folders left on the machine"),
                      ("ipc", "System V IPC objects made during the grading and still there"),
                      ("queues", "POSIX message queues still there")):
        if graded[key]:
            problems.append(f"{what}: {graded[key]}")
    assert not problems, "\n".join(problems)
