import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, cols, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0)
    # TODO: the start of this program's row in x and in out (the row stride, in elements)
    x_row = x_ptr
    out_row = out_ptr
    col = tl.arange(0, BLOCK)
    # TODO: the mask: BLOCK is a power of two >= cols, so some lanes have no column
    # TODO: load the row under the mask; a masked-off lane must not win the max (other=)
    x = tl.load(x_row + col)
    # TODO: subtract the row's max before exp (exp of a large logit overflows fp32)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    # TODO: store under the mask
    tl.store(out_row + col, num / den)


def softmax(x, out, rows, cols):
    """out[r, :] = softmax(x[r, :]) for each of the rows; x and out are rows x cols float32 torch tensors."""
    # TODO: BLOCK, the smallest power of two >= cols (triton.next_power_of_2)
    BLOCK = 128
    # TODO: one program per row
    grid = (1,)
    softmax_kernel[grid](x, out, x.stride(0), out.stride(0), cols, BLOCK=BLOCK)
