// expect: race
// also: correctness
// why: there is no barrier between the load into shared memory and the first step of the tree, which reads elements other warps load.

#define BLOCK 256

extern "C" __global__ void reduce_sum(const float* __restrict__ x, float* out, int n)
{
    __shared__ float s[BLOCK];
    const int t = threadIdx.x;
    const int i = blockIdx.x * BLOCK + t;

    s[t] = (i < n) ? x[i] : 0.0f;
    for (int k = BLOCK / 2; k > 0; k >>= 1) {
        if (t < k)
            s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0)
        atomicAdd(out, s[0]);
}
