// expect: memory-safety
// also: correctness
// why: __half2 pairs are loaded whatever K is: when K is odd, every odd row of A starts 2 bytes past a 4-byte boundary, so its __half2 loads are misaligned (a fault on a GPU); the odd tail element is added separately.
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
    {
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
        if ((K & 1) && lane == 0)    // the last element of an odd row
            acc = fmaf(__half2float(a[K - 1]), __half2float(x[K - 1]), acc);
    }
    for (int k = 16; k > 0; k >>= 1)
        acc += __shfl_down_sync(0xffffffffu, acc, k);
    if (lane == 0)
        y[row] = acc;
}
