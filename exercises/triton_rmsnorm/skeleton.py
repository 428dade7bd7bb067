import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, out_ptr, x_row_stride, out_row_stride, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0)
    # TODO: the start of this program's row in x and in out (the row stride, in elements)
    x_row = x_ptr
    out_row = out_ptr
    col = tl.arange(0, BLOCK)
    # TODO: the mask: BLOCK is a power of two >= cols, so some lanes have no column
    # TODO: load the row and w under the mask; what must a masked-off lane add to the sum of squares?
    x = tl.load(x_row + col)
    w = tl.load(w_ptr + col)
    # TODO: the mean of the squares over the cols columns, then 1 / sqrt(mean + eps)
    scale = 1.0
    # TODO: store x * scale * w under the mask
    tl.store(out_row + col, x * scale * w)


def rmsnorm(x, w, out, rows, cols, eps):
    """out[r, :] = x[r, :] / sqrt(mean(x[r, :]**2) + eps) * w; x and out rows x cols, w cols, float32 torch tensors."""
    # TODO: BLOCK, the smallest power of two >= cols (triton.next_power_of_2)
    BLOCK = 128
    # TODO: one program per row
    grid = (1,)
    rmsnorm_kernel[grid](x, w, out, x.stride(0), out.stride(0), cols, eps, BLOCK=BLOCK)
