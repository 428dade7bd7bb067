# expect: memory-safety
# also: correctness
# why: the store has no mask: the last row's BLOCK - cols spare lanes write past the end of out (earlier rows' spare lanes land on the next row, which its own program also stores: on the CPU's interpreter, which runs the programs in order, the row's own store comes last; on a GPU the programs run at once and the spare lanes' values can land last, so correctness fails there too).
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
    tl.store(out_row + col, x * scale * w)


def rmsnorm(x, w, out, rows, cols, eps):
    BLOCK = triton.next_power_of_2(cols)
    rmsnorm_kernel[(rows,)](x, w, out, x.stride(0), out.stride(0), cols, eps, BLOCK=BLOCK)
