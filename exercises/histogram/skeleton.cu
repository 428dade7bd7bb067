// histogram: bins[v] += the number of bytes of data equal to v, for the 256 values v.
//
// Launch: block 256, grid min(ceil(n / 1024), 120) (at least 1): fewer threads than elements, so
// each thread handles i = blockIdx.x * 256 + threadIdx.x, then i + gridDim.x * 256, ... while i < n.
// bins holds 256 counters that may not start at zero: add to them.
//
// Fill in the three TODOs. Do not change the kernel's name or parameters.

#define BINS 256

extern "C" __global__ void histogram(const unsigned char* __restrict__ data, unsigned int* bins, int n)
{
    __shared__ unsigned int local[BINS];   // this block's private histogram
    const int t = threadIdx.x;

    // TODO(1): zero local[] (each thread one bin), then __syncthreads().

    // TODO(2): the grid-stride loop over data: atomicAdd(&local[data[i]], 1u). Shared-memory
    //   atomics are cheap; two threads adding to one bin with a plain ++ lose counts.

    // TODO(3): after a __syncthreads(), merge: thread t adds local[t] to bins[t] with atomicAdd
    //   (other blocks add to the same bins at the same time).
}
