// expect: traffic
// also: performance
// why: every thread adds its element to out with its own atomicAdd: one atomic per warp instruction reaches global memory instead of one per block, and they all wait on one address.

#define BLOCK 256

extern "C" __global__ void reduce_sum(const float* __restrict__ x, float* out, int n)
{
    __shared__ float s[BLOCK];
    const int t = threadIdx.x;
    const int i = blockIdx.x * BLOCK + t;

    if (i < n)
        atomicAdd(out, x[i]);


}
