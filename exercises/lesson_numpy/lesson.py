"""What the exercises share: a memory that counts what is read from it ("HBM")."""
import numpy as np


class CountingMemory:
    """Matrices A (M x K) and B (K x N) in "HBM": every element read through load() is counted.

    Read only through load(); `reads` is the number of elements read so far.
    """

    def __init__(self, A, B):
        self.A = np.array(A, dtype=np.float64)
        self.B = np.array(B, dtype=np.float64)
        self.reads = 0

    def load(self, name, rows, cols):
        """A copy of the block `name[rows, cols]` ("A" or "B", two slices), counting its elements."""
        if name not in ("A", "B"):
            raise KeyError(f"no matrix named {name!r}: use 'A' or 'B'")
        block = np.array(getattr(self, name)[rows, cols], dtype=np.float64)
        self.reads += block.size
        return block
