import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    # TODO: the offsets of this program's BLOCK elements (pid, BLOCK and tl.arange)
    offsets = tl.arange(0, BLOCK)
    # TODO: the mask: which of those offsets lie inside the n elements
    # TODO: load x and y under the mask (what does a masked-off lane get? other=)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    # TODO: store x + y under the same mask
    tl.store(out_ptr + offsets, x + y)


def add(x, y, out, n):
    """out[i] = x[i] + y[i] for i < n; x, y and out are torch tensors of n float32."""
    BLOCK = 256  # a power of two: tl.arange needs one
    # TODO: enough programs to cover all n elements, the last one partly
    grid = (n // BLOCK,)
    add_kernel[grid](x, y, out, n, BLOCK=BLOCK)
