// expect: race
// also: correctness
// why: the private bins are incremented with a plain ++ instead of atomicAdd, so threads that hit the same bin at once lose counts.

#define BINS 256

extern "C" __global__ void histogram(const unsigned char* __restrict__ data, unsigned int* bins, int n)
{
    __shared__ unsigned int local[BINS];
    const int t = threadIdx.x;

    for (int b = t; b < BINS; b += blockDim.x)   // private bins start at zero
        local[b] = 0;
    __syncthreads();                              // zeroed before any thread counts

    // Grid-stride loop: consecutive threads read consecutive bytes; the atomics stay on chip.
    for (int i = blockIdx.x * blockDim.x + t; i < n; i += gridDim.x * blockDim.x)
        local[data[i]]++;
    __syncthreads();                              // every count in before the merge reads them

    for (int b = t; b < BINS; b += blockDim.x) {
        const unsigned int c = local[b];
        if (c)
            atomicAdd(&bins[b], c);               // one global atomic per non-empty bin per block
    }
}
