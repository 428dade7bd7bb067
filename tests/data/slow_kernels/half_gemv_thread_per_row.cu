// Correct but slow: one thread per row instead of one warp; lane 0 of each warp walks the row of A
// alone, the other 31 lanes leave at once.
#include <cuda_fp16.h>

extern "C" __global__ void half_gemv(const __half* __restrict__ A, const __half* __restrict__ x,
                                     float* __restrict__ y, int M, int K)
{
    const int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if ((threadIdx.x & 31) != 0 || row >= M)
        return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc = fmaf(__half2float(A[(size_t)row * K + k]), __half2float(x[k]), acc);
    y[row] = acc;
}
