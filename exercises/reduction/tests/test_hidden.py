"""Hidden tests for reduction, run against the student's kernel (fixtures: launch, make_inputs).

Each message says what the value shows before it gives advice: a remedy for another bug misleads."""
import numpy as np

BLOCK = 256


def _blocks_text(got: float, n: int) -> str:
    """What a wrong sum of n ones says about the blocks (every block of 256 ones sums to 256)."""
    blocks = -(-n // BLOCK)
    if not np.isfinite(got):
        return "it is not a number: some thread read memory the kernel never filled (check the guards)"
    if got < n and got > 0 and got % BLOCK == 0:
        k = int(got) // BLOCK
        return (f"that is {k} whole block{'s' if k != 1 else ''} of {BLOCK}: the sums of {blocks - k} of the {blocks} "
                "blocks never reached out")
    if got > n:
        return "more than n: elements were counted twice, or threads past n added something"
    return "some elements were lost"


def test_ones_sum_to_n_exactly(launch, make_inputs):
    # Integers up to 2^24 add exactly in float32 in any order: any difference is a lost or double count.
    n = 5000
    out = launch({"n": n}, {"x": np.ones(n, np.float32), "out": np.zeros(1, np.float32)})
    assert out.error is None, out.error
    got = float(out["out"][0])
    assert got == n, f"the sum of {n} ones came out as {got}: {_blocks_text(got, n)}"


def test_out_is_accumulated_not_overwritten(launch, make_inputs):
    n = 300
    out = launch({"n": n}, {"x": np.full(n, 2.0, np.float32), "out": np.full(1, 10.0, np.float32)})
    assert out.error is None, out.error
    got = float(out["out"][0])
    block_sums = (2.0 * BLOCK, 2.0 * (n - BLOCK))  # n = 300: two blocks, of 256 and 44 elements
    if got == 2 * n:
        why = "the 10 out started with was lost: add each block's sum to out (atomicAdd), do not store it"
    elif got in block_sums:
        why = "that is one block's sum alone: out was overwritten by a block, not added to"
    elif got - 10 in block_sums:
        why = "that is 10 plus one block's sum: the other block's sum never reached out"
    else:
        why = "the sum of the blocks plus the 10 out started with is expected"
    assert got == 10 + 2 * n, f"out started at 10 and should end at {10 + 2 * n}, got {got}: {why}"


def test_elements_past_n_are_not_added(launch, make_inputs):
    n = 257  # the second block has one element: its other 255 threads must add nothing
    x = np.full(n, 1.0, np.float32)
    out = launch({"n": n}, {"x": x, "out": np.zeros(1, np.float32)})
    assert out.error is None, out.error
    got = float(out["out"][0])
    if got > n or not np.isfinite(got):
        why = "threads with i >= n added something: they must contribute 0"
    else:
        why = _blocks_text(got, n)
    assert got == n, f"n = 257 ones gave {got}: {why}"
