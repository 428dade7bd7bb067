// expect: memory-safety
// why: the guard is i <= n, so the thread with i == n reads one element past a and b and writes one past out.

extern "C" __global__ void swiglu(const float* __restrict__ a,
                                  const float* __restrict__ b,
                                  float* __restrict__ out,
                                  int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) {
        const float v = a[i];
        out[i] = v / (1.0f + expf(-v)) * b[i];
    }
}
