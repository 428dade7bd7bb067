"""The grader's own Triton kernel, compiled and launched by a GPU child before the submission loads
(copied into the jail as tritonprobe.py): if it fails, the grading environment cannot compile or
run Triton there, which is the grader's fault. It must be a file: @triton.jit reads its source."""
import triton
import triton.language as tl


@triton.jit
def double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, 2 * tl.load(x_ptr + offsets, mask=mask), mask=mask)
