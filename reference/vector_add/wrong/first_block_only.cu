// expect: correctness
// why: the guard compares the global index with blockDim.x instead of n, so only the first block writes its elements.

extern "C" __global__ void add(const float* __restrict__ x,
                               const float* __restrict__ y,
                               float* __restrict__ out,
                               int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < blockDim.x && i < n)
        out[i] = x[i] + y[i];
}
