// expect: memory-safety
// why: the guard is i <= n, so the thread with i == n reads one element past x and y and writes one past out.

extern "C" __global__ void add(const float* __restrict__ x,
                               const float* __restrict__ y,
                               float* __restrict__ out,
                               int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n)
        out[i] = x[i] + y[i];
}
