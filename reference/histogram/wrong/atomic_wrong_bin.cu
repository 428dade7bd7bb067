// expect: correctness
// why: counts with atomicAdd on shared memory and merges with atomicAdd, but into the wrong bin (value + 1, wrapped): every count lands next door. The atomics are right, so no atomicAdd hint may show.

#define BINS 256

extern "C" __global__ void histogram(const unsigned char* __restrict__ data, unsigned int* bins, int n)
{
    __shared__ unsigned int local[BINS];
    const int t = threadIdx.x;

    for (int b = t; b < BINS; b += blockDim.x)
        local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + t; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&local[(data[i] + 1) & (BINS - 1)], 1u);
    __syncthreads();
    for (int b = t; b < BINS; b += blockDim.x) {
        const unsigned int c = local[b];
        if (c)
            atomicAdd(&bins[b], c);
    }
}
