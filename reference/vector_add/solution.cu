// Reference solution for vector_add: out[i] = x[i] + y[i] for i < n.
// Launch: 256 threads per block, ceil(n / 256) blocks.

extern "C" __global__ void add(const float* __restrict__ x,
                               const float* __restrict__ y,
                               float* __restrict__ out,
                               int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = x[i] + y[i];
}
