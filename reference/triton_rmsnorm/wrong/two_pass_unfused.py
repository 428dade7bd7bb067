# expect: traffic
# why: two passes over the row in chunks of 256 (the sum of squares, then the scaled output): right, but each row of x is read from global memory twice instead of once.
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, out_ptr, x_row_stride, out_row_stride, cols, eps, CHUNK: tl.constexpr):
    row = tl.program_id(axis=0)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride
    col = tl.arange(0, CHUNK)
    acc = tl.zeros((CHUNK,), tl.float32)
    for start in range(0, cols, CHUNK):
        x = tl.load(x_row + start + col, mask=start + col < cols, other=0.0)
        acc += x * x
    scale = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / cols + eps)
    for start in range(0, cols, CHUNK):
        m = start + col < cols
        x = tl.load(x_row + start + col, mask=m, other=0.0)
        w = tl.load(w_ptr + start + col, mask=m, other=0.0)
        tl.store(out_row + start + col, x * scale * w, mask=m)


def rmsnorm(x, w, out, rows, cols, eps):
    rmsnorm_kernel[(rows,)](x, w, out, x.stride(0), out.stride(0), cols, eps, CHUNK=256)
