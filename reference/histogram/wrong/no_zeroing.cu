// expect: correctness
// also: memory-safety
// why: the private bins are never zeroed, so the counts start from whatever shared memory held.

#define BINS 256

extern "C" __global__ void histogram(const unsigned char* __restrict__ data, unsigned int* bins, int n)
{
    __shared__ unsigned int local[BINS];
    const int t = threadIdx.x;


    // Grid-stride loop: consecutive threads read consecutive bytes; the atomics stay on chip.
    for (int i = blockIdx.x * blockDim.x + t; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();                              // every count in before the merge reads them

    for (int b = t; b < BINS; b += blockDim.x) {
        const unsigned int c = local[b];
        if (c)
            atomicAdd(&bins[b], c);               // one global atomic per non-empty bin per block
    }
}
