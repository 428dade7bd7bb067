// rmsnorm: root-mean-square normalisation of each row, as in LLaMA-style transformers.
//
//   out[r, j] = w[j] * x[r, j] / sqrt(mean_j(x[r, :]^2) + eps)
//
// x and out are rows x h float32, row-major; w has h elements.
// Launch: one block per row (grid = rows), 256 threads per block. h can be anything from 1 up:
// smaller than 256, not a multiple of 256, or many times 256.
//
// Fill in the two TODOs. Do not change the kernel's name or parameters.
// You may #include <cstdio> (for printf), <cstdint>, <cmath>, <cfloat>, <climits>, <cassert>,
// <cuda_runtime.h> or <cuda_fp16.h> as with nvcc; no other header, and the built-ins need none.

extern "C" __global__ void rmsnorm(const float* __restrict__ x,
                                   const float* __restrict__ w,
                                   float* __restrict__ out,
                                   int rows,
                                   int h,
                                   float eps)
{
    __shared__ float warp_sums[32];   // room for one partial sum per warp
    __shared__ float inv_rms;         // 1 / sqrt(mean + eps), shared by the whole block

    const int r = blockIdx.x;
    if (r >= rows)
        return;
    const float* xr = x + (size_t)r * h;
    float* outr = out + (size_t)r * h;

    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;

    // TODO(1): the block reduction. Set inv_rms = rsqrtf(sum_j xr[j]^2 / h + eps).
    //   a) Each thread sums the squares of its share of the row. Let thread tid take
    //      j = tid, tid + blockDim.x, tid + 2 * blockDim.x, ... while j < h: a warp then
    //      reads 32 consecutive floats per step, and h need not be a multiple of 256.
    //   b) Combine the 256 partial sums. Either a tree in shared memory, or
    //      __shfl_down_sync(0xffffffff, s, offset) for offset = 16, 8, 4, 2, 1 inside each
    //      warp, then lane 0 of each warp writes warp_sums[warp], and one warp adds those.
    //   c) One thread writes inv_rms.
    //   Between a shared-memory write by one warp and a read by another there must be a
    //   __syncthreads(), reached by every thread of the block (so never inside a branch
    //   that only some threads take).

    // TODO(2): the scaling pass. Every thread reads inv_rms (after the barrier that follows
    //   its write) and writes outr[j] = w[j] * xr[j] * inv_rms for its own j, with the same
    //   strided loop as in TODO(1)a.
}
