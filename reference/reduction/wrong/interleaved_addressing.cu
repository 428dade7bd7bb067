// expect: bank-conflicts
// also: performance
// why: interleaved addressing (s[2 * k * t] += s[2 * k * t + k]) puts the active lanes of a warp on a few banks at stride 2k, so each step needs several shared-memory wavefronts.

#define BLOCK 256

extern "C" __global__ void reduce_sum(const float* __restrict__ x, float* out, int n)
{
    __shared__ float s[BLOCK];
    const int t = threadIdx.x;
    const int i = blockIdx.x * BLOCK + t;

    s[t] = (i < n) ? x[i] : 0.0f;
    __syncthreads();
    for (int k = 1; k < BLOCK; k <<= 1) {
        const int j = 2 * k * t;
        if (j < BLOCK)
            s[j] += s[j + k];
        __syncthreads();
    }
    if (t == 0)
        atomicAdd(out, s[0]);
}
