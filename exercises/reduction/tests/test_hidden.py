"""Hidden tests for reduction, run against the student's kernel (fixtures: launch, make_inputs)."""
import numpy as np


def test_ones_sum_to_n_exactly(launch, make_inputs):
    # Integers up to 2^24 add exactly in float32 in any order: any difference is a lost or double count.
    n = 5000
    out = launch({"n": n}, {"x": np.ones(n, np.float32), "out": np.zeros(1, np.float32)})
    assert out.error is None, out.error
    assert out["out"][0] == n, f"the sum of {n} ones came out as {out['out'][0]} (a block lost or counted twice?)"


def test_out_is_accumulated_not_overwritten(launch, make_inputs):
    n = 300
    out = launch({"n": n}, {"x": np.full(n, 2.0, np.float32), "out": np.full(1, 10.0, np.float32)})
    assert out.error is None, out.error
    assert out["out"][0] == 10 + 2 * n, (f"out started at 10 and should end at {10 + 2 * n}, got {out['out'][0]}: "
                                         "add each block's sum to out with atomicAdd, do not store it")


def test_elements_past_n_are_not_added(launch, make_inputs):
    n = 257  # the second block has one element: its other 255 threads must add nothing
    x = np.full(n, 1.0, np.float32)
    out = launch({"n": n}, {"x": x, "out": np.zeros(1, np.float32)})
    assert out.error is None, out.error
    assert out["out"][0] == n, f"n = 257 ones gave {out['out'][0]}: threads with i >= n must contribute 0"
