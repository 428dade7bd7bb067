// expect: correctness
// why: it computes x[i] - y[i] instead of x[i] + y[i].

extern "C" __global__ void add(const float* __restrict__ x,
                               const float* __restrict__ y,
                               float* __restrict__ out,
                               int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = x[i] - y[i];
}
