"""A batch's profiler (grader.run.parent.profile_broker, grader.run.parent.profile_spool), tested without a GPU: a fake ncu
runs the wrapped command and writes one CSV row per launch that a fake runner reports; each module
file says how its launches behave (counts, a failed launch, a crash, a hang)."""
from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from grader.run.parent import profile_spool, supervisor as stages
from grader.checks.counters import NcuRequest, counts_from, profile_alone
from grader.exercise import load
from grader.run.parent.profile_broker import ProfileBroker, attribute, start_brokers
from grader.run.parent.supervisor import TaskSupervisor
from grader.run.tasks import Task, TaskResult
from grader.tools import NcuRows

ROOT = Path(__file__).resolve().parent.parent
METRICS = ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum")
SIZES = ({"N": 17}, {"N": 64})

FAKE_NCU = r'''
import os, subprocess, sys
args = sys.argv[1:]
opts, i = {}, 0
while i < len(args) and args[i].startswith("-"):
    if args[i] in ("--csv", "--disable-extra-suffixes"):
        i += 1
    else:
        opts[args[i]] = args[i + 1]
        i += 2
log, metrics = opts["--log-file"], opts["--metrics"].split(",")
kernels = opts["-k"].split("(", 1)[1].rsplit(")", 1)[0].split("|")
with open(os.environ["FAKE_NCU_CALLS"], "a") as calls:
    calls.write(os.environ.get("CUDA_VISIBLE_DEVICES", "-") + " " + " ".join(args[i:]) + "\n")
launches = log + ".launches"
import time
began = time.time()
code = subprocess.run(args[i:], env={**os.environ, "FAKE_NCU_LAUNCHES": launches}).returncode
with open(os.environ["FAKE_NCU_CALLS"] + ".spans", "a") as spans:
    spans.write(f"{os.environ.get('CUDA_VISIBLE_DEVICES', '-')} {os.environ.get('TMPDIR', '-')} {began} {time.time()}\n")
values = open(launches).read().split() if os.path.exists(launches) else []
with open(log, "w") as out:
    out.write(",".join('"%s"' % c for c in ["ID", "Kernel Name", *metrics]) + "\n")
    out.write(",".join('"%s"' % c for c in ["", "", *["sector"] * len(metrics)]) + "\n")
    n = 0
    for v in values:
        for k in kernels:
            out.write(",".join('"%s"' % c for c in [str(n), k, *[v] * len(metrics)]) + "\n")
            n += 1
sys.exit(code)
'''

FAKE_RUNNER = r'''
import json, os, signal, sys, time
job_path = sys.argv[1]
if sys.argv[2:3] == ["--prestart"]:
    deadline = time.time() + float(sys.argv[6])
    while not os.path.exists(job_path):
        if time.time() > deadline:
            sys.exit(0)
        time.sleep(0.01)
job = json.load(open(job_path))
ready = time.time()
for one in job.get("jobs", [job]):
    with open(one["results"], "a") as out:
        for task in one["tasks"]:
            began = time.time()
            how = open(one["modules"][task["module"]]).read().split()
            result = {"id": task["id"], "status": "ok", "launches": [{"seed": task["seeds"][0]}],
                      "clock": {"ready": ready, "start": began, "end": time.time(), "waited": 0.0}}
            if how[0] == "hang":
                time.sleep(1000)
            if how[0] == "slow":
                time.sleep(0.5)
            if how[0] == "crash":
                os.kill(os.getpid(), signal.SIGKILL)
            if how[0] in ("error", "fatal"):
                result = {"id": task["id"], "status": "error", "message": "invalid argument",
                          "launches": [{"error": "invalid argument"}]}
            else:
                with open(os.environ["FAKE_NCU_LAUNCHES"], "a") as launches:
                    launches.write(str(float(how[1]) + sum(task["sizes"].values())) + "\n")
            out.write(json.dumps(result) + "\n")
            out.flush()
            if how[0] == "fatal":
                sys.exit(3)
'''


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A fake ncu (its calls logged), the fake runner in place of grader.run.child.runner, and level2 with a 3 s run limit."""
    ncu = tmp_path / "ncu"
    ncu.write_text(f"#!{sys.executable}\n" + FAKE_NCU)
    ncu.chmod(ncu.stat().st_mode | stat.S_IXUSR)
    runner = tmp_path / "fake_runner.py"
    runner.write_text(FAKE_RUNNER)
    monkeypatch.setattr(stages, "python_argv", lambda module, *args: [sys.executable, str(runner), *args])
    exercise = tmp_path / "level2"
    shutil.copytree(ROOT / "exercises" / "level2", exercise)
    spec = exercise / "spec.toml"
    spec.write_text(spec.read_text().replace("run_seconds = 120", "run_seconds = 3"))
    assert load(exercise).spec.limits.run_seconds == 3
    calls = tmp_path / "ncu-calls.txt"
    calls.touch()
    env = {**os.environ, "FAKE_NCU_CALLS": str(calls), "PYTHONPATH": str(ROOT)}
    return {"ncu": str(ncu), "exercise": exercise, "calls": calls, "env": env, "tmp": tmp_path}


def _request(fake, name: str, submission: str, reference: str = "ok 100") -> NcuRequest:
    folder = fake["tmp"] / name
    folder.mkdir()
    (folder / "submission.cubin").write_text(submission)
    (folder / "reference.cubin").write_text(reference)
    tasks = tuple(Task(id=f"ncu:{m}:N = {s['N']}", kind="profile", backend="gpu", module=m, sizes=s, seeds=(7,), compare=False)
                  for m in ("submission", "reference") for s in SIZES)
    return NcuRequest(str(fake["exercise"]), {"submission": str(folder / "submission.cubin"),
                                              "reference": str(folder / "reference.cubin")}, tasks, METRICS, ("matvec",))


def _alone(fake, request: NcuRequest, name: str):
    """What a lone grading's own ncu run computes for the request."""
    work = fake["tmp"] / f"alone-{name}"
    work.mkdir()
    runner = TaskSupervisor(exercise_root=fake["exercise"], workdir=work, modules={"gpu": dict(request.modules)},
                    limits=load(fake["exercise"]).spec.limits, env=fake["env"])
    return profile_alone(runner, request, fake["ncu"])


def _ask_all(fake, broker: ProfileBroker, requests: dict[str, NcuRequest]) -> dict[str, dict | None]:
    """Every request asked at once, the broker started only once all are waiting (one group)."""
    spool = broker.spool
    spool.mkdir(parents=True)
    (spool / profile_spool.HEARTBEAT).touch()
    with ThreadPoolExecutor(len(requests)) as pool:
        futures = {name: pool.submit(profile_spool.ask, spool, r.to_json(), fake["tmp"] / name / "answer.json", 60)
                   for name, r in requests.items()}
        while len(list(spool.glob("*" + profile_spool.REQUEST_SUFFIX))) < len(requests):
            time.sleep(0.01)
        broker.start()
        try:
            return {name: f.result() for name, f in futures.items()}
        finally:
            broker.stop()


def _broker(fake, group: int = 8, prestart: bool = False) -> ProfileBroker:
    return ProfileBroker(fake["tmp"] / "spool", fake["tmp"] / "work", fake["ncu"], fake["env"], group, prestart=prestart)


def _ncu_runs(fake) -> int:
    return len(fake["calls"].read_text().splitlines())


def _answer(counts) -> dict:
    by_size, problem = counts
    return {"by_size": by_size, "problem": problem}


def test_a_group_is_one_ncu_run_and_each_answer_is_what_its_lone_run_computes(fake):
    requests = {f"s{i}": _request(fake, f"s{i}", f"ok {1000 * (i + 1)}") for i in range(5)}
    answers = _ask_all(fake, _broker(fake), requests)
    assert _ncu_runs(fake) == 1
    for name, r in requests.items():
        assert answers[name] == _answer(_alone(fake, r, name)), name
    # The rows went to the right jobs: the submission's own counts, not a neighbour's.
    assert answers["s3"]["by_size"]["N = 64"]["submission"][METRICS[0]] == 4000 + 64
    assert answers["s3"]["by_size"]["N = 17"]["reference"][METRICS[1]] == 100 + 17


def test_groups_take_at_most_k_and_a_prestarted_child_serves_the_next(fake):
    # Each with a reference module of its own: no reference launch is remembered across groups here.
    requests = {f"s{i}": _request(fake, f"s{i}", f"ok {i}", f"ok {100 + i}") for i in range(5)}
    broker = _broker(fake, group=2, prestart=True)
    answers = _ask_all(fake, broker, requests)
    assert broker.stats["groups"] == 2 and broker.stats["single"] == 1  # 2 + 2 + 1
    for name, r in requests.items():
        assert answers[name]["problem"] is None and answers[name] == _answer(_alone(fake, r, name))
    # Each ncu run is on record (the bench's profiler summary reads them): its jobs, and times in order.
    assert sorted(r["jobs"] for r in broker.runs) == [1, 2, 2]
    for r in broker.runs:
        assert len(r["arrived"]) == r["jobs"] and max(r["arrived"]) <= r["start"] <= r["end"]
    grouped = [r for r in broker.runs if r["jobs"] == 2]
    assert all(len(r["launches"]) == 2 * len(SIZES) * 2 for r in grouped)  # each job: submission and reference per size
    assert all(a[0] <= a[1] <= b[0] for r in grouped for a, b in zip(r["launches"], r["launches"][1:]))


def test_a_batch_writes_its_profilers_record_where_the_diagnostic_says(fake, monkeypatch):
    from grader.staff.batch import local

    brokers = start_brokers(fake["tmp"] / "profiler", fake["ncu"], {"0": {"CUDA_VISIBLE_DEVICES": "0"}}, 8, fake["env"])
    brokers.stop()
    brokers.by_gpu["0"].runs.append({"gpu": "0", "jobs": 3, "start": 1.0, "end": 2.0, "arrived": [0.1, 0.2, 0.3]})
    local.write_profiler_log(brokers)  # not asked for: nothing written, nothing raised
    log = fake["tmp"] / "runs.json"
    monkeypatch.setenv(local.PROFILER_LOG_VARIABLE, str(log))
    local.write_profiler_log(brokers)
    assert json.loads(log.read_text()) == brokers.runs() and brokers.runs()[0]["jobs"] == 3
    monkeypatch.setenv(local.PROFILER_LOG_VARIABLE, str(fake["tmp"] / "no-such-folder" / "runs.json"))
    local.write_profiler_log(brokers)  # an unwritable path costs only the record


@pytest.mark.parametrize("how", ["error", "fatal", "crash"])
def test_a_failing_job_is_profiled_alone_and_costs_the_others_nothing(fake, how):
    requests = {f"s{i}": _request(fake, f"s{i}", how if i == 2 else f"ok {1000 * i}") for i in range(5)}
    broker = _broker(fake)
    answers = _ask_all(fake, broker, requests)
    # Its grading is told to run its own ncu (grader.checks.counters._ncu_counts then does, as alone).
    assert answers["s2"] is None and broker.stats["told_alone"] == 1
    assert "submission launch under ncu failed" in _alone(fake, requests["s2"], "s2")[1]
    for name in ("s0", "s1", "s3", "s4"):
        assert answers[name]["problem"] is None and answers[name] == _answer(_alone(fake, requests[name], name)), name
    # Where the child ended at the failure (fatal, crash), the jobs after it were profiled again, in a
    # later group or alone (how the requests fell into groups depends on when each arrived).
    assert broker.stats["groups"] >= 1


def test_a_hung_job_costs_one_run_limit_then_the_rest_are_profiled(fake):
    requests = {f"s{i}": _request(fake, f"s{i}", "hang" if i == 1 else f"ok {1000 * i}") for i in range(4)}
    broker = _broker(fake)
    started = time.monotonic()
    answers = _ask_all(fake, broker, requests)
    assert time.monotonic() - started < 10
    assert answers["s1"] is None and broker.stats["told_alone"] == 1
    # ncu printed nothing for the killed group: job 0's rows went with it, so it is queued again too.
    assert broker.stats["again"] == 3 and broker.stats["groups"] == 2
    for name in ("s0", "s2", "s3"):
        assert answers[name] == _answer(_alone(fake, requests[name], name)), name


def test_without_a_live_broker_the_grading_profiles_alone(fake):
    spool = fake["tmp"] / "spool"
    spool.mkdir()
    request = _request(fake, "s", "ok 1")
    assert profile_spool.ask(spool, request.to_json(), fake["tmp"] / "s" / "a.json", 5) is None  # never started
    (spool / profile_spool.HEARTBEAT).touch()  # alive, but never answers: the wait ends and the request goes
    started = time.monotonic()
    assert profile_spool.ask(spool, request.to_json(), fake["tmp"] / "s" / "a.json", 0.3) is None
    assert time.monotonic() - started < 3
    assert list(spool.glob("*" + profile_spool.REQUEST_SUFFIX)) == []
    os.utime(spool / profile_spool.HEARTBEAT, (0, 0))  # a broker that died: noticed without waiting it out
    assert profile_spool.ask(spool, request.to_json(), fake["tmp"] / "s" / "a.json", 60) is None


def test_a_broker_that_fails_tells_its_gradings_to_profile_alone(fake, monkeypatch):
    broker = _broker(fake)

    def broken(group):
        raise RuntimeError("a fault of the broker's own")

    monkeypatch.setattr(broker, "_serve_group", broken)
    answers = _ask_all(fake, broker, {"s": _request(fake, "s", "ok 1")})
    assert answers == {"s": None}


def _ok(ids) -> dict[str, TaskResult]:
    return {i: TaskResult(i, "ok") for i in ids}


def test_attribution_keeps_what_the_rows_can_be_told_apart_for():
    tasks = tuple(Task(id=f"t:{m}:{k}", kind="profile", backend="gpu", module=m, sizes={"N": k}) for k, m in
                  ((1, "submission"), (1, "reference")))
    req = NcuRequest("x", {}, tasks, ("m",), ("k",))
    rows = lambda *v: NcuRows(tuple({"m": float(x)} for x in v), ())  # noqa: E731
    ids = [t.id for t in tasks]
    # Regular: two rows each, in order.
    done = attribute([req] * 3, [_ok(ids)] * 3, rows(1, 2, 3, 4, 5, 6))
    assert done.alone == () and done.again == () and done.kept[1] == counts_from(req, _ok(ids), rows(3, 4))
    # Job 1's first launch failed (no row): jobs 0 and 2 keep theirs, job 1 alone.
    failed = {ids[0]: TaskResult(ids[0], "error", "bad"), ids[1]: TaskResult(ids[1], "ok")}
    done = attribute([req] * 3, [_ok(ids), failed, _ok(ids)], rows(1, 2, 4, 5, 6))
    assert done.alone == (1,) and done.again == () and done.kept[2] == counts_from(req, _ok(ids), rows(5, 6))
    # Killed in job 1 (no rows at all): job 1 alone, the others again.
    done = attribute([req] * 3, [_ok(ids), {ids[0]: TaskResult(ids[0], "ok")}, {}], rows())
    assert done.kept == {} and done.alone == (1,) and done.again == (0, 2)
    # Every launch succeeded but a row too many (a kernel's printf posing as ncu?): nobody's rows are trusted.
    done = attribute([req] * 2, [_ok(ids)] * 2, rows(1, 2, 3, 4, 5))
    assert done.kept == {} and done.alone == (0, 1)


def test_the_runner_runs_a_job_of_several_jobs_in_order_each_into_its_own_results(tmp_path, monkeypatch):
    from contextlib import contextmanager

    from grader.run.child import runner

    order: list[str] = []

    class FakeDevice:
        name = "fake"

        @contextmanager
        def using(self):
            yield

        def scrub(self, bufs):
            pass

    def execute(task, exercise, harness, device, modules, budgets, cases, release=None):
        order.append(f"{modules['submission']}:{task.id}")
        assert release == device.scrub  # a later job's kernel finds zeros where an earlier job's data was
        status = "error" if modules["submission"] == "bad" and task.module == "submission" else "ok"
        return {"id": task.id, "status": status}, status == "error"

    monkeypatch.setattr(runner, "open_device", lambda backend, pool=True: FakeDevice())
    monkeypatch.setattr(runner, "_execute", execute)
    tasks = [Task(id=f"ncu:{m}", kind="profile", backend="gpu", module=m).to_json() for m in ("submission", "reference")]
    jobs = [{"modules": {"submission": name}, "results": str(tmp_path / f"{name}.jsonl"), "tasks": tasks}
            for name in ("a", "b", "bad", "c")]
    job = tmp_path / "group.json"
    job.write_text(json.dumps({"exercise": str(ROOT / "exercises" / "level2"), "backend": "gpu", "jobs": jobs}))
    assert runner.main([str(job)]) == 3  # the fatal launch ends the child; the broker sorts out the rest
    assert order == ["a:ncu:submission", "a:ncu:reference", "b:ncu:submission", "b:ncu:reference", "bad:ncu:submission"]
    assert [json.loads(x)["id"] for x in (tmp_path / "b.jsonl").read_text().splitlines()] == ["ncu:submission", "ncu:reference"]
    assert not (tmp_path / "c.jsonl").exists()


def test_a_batch_has_a_profiler_per_gpu_that_profiles_on_its_own_gpu(fake):
    slots = {"0": {"CUDA_VISIBLE_DEVICES": "0"}, "1": {"CUDA_VISIBLE_DEVICES": "1"}}
    brokers = start_brokers(fake["tmp"] / "profiler", fake["ncu"], slots, 8, fake["env"])
    try:
        spools = {gpu: Path(brokers.env_for(gpu)[profile_spool.VARIABLE]) for gpu in slots}
        assert spools["0"] != spools["1"] and brokers.env_for("7") == {}
        for gpu, spool in spools.items():
            request = _request(fake, f"on{gpu}", "ok 5")
            answer = profile_spool.ask(spool, request.to_json(), fake["tmp"] / f"on{gpu}" / "answer.json", 30)
            assert answer == _answer(_alone(fake, request, f"on{gpu}"))
    finally:
        brokers.stop()
    profiled_on = [line.split()[0] for line in fake["calls"].read_text().splitlines()]
    # Each broker's runs (and the ncu child it prestarts for the next group) see only their GPU; "-": the test's lone runs.
    assert sorted(set(profiled_on)) == ["-", "0", "1"]
    assert not any(s.joinpath(profile_spool.HEARTBEAT).exists() for s in spools.values())


def test_grade_batch_starts_profilers_only_where_ncu_would_run(fake, monkeypatch):
    from grader.staff.batch import executor, local
    from grader.tools import Tools

    exercise = load(ROOT / "exercises" / "level2")  # with its reference solution
    ctx = executor.BatchContext(exercise, fake["tmp"], "gpu", 60.0, None, "key", fake["tmp"] / "scratch", "batch-test")
    slots = [{"CUDA_VISIBLE_DEVICES": "0"}, {"CUDA_VISIBLE_DEVICES": "0"}]
    monkeypatch.setattr(local, "find_tools", lambda: Tools())
    assert local._profilers(ctx, slots, 8) is None  # no ncu on this machine: gradings say so, as alone
    monkeypatch.setattr(local, "find_tools", lambda: Tools(ncu=fake["ncu"]))
    assert local._profilers(ctx, slots, 0) is None  # --profile-group 0: each grading runs its own ncu
    brokers = local._profilers(ctx, slots, 8)
    try:
        assert list(brokers.by_gpu) == ["0"] and brokers.by_gpu["0"].group == 8
        assert brokers.by_gpu["0"].linger == local.DEFAULT_LINGER_S
    finally:
        brokers.stop()
    # The diagnostic knob: how long a request waits for company (an unreadable value keeps the default).
    for value, linger in (("0.5", 0.5), ("soon", local.DEFAULT_LINGER_S)):
        monkeypatch.setenv(local.PROFILER_LINGER_VARIABLE, value)
        brokers = local._profilers(ctx, slots, 8)
        try:
            assert brokers.by_gpu["0"].linger == linger
        finally:
            brokers.stop()


def test_stopping_a_profiler_ends_its_ncu_child_in_flight(fake):
    """At the end of a batch (or on Ctrl-C) a group still in flight has nobody to answer: it is killed,
    not waited for (here a hang that the 30 s run limit would otherwise end)."""
    from grader.run.parent.isolated import TAG_VARIABLE, kill_tagged

    spec = fake["exercise"] / "spec.toml"
    spec.write_text(spec.read_text().replace("run_seconds = 3", "run_seconds = 30"))
    broker = ProfileBroker(fake["tmp"] / "spool", fake["tmp"] / "work", fake["ncu"],
                           {**fake["env"], TAG_VARIABLE: "test-profiler::x"}, 8).start()
    request = _request(fake, "s", "hang")
    asking = threading.Thread(target=profile_spool.ask, args=(broker.spool, request.to_json(), fake["tmp"] / "s" / "a.json", 60))
    asking.start()
    while _ncu_runs(fake) < 1:
        time.sleep(0.02)
    started = time.monotonic()
    broker.stop(kill=lambda: kill_tagged("test-profiler::", prefix=True))
    assert time.monotonic() - started < 10
    asking.join(20)
    assert not asking.is_alive()


def test_gpus_of_one_kind_share_one_profiler_and_other_kinds_keep_their_own(fake):
    """One queue for GPUs of one kind (as the batch's probe names them) gives fuller groups; a GPU of
    another kind, or of no stated kind, keeps its own profiler (counts may differ between kinds)."""
    from grader.run.parent.device_probe import PRESET_VARIABLE, GpuInfo

    h200 = GpuInfo(True, "NVIDIA H200", "sm_90").to_env()
    slots = {"0": {"CUDA_VISIBLE_DEVICES": "0", PRESET_VARIABLE: h200},
             "1": {"CUDA_VISIBLE_DEVICES": "1", PRESET_VARIABLE: h200},
             "2": {"CUDA_VISIBLE_DEVICES": "2", PRESET_VARIABLE: GpuInfo(True, "NVIDIA A100", "sm_80").to_env()},
             "3": {"CUDA_VISIBLE_DEVICES": "3"}}
    brokers = start_brokers(fake["tmp"] / "profiler", fake["ncu"], slots, 8, fake["env"], linger=0.0)
    try:
        spools = {gpu: brokers.env_for(gpu)[profile_spool.VARIABLE] for gpu in slots}
        assert spools["0"] == spools["1"] and len(set(spools.values())) == 3
        request = _request(fake, "on1", "ok 5")
        answer = profile_spool.ask(Path(spools["1"]), request.to_json(), fake["tmp"] / "on1" / "answer.json", 30)
        assert answer == _answer(_alone(fake, request, "on1"))
    finally:
        brokers.stop()


def test_a_profiler_waits_a_little_for_a_group_to_fill(fake):
    """Two requests that arrive a moment apart are profiled in one ncu run when the first may linger."""
    broker = ProfileBroker(fake["tmp"] / "spool", fake["tmp"] / "work", fake["ncu"], fake["env"], group=8, linger=3.0)
    broker.start()
    try:
        asked = []
        for name in ("first", "second"):
            request = _request(fake, name, "ok 5")
            thread = threading.Thread(target=lambda r=request, n=name: asked.append(
                profile_spool.ask(broker.spool, r.to_json(), fake["tmp"] / n / "answer.json", 30)))
            thread.start()
            asked.append(thread)
            time.sleep(0.5)
        for item in list(asked):
            if isinstance(item, threading.Thread):
                item.join(30)
    finally:
        broker.stop()
    assert broker.stats["groups"] == 1 and broker.stats["single"] == 0, broker.stats


def test_a_profiler_profiles_on_each_gpu_of_its_kind_at_once(fake):
    """Two GPUs of one kind: the profiler's one queue feeds an ncu child on each GPU at the same time,
    each with its GPU's own ncu temp folder, and every answer is what the grading's lone run computes."""
    from grader.run.parent.device_probe import PRESET_VARIABLE, GpuInfo

    h200 = GpuInfo(True, "NVIDIA H200", "sm_90").to_env()
    slots = {gpu: {"CUDA_VISIBLE_DEVICES": gpu, PRESET_VARIABLE: h200} for gpu in ("0", "1")}
    brokers = start_brokers(fake["tmp"] / "profiler", fake["ncu"], slots, 1, fake["env"], linger=0.0)
    requests = {f"s{i}": _request(fake, f"s{i}", f"slow {i}") for i in range(4)}
    try:
        broker = brokers.by_gpu["0"]
        assert brokers.by_gpu["1"] is broker and [lane.gpu for lane in broker.lanes] == ["0", "1"]
        with ThreadPoolExecutor(len(requests)) as pool:
            futures = {name: pool.submit(profile_spool.ask, broker.spool, r.to_json(), fake["tmp"] / name / "answer.json", 60)
                       for name, r in requests.items()}
            answers = {name: f.result() for name, f in futures.items()}
    finally:
        brokers.stop()
    spans = [line.split() for line in Path(str(fake["calls"]) + ".spans").read_text().splitlines()]
    on = {gpu: [(float(a), float(b)) for g, _, a, b in spans if g == gpu] for gpu in ("0", "1")}
    assert on["0"] and on["1"], spans
    assert any(a0 < b1 and a1 < b0 for a0, b0 in on["0"] for a1, b1 in on["1"]), "the two GPUs never profiled at once"
    assert len({tmp for g, tmp, _, _ in spans if g == "0"}) == 1
    assert {tmp for g, tmp, _, _ in spans if g == "0"} != {tmp for g, tmp, _, _ in spans if g == "1"}
    for name, request in requests.items():
        assert answers[name] == _answer(_alone(fake, request, name)), name


@pytest.mark.parametrize("lanes, gpus", [(1, ["0"]), (3, ["0", "1", "0"])])
def test_a_profiler_s_lanes_are_dealt_round_its_gpus(fake, lanes, gpus):
    from grader.run.parent.device_probe import PRESET_VARIABLE, GpuInfo

    h200 = GpuInfo(True, "NVIDIA H200", "sm_90").to_env()
    slots = {gpu: {"CUDA_VISIBLE_DEVICES": gpu, PRESET_VARIABLE: h200} for gpu in ("0", "1")}
    brokers = start_brokers(fake["tmp"] / "profiler", fake["ncu"], slots, 8, fake["env"], lanes=lanes)
    try:
        assert [lane.gpu for lane in brokers.by_gpu["1"].lanes] == gpus
    finally:
        brokers.stop()


def test_two_lanes_on_one_gpu_share_its_ncu_temp_folder(fake):
    """ncu's lock is in its temp folder: two ncu children on one GPU must find each other's."""
    slots = {"0": {"CUDA_VISIBLE_DEVICES": "0"}}
    brokers = start_brokers(fake["tmp"] / "profiler", fake["ncu"], slots, 1, fake["env"], linger=0.0, lanes=2)
    requests = {f"s{i}": _request(fake, f"s{i}", f"slow {i}") for i in range(2)}
    try:
        broker = brokers.by_gpu["0"]
        with ThreadPoolExecutor(len(requests)) as pool:
            futures = [pool.submit(profile_spool.ask, broker.spool, r.to_json(), fake["tmp"] / name / "answer.json", 60)
                       for name, r in requests.items()]
            assert all(f.result() for f in futures)
    finally:
        brokers.stop()
    spans = [line.split() for line in Path(str(fake["calls"]) + ".spans").read_text().splitlines()]
    assert len(spans) == 2 and {gpu for gpu, *_ in spans} == {"0"} and len({tmp for _, tmp, *_ in spans}) == 1


def test_a_launch_that_failed_under_ncu_says_ncu_failed_and_claims_no_trap():
    """Under ncu the process running the kernel is ncu: its exit (status 9 when two runs collide on one
    GPU) or an unnamed launch failure is said as what it is, with the probable cause, not as the
    kernel's trap or failed assert."""
    from grader.backends import gpu
    from grader.checks.counters import NcuRequest, counts_from
    from grader.run.tasks import Task, TaskResult
    from grader.tools import NcuRows

    task = Task(id="ncu:reference", kind="run", backend="gpu", sizes={"n": 4096}, seeds=(1,), module="reference")
    request = NcuRequest("ex", {"reference": "cubin"}, (task,), ("m",), ("k",))
    for message in ("the process running your kernel exited with status 9: no error output",
                    gpu._explain("CUDARuntimeError: cudaErrorLaunchFailure: unspecified launch failure")):
        counts, problem = counts_from(request, {task.id: TaskResult(task.id, "crashed", message)}, NcuRows((), ()))
        assert counts is None and problem.startswith("the reference launch under ncu failed (")
        assert "probable cause is ncu's own run" in problem
        assert "failed assert" not in problem and "your kernel" not in problem
    assert "ncu process exited with status 9" in counts_from(
        request, {task.id: TaskResult(task.id, "crashed", "the process running your kernel exited with status 9: x")},
        NcuRows((), ()))[1]


def _ask_now(fake, broker: ProfileBroker, requests: dict[str, NcuRequest]) -> dict[str, dict | None]:
    """Every request asked at once of a broker already running."""
    with ThreadPoolExecutor(len(requests)) as pool:
        futures = {name: pool.submit(profile_spool.ask, broker.spool, r.to_json(), fake["tmp"] / name / "answer.json", 60)
                   for name, r in requests.items()}
        return {name: f.result() for name, f in futures.items()}


def test_a_reference_launch_is_profiled_once_and_spliced_into_later_answers(fake):
    """The first group profiles the reference and remembers it; a later group sends only its
    submissions' launches to ncu, and every answer is still what the grading's lone run computes."""
    first = {f"a{i}": _request(fake, f"a{i}", f"ok {1000 * (i + 1)}") for i in range(3)}
    later = {f"b{i}": _request(fake, f"b{i}", f"ok {5000 + i}") for i in range(3)}
    other = {"c": _request(fake, "c", "ok 7", "ok 200")}  # another reference module: other bytes
    broker = _broker(fake).start()
    try:
        answers = {**_ask_now(fake, broker, first), **_ask_now(fake, broker, later)}
        answers.update(_ask_now(fake, broker, other))
    finally:
        broker.stop()
    for name, r in {**first, **later, **other}.items():
        assert answers[name] == _answer(_alone(fake, r, name)), name
    assert answers["b2"]["by_size"]["N = 64"]["reference"][METRICS[0]] == 100 + 64
    assert answers["c"]["by_size"]["N = 64"]["reference"][METRICS[0]] == 200 + 64
    assert broker.stats["cached"] == len(SIZES) * len(later)  # the other module's reference was profiled
    cached = [r["cached"] for r in broker.runs if r["jobs"] > 1 or r["cached"]]
    assert cached[0] == 0 and sum(cached) == len(SIZES) * len(later)
    # The later runs profiled the submissions' launches only.
    assert all(len(r["launches"]) == r["jobs"] * len(SIZES) for r in broker.runs if r["cached"])
    assert broker.stats["remembered"] == len(SIZES)  # once per size ("c", alone in its run, profiled as alone)


def test_the_reference_key_is_the_module_s_bytes_and_the_launch(fake):
    from dataclasses import replace

    from grader.run.parent.profile_broker import reference_key

    a, b = _request(fake, "ka", "ok 1"), _request(fake, "kb", "ok 2")  # same reference bytes, other files
    ref = [t for t in a.tasks if t.module == "reference"]
    assert reference_key(a, ref[0]) == reference_key(b, ref[0]) is not None
    assert reference_key(a, ref[0]) != reference_key(a, ref[1])  # another size
    assert reference_key(a, ref[0]) != reference_key(a, replace(ref[0], seeds=(8,)))
    assert reference_key(a, ref[0]) != reference_key(replace(a, metrics=METRICS[:1]), ref[0])
    assert reference_key(a, ref[0]) != reference_key(replace(a, zero=METRICS[1:]), ref[0])
    c = _request(fake, "kc", "ok 1", "ok 101")
    assert reference_key(a, ref[0]) != reference_key(c, ref[0])
    assert reference_key(a, a.tasks[0]) is None  # the submission's launches are never remembered
    Path(c.modules["reference"]).unlink()
    assert reference_key(c, ref[0]) is None  # unreadable: not remembered


@pytest.mark.parametrize("how", ["error", "fatal"])
def test_with_a_remembered_reference_a_failing_job_still_costs_only_itself(fake, how):
    first = {"a": _request(fake, "a", "ok 1000"), "a2": _request(fake, "a2", "ok 2000")}
    later = {f"b{i}": _request(fake, f"b{i}", how if i == 1 else f"ok {3000 + i}") for i in range(4)}
    broker = _broker(fake)
    broker.start()
    try:
        answers = {**_ask_now(fake, broker, first), **_ask_now(fake, broker, later)}
    finally:
        broker.stop()
    assert answers["b1"] is None and broker.stats["told_alone"] == 1  # its grading profiles alone, as today
    assert broker.stats["cached"] > 0
    for name, r in {**first, **later}.items():
        if name != "b1":
            assert answers[name] == _answer(_alone(fake, r, name)), name


def test_a_reference_launch_that_failed_is_not_remembered(fake):
    requests = {f"s{i}": _request(fake, f"s{i}", f"ok {i}", "error") for i in range(3)}
    broker = _broker(fake)
    answers = _ask_all(fake, broker, requests)
    # Each grading is told to profile alone, or (the last, alone in its run) gets its lone run's problem.
    assert all(a is None or "reference launch under ncu failed" in a["problem"] for a in answers.values())
    assert broker.stats["remembered"] == 0 and broker.stats["cached"] == 0


def test_splicing_puts_remembered_launches_back_in_launch_order():
    from dataclasses import replace

    from grader.run.parent.profile_broker import CachedLaunch, launch_rows, splice

    tasks = tuple(Task(id=f"t:{m}:{k}", kind="profile", backend="gpu", module=m, sizes={"N": k})
                  for m in ("submission", "reference") for k in (1, 2))
    req = NcuRequest("x", {}, tasks, ("m",), ("k1", "k2"))  # two kernels: two rows a launch
    sub_only = replace(req, tasks=tasks[:2])
    rows = lambda *v: NcuRows(tuple({"m": float(x)} for x in v), ())  # noqa: E731
    hits = {t.id: CachedLaunch(TaskResult(t.id, "ok"), ({"m": 90.0 + i}, {"m": 95.0 + i})) for i, t in enumerate(tasks[2:])}
    sub_ids = [t.id for t in tasks[:2]]
    # Job 0 sends every launch, job 1 only its submission's.
    results, parsed = splice([req, req], [req, sub_only], [_ok([t.id for t in tasks]), _ok(sub_ids)],
                             rows(*range(1, 9), 11, 12, 13, 14), [{}, hits])
    assert [r["m"] for r in parsed.rows] == [*range(1, 9), 11, 12, 13, 14, 90, 95, 91, 96]
    assert set(results[1]) == {t.id for t in tasks}
    done = attribute([req, req], results, parsed)
    assert done.alone == () and done.kept[1] == counts_from(req, _ok([t.id for t in tasks]), rows(11, 12, 13, 14, 90, 95, 91, 96))
    # A row too many in what was sent: nothing is spliced (the group is settled as before).
    assert splice([req], [sub_only], [_ok(sub_ids)], rows(1, 2, 3, 4, 5), [hits]) is None
    assert launch_rows([sub_only], [_ok(sub_ids)], rows(1, 2, 3, 4)) == [{sub_ids[0]: ({"m": 1.0}, {"m": 2.0}),
                                                                         sub_ids[1]: ({"m": 3.0}, {"m": 4.0})}]
