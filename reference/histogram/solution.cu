// Reference solution for histogram: bins[v] += count of v in data, 256 bins.
// Each block counts into its own bins in shared memory, then merges them once into global memory.

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
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();                              // every count in before the merge reads them

    for (int b = t; b < BINS; b += blockDim.x) {
        const unsigned int c = local[b];
        if (c)
            atomicAdd(&bins[b], c);               // one global atomic per non-empty bin per block
    }
}
