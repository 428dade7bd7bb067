// softmax: for every row r of x (rows x cols, row-major),
//   y[r, j] = exp(x[r, j] - m) / sum_k exp(x[r, k] - m),   m = max_k x[r, k]
//
// Launch: one block of 256 threads per row (grid = rows); dynamic shared memory of cols floats
// (extern __shared__ float row[] below). cols can be 1, not a multiple of 256, or thousands.
//
// Fill in the TODOs. Do not change the kernel's name or parameters.

#define NEG_INF __int_as_float(0xff800000)

extern "C" __global__ void softmax(const float* __restrict__ x, float* __restrict__ y, int rows, int cols)
{
    extern __shared__ float row[];      // cols floats: the row, read from global memory once
    __shared__ float partial[32];       // one value per warp, for the block reductions
    __shared__ float stat;              // a statistic every thread needs (the max, then the sum)

    const int r = blockIdx.x;
    if (r >= rows)
        return;
    const float* xr = x + (size_t)r * cols;
    float* yr = y + (size_t)r * cols;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

    // TODO(1): read the row into row[] (j = tid, tid + 256, ... while j < cols) and reduce its
    //   maximum over the block: per warp with __shfl_xor_sync, then one value per warp in
    //   partial[], then warp 0 combines them and writes stat. A __syncthreads() between every
    //   shared-memory write and the reads of other warps.

    // TODO(2): e = expf(row[j] - max) for your elements (keep them in row[]), and reduce their
    //   sum over the block the same way. Subtracting the max keeps every e in [0, 1]: without it,
    //   expf(100) is inf and the row becomes NaN.

    // TODO(3): write y[r, j] = row[j] / sum, reading x no more.
}
