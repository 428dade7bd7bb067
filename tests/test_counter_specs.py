"""Which counters a traffic or bank-conflicts check sums (spec `counters`), and the race check's
`compare` option."""
import copy

import pytest

from grader import spec as spec_module
from grader.checks import counters
from grader.errors import SpecError

VALID = {
    "id": "toy", "title": "Toy", "sizes": ["n"],
    "kernel": {"name": "k", "params": [
        {"name": "x", "type": "const float*", "role": "in", "shape": ["n"]},
        {"name": "y", "type": "float*", "role": "inout", "shape": ["1"]},
        {"name": "n", "type": "int", "value": "n"}],
        "block": ["256"], "grid": ["ceil(n / 256)"]},
    "cases": {"public": [{"n": 1}, {"n": 1000}]},
    "checks": {"correctness": {"points": 10}, "race": {"points": 5, "size": {"n": 100}},
               "traffic": {"points": 5, "size": {"n": 100}}},
}
LD, ST = counters.LD_SECTORS, counters.ST_SECTORS


def _spec(**traffic):
    raw = copy.deepcopy(VALID)
    raw["checks"]["traffic"].update(traffic)
    return spec_module.from_dict(raw)


def test_default_traffic_sums_loads_stores_and_global_atomics():
    spec = _spec()
    assert counters.compared("traffic", spec.checks["traffic"]) == (
        LD, ST, counters.ATOM_SECTORS, counters.RED_SECTORS)
    metrics = counters.ncu_metrics(spec)
    for m in (counters.ATOM_SECTORS, counters.RED_SECTORS, counters.ATOM_REQUESTS, counters.RED_REQUESTS):
        assert m in metrics


def test_a_spec_names_the_counters_its_check_sums():
    spec = _spec(counters=[LD])
    assert counters.compared("traffic", spec.checks["traffic"]) == (LD,)
    check = counters.CountersCheck("traffic", counters.TRAFFIC)
    counts = {"submission": {LD: 100, counters.RED_SECTORS: 900}, "reference": {LD: 100, counters.RED_SECTORS: 4}}
    only_loads = check._score(spec.checks["traffic"], counts, {"n": 100}, "emu")
    assert only_loads.extra["ratio"] == 1.0 and only_loads.score == 5
    default = check._score(_spec().checks["traffic"], counts, {"n": 100}, "emu")
    assert default.extra["ratio"] > 9 and default.score == 0


@pytest.mark.parametrize("where, value, field", [
    ("traffic", {"counters": ["smsp__sass_inst_executed_op_shared_ld.sum"]}, "checks.traffic.counters"),
    ("traffic", {"counters": ["l1tex__t_sectors_pipe_lsu_mem_global_op_lds.sum"]}, "checks.traffic.counters"),
    ("race", {"counters": [LD]}, "checks.race.counters"),
    ("traffic", {"compare": "tolerance"}, "checks.traffic.compare"),
    ("race", {"compare": "roughly"}, "checks.race.compare"),
])
def test_bad_counters_or_compare_names_the_field(where, value, field):
    raw = copy.deepcopy(VALID)
    raw["checks"][where].update(value)
    with pytest.raises(SpecError) as err:
        spec_module.from_dict(raw)
    assert field in str(err.value)


def test_race_compare_defaults_to_bitwise():
    assert _spec().checks["race"].compare == "bitwise"
    raw = copy.deepcopy(VALID)
    raw["checks"]["race"]["compare"] = "tolerance"
    assert spec_module.from_dict(raw).checks["race"].compare == "tolerance"


def _repeat(compare_mode, launches):
    from types import SimpleNamespace

    from grader.checks.race import _repeat_problems
    from grader.run.tasks import TaskResult

    raw = copy.deepcopy(VALID)
    raw["checks"]["race"]["compare"] = compare_mode
    conf = spec_module.from_dict(raw).checks["race"]
    ctx = SimpleNamespace(results={"race:repeat": TaskResult("race:repeat", "ok", launches=tuple(launches))},
                          emu_available=False)
    extra: dict = {}
    return _repeat_problems(ctx, conf, extra), extra


def _launch(digest, ok):
    return {"digest": digest, "compare": {"ok": ok}}


@pytest.mark.parametrize("mode", ["bitwise", "tolerance"])
def test_launches_that_differ_and_are_wrong_are_a_race_in_either_mode(mode):
    problems, _ = _repeat(mode, [_launch("a", True), _launch("b", False), _launch("c", False)])
    assert problems and "3 different results (2 of them wrong)" in problems[0]


def test_float_atomics_differing_within_tolerance_pass_only_under_tolerance():
    launches = [_launch("a", True), _launch("b", True), _launch("a", True)]
    problems, _ = _repeat("bitwise", launches)
    assert problems
    problems, extra = _repeat("tolerance", launches)
    assert problems == [] and "within the tolerance" in extra["note"]
