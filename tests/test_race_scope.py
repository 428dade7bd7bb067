"""The race check on atomic scope and on the legacy volatile warp-synchronous idiom: the messages
name what happened, and `[checks.race] warp_synchronous = "allow"` turns the idiom into a note."""
from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from grader import api
from grader.checks import by_line, findings
from grader.run.tasks import Task, TaskResult

ROOT = Path(__file__).resolve().parent.parent
VOLATILE_TAIL = ROOT / "reference" / "reduction" / "wrong" / "volatile_warp_tail.cu"


def _hazard(kind, first, second, scope, space="shared", cause="", count=128):
    return {"kind": kind, "first_line": first, "second_line": second, "count": count, "block": [0, 0, 0],
            "example": "lane (16, 0, 0) wrote shared offset 64", "space": space, "scope": scope, "cause": cause}


def _ctx(hazards, warp_synchronous="race", source="") -> SimpleNamespace:
    task = Task(id="emu:n = 1000", kind="run", backend="emu", sizes={"n": 1000}, seeds=(1,))
    result = TaskResult(task.id, "ok", launches=({"seed": 1, "emu": {"hazards": hazards}},))
    race = SimpleNamespace(warp_synchronous=warp_synchronous)
    return SimpleNamespace(planned={task.id: task}, results={task.id: result}, spec=SimpleNamespace(checks={"race": race}),
                           quote=lambda line: f"k.cu:{line}" if line else "k.cu", source=source, runner=None)


TAIL = [_hazard("RAW", 22, 23, "warp", cause="volatile"), _hazard("WAR", 23, 23, "warp", cause="volatile"),
        _hazard("RAW", 26, 27, "warp", cause="volatile")]


def test_the_volatile_tail_is_one_race_message_naming_its_lines_and_the_fix():
    messages = findings.race_messages(_ctx(TAIL))
    assert len(messages) == 1
    text = messages[0]
    assert "k.cu:22 to k.cu:27 (lines 22, 23, 26, 27)" in text
    assert "Volta" in text and "lock-step" in text and "__syncwarp()" in text and "__shfl_down_sync()" in text
    assert findings.race_notes(_ctx(TAIL)) == []


def test_allowed_volatile_tail_is_a_note_and_no_race_but_other_races_still_count():
    plain = _hazard("RAW", 10, 12, "block")
    ctx = _ctx(TAIL + [plain], warp_synchronous="allow")
    messages = findings.race_messages(ctx)
    assert len(messages) == 1 and "read-after-write race" in messages[0]  # only the barrier race fails
    notes = findings.race_notes(ctx)
    assert len(notes) == 1 and notes[0].startswith("note (not failed") and "lines 22, 23, 26, 27" in notes[0]
    # a plain (non-volatile) race inside a warp is never allowed
    ctx = _ctx([_hazard("RAW", 22, 23, "warp")], warp_synchronous="allow")
    assert len(findings.race_messages(ctx)) == 1 and findings.race_notes(ctx) == []


def test_block_scoped_atomics_across_blocks_say_to_use_device_scope():
    h = _hazard("WAW", 21, 21, "grid", space="global", cause="block-atomic", count=4)
    (text,) = findings.race_messages(_ctx([h]))
    assert text.startswith("race between blocks on global memory: k.cu:21 updates the same global memory")
    assert "atomic only with respect to the threads of its own block" in text and "atomicAdd (device scope)" in text
    # a plain read-modify-write between blocks keeps its own message
    (plain,) = findings.race_messages(_ctx([_hazard("WAW", 21, 21, "grid", space="global")]))
    assert "plain write" in plain and "_block" not in plain
    kinds = [f["kind"] for f in by_line.race_findings(_ctx([h] + TAIL[:1]))]
    assert kinds == ["write-after-write race between blocks (block-scoped atomics, global memory)",
                     "read-after-write race inside a warp (volatile warp-synchronous code)"]


def test_an_exercise_that_allows_the_idiom_passes_the_volatile_tail_with_a_note(tmp_path):
    """Graded in full on the emulator: the reduction exercise with `warp_synchronous = "allow"`
    gives the legacy tail full marks for races and correctness, and names it; the shipped exercise
    (the default) fails it (the wrong file's header, checked by `grade validate`)."""
    exercise = tmp_path / "reduction"
    shutil.copytree(ROOT / "exercises" / "reduction", exercise, ignore=shutil.ignore_patterns("__pycache__"))
    spec = exercise / "spec.toml"
    text = spec.read_text()
    assert "[checks.race]\n" in text
    spec.write_text(text.replace("[checks.race]\n", "[checks.race]\nwarp_synchronous = \"allow\"\n"))
    report = api.grade(exercise, VOLATILE_TAIL, backend="emu", seed=1, workdir=tmp_path / "work")
    tests = {t.category: t for t in report.tests}
    race, correctness = tests["race"], tests["correctness"]
    assert race.passed and race.score == race.max_score, race.output
    assert "this exercise allows legacy warp-synchronous code" in race.output and "__syncwarp()" in race.output
    assert race.extra["warp_synchronous"] == "allowed"
    assert correctness.passed, correctness.output


def test_block_scoped_atomics_on_shared_memory_pass_the_race_check(tmp_path):
    """The histogram's reference with its shared-memory counting done by atomicAdd_block (enough:
    shared memory belongs to one block) and its merge by atomicAdd keeps full marks for races; the
    same merge with atomicAdd_block is the corpus's block_scoped_merge.cu, which fails."""
    source = (ROOT / "reference" / "histogram" / "solution.cu").read_text()
    counting = "atomicAdd(&local[data[i]], 1u);"
    assert counting in source
    submission = tmp_path / "shared_block_atomics.cu"
    submission.write_text(source.replace(counting, "atomicAdd_block(&local[data[i]], 1u);"))
    report = api.grade(ROOT / "exercises" / "histogram", submission, backend="emu", seed=1, workdir=tmp_path / "work")
    race = next(t for t in report.tests if t.category == "race")
    assert race.passed, race.output
    assert report.score == report.max_score, [(t.name, t.output[:200]) for t in report.tests if not t.passed]


# A store with no row guard: a thread whose column runs past the end of its row stores to the first
# element of the next row, which that row's own thread stores to as well (the held-out unguarded
# tiled matmuls and transposes; on an H200 their launches disagree).
UNGUARDED_STORE = r'''
extern "C" __global__ void fill(float* c, int n) {
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  c[row * n + col] = (float)(row * 1000 + col);
}
'''


@pytest.fixture
def compile_ptx():
    """CUDA source -> PTX with NVRTC (no GPU needed), as tests/emu/conftest.py does."""
    nvrtc = pytest.importorskip("cupy_backends.cuda.libs.nvrtc")

    def compile_(src: str) -> str:
        prog = nvrtc.createProgram(src, "k.cu", [], [])
        nvrtc.compileProgram(prog, ["-lineinfo", "--gpu-architecture=compute_90"])
        ptx = nvrtc.getPTX(prog)
        return ptx.decode() if isinstance(ptx, bytes) else ptx
    return compile_


def _emulated(compile_ptx, n=6):
    from grader.backends.emu import findings_dict
    from grader.emu import Emulator

    emu = Emulator(compile_ptx(UNGUARDED_STORE))
    c = emu.alloc(4 * n * n, name="c")
    report = emu.launch("fill", grid=(2, 2, 1), block=(4, 4, 1), args=[c, n])
    assert report.status == "ok", report.message
    task = Task(id=f"emu:n = {n}", kind="run", backend="emu", sizes={"n": n}, seeds=(1,))
    result = TaskResult(task.id, "ok", launches=({"seed": 1, "emu": findings_dict(report)},))
    race = SimpleNamespace(warp_synchronous="race")
    return SimpleNamespace(planned={task.id: task}, results={task.id: result}, spec=SimpleNamespace(checks={"race": race}),
                           quote=lambda line: f"k.cu:{line}" if line else "k.cu", source=UNGUARDED_STORE, runner=None)


def test_an_unguarded_store_that_lands_on_another_threads_element_is_a_race_named_for_its_cause(compile_ptx):
    """The launch also writes past the end of c (memory safety's bug), and the two threads that store
    to one element inside c race all the same: one message, for the missing bound, not for atomics."""
    ctx = _emulated(compile_ptx)
    assert findings.memory_messages(ctx)  # rows past the last write outside c
    (text,) = findings.race_messages(ctx)
    assert text.startswith("WAW race on global memory: k.cu:5 and k.cu:5 store to the same element")
    assert "not checked against its own bound" in text and "atomicAdd" not in text


def test_a_race_between_blocks_without_a_stray_access_keeps_the_advice_on_combining_blocks():
    (text,) = findings.race_messages(_ctx([_hazard("WAW", 9, 9, "grid", space="global", count=4)]))
    assert text.startswith("race between blocks on global memory") and "atomicAdd" in text


def test_a_race_between_blocks_in_a_kernel_that_already_uses_atomics_names_the_plain_access():
    """Bins zeroed with plain stores by every block while other blocks atomicAdd into them: advice to
    combine the blocks with atomicAdd would contradict the code in front of the student."""
    source = "__global__ void h(unsigned* bins) { bins[threadIdx.x] = 0; atomicAdd(&bins[threadIdx.x], 1u); }"
    (text,) = findings.race_messages(_ctx([_hazard("WAW", 9, 12, "grid", space="global", count=4)], source=source))
    assert "already adds with atomics, so the plain access is what races" in text
    assert "combine the blocks' results with an atomic" not in text
