// expect: correctness
// why: only block 0 adds its sum to out: right while one block covers n, wrong above 256, where the other blocks' sums are lost (no atomics: the hint to combine the blocks with atomicAdd applies).

#define BLOCK 256

extern "C" __global__ void reduce_sum(const float* __restrict__ x, float* out, int n)
{
    __shared__ float s[BLOCK];
    const int t = threadIdx.x;
    const int i = blockIdx.x * BLOCK + t;

    s[t] = (i < n) ? x[i] : 0.0f;
    __syncthreads();
    for (int k = BLOCK / 2; k > 0; k >>= 1) {
        if (t < k)
            s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0 && blockIdx.x == 0)
        *out += s[0];
}
