"""Does GPU arithmetic keep a NaN's payload? (Run on a GPU.)

The grader fills outputs with a NaN of its own payload (grader.backends.base.POISON_BITS) and calls an
element "never written" when it still holds exactly those bits. That is exact if arithmetic on a
NaN returns the canonical NaN; if it kept the payload, `beta * C` with C never written would look
unwritten. This prints the bits each operation gives.
"""
from __future__ import annotations

import cupy as cp
import numpy as np

from grader.backends.base import POISON_BITS

SOURCE = r'''
extern "C" __global__ void ops(const float* x, float* out)
{
    float v = x[0];
    out[0] = 0.0f * v;
    out[1] = v + 1.0f;
    out[2] = fmaf(2.0f, 3.0f, v);
    out[3] = v * v;
    out[4] = fmaxf(v, v);
    out[5] = -v;
    out[6] = v;
}
'''

NAMES = ("0 * poison", "poison + 1", "fmaf(2, 3, poison)", "poison * poison", "fmaxf(poison, poison)", "-poison", "copy")


def main() -> None:
    x = cp.asarray(np.array([POISON_BITS[4]], dtype=np.uint32).view(np.float32))
    out = cp.zeros(len(NAMES), dtype=cp.float32)
    cp.RawKernel(SOURCE, "ops")((1,), (1,), (x, out))
    bits = out.get().view(np.uint32)
    for name, b in zip(NAMES, bits):
        print(f"{name:<24} 0x{int(b):08X}  {'poison kept' if b == POISON_BITS[4] else 'not the poison pattern'}")


if __name__ == "__main__":
    main()
