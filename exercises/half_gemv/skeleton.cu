// half_gemv: y[r] = sum_k A[r, k] * x[k], with A (M x K, row-major) and x in IEEE half precision
// and y in float.
//
// Launch: block 256 (8 warps), grid ceil(M / 8): warp w of block b computes row b * 8 + w.
// K can be odd: then every other row of A starts at an address that is not a multiple of 4 bytes.
//
// Fill in the TODOs. Do not change the kernel's name or parameters.
#include <cuda_fp16.h>

extern "C" __global__ void half_gemv(const __half* __restrict__ A, const __half* __restrict__ x,
                                     float* __restrict__ y, int M, int K)
{
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= M)
        return;
    const __half* a = A + (size_t)row * K;
    float acc = 0.0f;   // accumulate in float: half has 11 bits, and 2048 + 1 is 2048 in half

    // TODO(1): the lanes' share of the dot product. When K is even, read A and x two halves at a
    //   time as __half2 (reinterpret_cast<const __half2*>), convert with __half22float2, and
    //   fmaf in float. When K is odd a __half2 load from an odd row would be misaligned: read one
    //   __half at a time (__half2float).

    // TODO(2): reduce acc over the warp with __shfl_down_sync (offsets 16, 8, 4, 2, 1), and let
    //   lane 0 write y[row].
}
