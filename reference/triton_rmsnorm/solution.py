import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, out_ptr, x_row_stride, out_row_stride, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride
    col = tl.arange(0, BLOCK)
    mask = col < cols
    x = tl.load(x_row + col, mask=mask, other=0.0)
    w = tl.load(w_ptr + col, mask=mask, other=0.0)
    mean_sq = tl.sum(x * x, axis=0) / cols
    scale = 1.0 / tl.sqrt(mean_sq + eps)
    tl.store(out_row + col, x * scale * w, mask=mask)


def rmsnorm(x, w, out, rows, cols, eps):
    BLOCK = triton.next_power_of_2(cols)
    rmsnorm_kernel[(rows,)](x, w, out, x.stride(0), out.stride(0), cols, eps, BLOCK=BLOCK)
