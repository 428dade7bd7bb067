// expect: correctness
// why: only blocks that lie entirely inside the array do any work, so when n % 256 != 0 the last n % 256 elements are never written.

extern "C" __global__ void add(const float* __restrict__ x,
                               const float* __restrict__ y,
                               float* __restrict__ out,
                               int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if ((blockIdx.x + 1) * blockDim.x <= n)
        out[i] = x[i] + y[i];
}
