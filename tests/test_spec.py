import copy

import pytest

from grader import spec as spec_module
from grader.errors import SpecError
from grader.exercise import discover, load
from grader.staff import conventions

VALID = {
    "id": "toy", "title": "Toy", "sizes": ["n"],
    "kernel": {"name": "k", "params": [
        {"name": "x", "type": "const float*", "role": "in", "shape": ["n"]},
        {"name": "y", "type": "float*", "role": "out", "shape": ["n"]},
        {"name": "n", "type": "int", "value": "n"}],
        "block": ["256"], "grid": ["ceil(n / 256)"]},
    "cases": {"public": [{"n": 1}, {"n": 1000}]},
    "checks": {"correctness": {"points": 10}, "race": {"points": 5, "size": {"n": 100}}},
}


def test_valid_spec_builds_frozen_objects():
    spec = spec_module.from_dict(VALID)
    assert spec.kernel.signature == 'extern "C" __global__ void k(const float* x, float* y, int n)'
    assert spec.kernel.launch_for({"n": 1000}) == ((4, 1, 1), (256, 1, 1), 0)
    assert spec.max_score == 15
    assert list(spec.checks) == ["correctness", "race"]


@pytest.mark.parametrize("mutate, field", [
    (lambda d: d["kernel"].pop("grid"), "kernel"),
    (lambda d: d["kernel"]["params"][0].update(type="bool*"), "kernel.params.0.type"),
    (lambda d: d["kernel"].update(grid=["ceil(M / 2)"]), "kernel.grid"),
    (lambda d: d["cases"]["public"].append({"m": 3}), "cases.public.2"),
    (lambda d: d["checks"]["race"].pop("size"), "checks.race"),
    (lambda d: d["checks"].update(speed={"points": 1}), "checks"),
    (lambda d: d["kernel"].update(block=["2048"]), "kernel.block"),
])
def test_bad_spec_names_the_field(mutate, field):
    raw = copy.deepcopy(VALID)
    mutate(raw)
    with pytest.raises(SpecError) as err:
        spec_module.from_dict(raw, source="exercises/toy/spec.toml")
    assert "exercises/toy/spec.toml" in str(err.value)
    assert field in str(err.value)


def test_every_shipped_exercise_loads(root):
    exercises = discover(root / "exercises")
    assert "level2" in {e.id for e in exercises}
    for ex in exercises:  # a skeleton, a solution, a public size (grader.staff.conventions; validate checks it too)
        assert conventions.layout(ex) == [], ex.id


def test_folder_name_must_match_id(tmp_path, level2):
    bad = tmp_path / "other"
    bad.mkdir()
    (bad / "spec.toml").write_text((level2 / "spec.toml").read_text())
    (bad / "harness.py").write_text("def reference(i, s): return {}")
    with pytest.raises(SpecError, match="folder name"):
        load(bad)


def test_hidden_tests_table_adds_its_points_in_its_category():
    raw = copy.deepcopy(VALID)
    raw["hidden_tests"] = {"points": 5, "category": "race"}
    spec = spec_module.from_dict(raw)
    assert spec.max_score == 20 and spec.hidden_tests.category == "race"
    raw["hidden_tests"] = {"points": 5, "category": "compile"}
    with pytest.raises(SpecError, match="hidden_tests"):
        spec_module.from_dict(raw)


def test_race_warp_synchronous_defaults_to_race_and_may_allow_the_legacy_idiom():
    assert spec_module.from_dict(VALID).checks["race"].warp_synchronous == "race"
    raw = copy.deepcopy(VALID)
    raw["checks"]["race"]["warp_synchronous"] = "allow"
    assert spec_module.from_dict(raw).checks["race"].warp_synchronous == "allow"


@pytest.mark.parametrize("mutate, said", [
    (lambda d: d["checks"]["race"].update(warp_synchronous="yes"), "checks.race.warp_synchronous"),
    (lambda d: d["checks"]["correctness"].update(warp_synchronous="allow"), "checks.correctness.warp_synchronous"),
    # racecheck reports the idiom, so "always" running it would fail what "allow" allows
    (lambda d: d["checks"]["race"].update(warp_synchronous="allow", sanitizer="always"), "sanitizer"),
])
def test_race_warp_synchronous_is_validated(mutate, said):
    raw = copy.deepcopy(VALID)
    mutate(raw)
    with pytest.raises(SpecError, match=said):
        spec_module.from_dict(raw, source="exercises/toy/spec.toml")
