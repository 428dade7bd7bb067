// expect: race
// also: correctness
// why: the warp's 32 partial sums go through shared memory and lane 0 adds them with no __syncwarp() between the writes and its reads: lanes of a warp are not in lock-step since Volta.
#include <cuda_fp16.h>

extern "C" __global__ void half_gemv(const __half* __restrict__ A, const __half* __restrict__ x,
                                     float* __restrict__ y, int M, int K)
{
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= M)
        return;                                    // the whole warp leaves together
    const __half* a = A + (size_t)row * K;
    float acc = 0.0f;
    if ((K & 1) == 0) {
        // K even: every row starts at a multiple of 4 bytes, so pairs can be loaded as __half2
        // (one 4-byte load per lane: a warp reads 128 consecutive bytes).
        const __half2* a2 = reinterpret_cast<const __half2*>(a);
        const __half2* x2 = reinterpret_cast<const __half2*>(x);
        for (int k = lane; k < K / 2; k += 32) {
            const float2 av = __half22float2(a2[k]);
            const float2 xv = __half22float2(x2[k]);
            acc = fmaf(av.x, xv.x, acc);
            acc = fmaf(av.y, xv.y, acc);
        }
    } else {
        // K odd: row r starts at byte 2 r K, not 4-byte aligned for odd r: one half at a time
        for (int k = lane; k < K; k += 32)
            acc = fmaf(__half2float(a[k]), __half2float(x[k]), acc);
    }
    __shared__ float part[8][32];
    const int w = threadIdx.x >> 5;
    part[w][lane] = acc;
    if (lane == 0) {
        float s = 0.0f;
        for (int j = 0; j < 32; ++j)
            s += part[w][j];
        y[row] = s;
    }
}
