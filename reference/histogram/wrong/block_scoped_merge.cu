// expect: race
// also: correctness
// why: the merge into the global bins uses atomicAdd_block, which is atomic only among the threads of one block; every block merges into the same 256 bins, so the blocks' read-modify-writes race (the shared-memory atomicAdd_block above is fine: shared memory is per block).

#define BINS 256

extern "C" __global__ void histogram(const unsigned char* __restrict__ data, unsigned int* bins, int n)
{
    __shared__ unsigned int local[BINS];
    const int t = threadIdx.x;

    for (int b = t; b < BINS; b += blockDim.x)
        local[b] = 0;
    __syncthreads();

    for (int i = blockIdx.x * blockDim.x + t; i < n; i += gridDim.x * blockDim.x)
        atomicAdd_block(&local[data[i]], 1u);
    __syncthreads();

    for (int b = t; b < BINS; b += blockDim.x) {
        const unsigned int c = local[b];
        if (c)
            atomicAdd_block(&bins[b], c);
    }
}
