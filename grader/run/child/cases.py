"""Each launch's inputs and float64 reference, made ahead of the launches in a background thread.

A job's launches are known before the first one runs (every task lists its sizes and seeds), and
their host-side work does not depend on the submission: the inputs come from a seeded generator and
the expected values from the harness's float64 reference. On a GPU that work (a few large random
arrays and two float64 products per matmul size) took about as long as the launches themselves, one
after the other. Here one thread prepares the next cases while the GPU runs the current one; NumPy
and BLAS release the GIL for arrays of that size, so the two really overlap.

Nothing a kernel can reach changes: inputs and references stay in host memory (the device gets a
fresh copy of the inputs at each launch), and each launch still gets exactly the arrays its seed
gives. Repeated launches with one seed (the race check's) share one case, and one comparison per
distinct output (by its digest) instead of one per launch.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import numpy as np

Key = tuple[int, tuple[tuple[str, int], ...]]


def case_key(seed: int, sizes: Mapping[str, int]) -> Key:
    """The identity of a case: its seed and its sizes."""
    return int(seed), tuple(sorted((str(k), int(v)) for k, v in sizes.items()))


@dataclass
class Case:
    """One seed's inputs at one size, its float64 reference (where a launch compares), and the
    comparisons already made against it, by output digest."""

    inputs: dict[str, np.ndarray]
    expected: dict[str, np.ndarray] | None = None
    magnitude: dict[str, np.ndarray] | None = None
    compared: dict[str, dict[str, Any]] = field(default_factory=dict)


class CaseSource:
    """The cases of one job, made in order by one background thread, at most `ahead` cases before the
    launch that needs them (a bound on the host memory they hold)."""

    def __init__(self, harness: Any, planned: Iterable[tuple[int, Mapping[str, int], bool]], ahead: int = 2) -> None:
        self.harness = harness
        self._order: list[Key] = []
        self._sizes: dict[Key, dict[str, int]] = {}
        self._reference: dict[Key, bool] = {}
        for seed, sizes, compare in planned:
            key = case_key(seed, sizes)
            if key not in self._sizes:
                self._order.append(key)
                self._sizes[key] = dict(sizes)
            self._reference[key] = self._reference.get(key, False) or bool(compare)
        self._index = {key: i for i, key in enumerate(self._order)}
        self._ahead = max(int(ahead), 1)
        self._done: dict[Key, Case | BaseException] = {}
        self._position = 0  # index of the case the launches are at
        self._closed = False
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None
        if self._order:
            self._thread = threading.Thread(target=self._make_all, name="cases", daemon=True)
            self._thread.start()

    def case(self, seed: int, sizes: Mapping[str, int], reference: bool) -> Case:
        """The case of one launch: made ahead if it was planned, else now. `reference`: whether the
        launch needs the expected values (they are added now if the plan did not ask for them)."""
        key = case_key(seed, sizes)
        index = self._index.get(key)
        if index is None:
            found = self._make(key, dict(sizes), reference)
        else:
            with self._changed:
                if index > self._position:
                    self._position = index
                    for earlier in self._order[:index]:  # what the launches have gone past
                        self._done.pop(earlier, None)
                    self._changed.notify_all()
                while key not in self._done and index >= self._position:
                    self._changed.wait()
                found = self._done.get(key)
            if found is None:  # asked again after the launches had gone past it: made once more
                found = self._make(key, dict(sizes), reference)
        if isinstance(found, BaseException):
            raise found
        if reference and found.expected is None:
            found.expected, found.magnitude = self._reference_of(found.inputs, self._sizes.get(key, dict(sizes)))
        return found

    def close(self) -> None:
        """Stop making cases (the job is over, or ended early)."""
        with self._changed:
            self._closed = True
            self._done.clear()
            self._changed.notify_all()

    def _make_all(self) -> None:
        for index, key in enumerate(self._order):
            with self._changed:
                while not self._closed and index > self._position + self._ahead:
                    self._changed.wait()
                if self._closed:
                    return
                if index < self._position:
                    continue  # the launches went past it (its task was skipped)
            try:
                made: Case | BaseException = self._make(key, self._sizes[key], self._reference[key])
            except BaseException as exc:  # noqa: BLE001 - raised again in the launch that asks for it
                made = exc
            with self._changed:
                if self._closed:
                    return
                if index >= self._position:
                    self._done[key] = made
                self._changed.notify_all()

    def _make(self, key: Key, sizes: dict[str, int], reference: bool) -> Case:
        inputs = self.harness.make_inputs(sizes, np.random.default_rng(key[0]))
        for array in inputs.values():
            array.flags.writeable = False  # shared by the launches of one seed: nothing may change it
        case = Case(inputs)
        if reference:
            case.expected, case.magnitude = self._reference_of(inputs, sizes)
        return case

    def _reference_of(self, inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int]):
        expected = self.harness.reference(inputs, sizes)
        return expected, self.harness.magnitude(inputs, sizes, expected)


def planned_cases(tasks: Iterable[Any]) -> list[tuple[int, Mapping[str, int], bool]]:
    """(seed, sizes, compares) of every launch the tasks will make, in order. A timing uses its first
    seed's inputs; its reference is computed where it is cheapest (grader.run.child.timing)."""
    return [(seed, task.sizes, bool(task.compare) and task.kind != "time")
            for task in tasks for seed in (task.seeds[:1] if task.kind == "time" else task.seeds)]

