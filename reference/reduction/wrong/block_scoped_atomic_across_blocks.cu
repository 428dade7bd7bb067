// expect: race
// also: correctness
// why: each block adds its sum with atomicAdd_block, which is atomic only among the threads of one block; every block adds to the same out, so the blocks' read-modify-writes race and updates can be lost (a race between blocks on global memory).

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
    if (t == 0)
        atomicAdd_block(out, s[0]);
}
