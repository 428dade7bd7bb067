// expect: correctness
// why: it multiplies b by sigmoid(a) and forgets the factor a of silu(a) = a * sigmoid(a).

extern "C" __global__ void swiglu(const float* __restrict__ a,
                                  const float* __restrict__ b,
                                  float* __restrict__ out,
                                  int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const float v = a[i];
        out[i] = 1.0f / (1.0f + expf(-v)) * b[i];
    }
}
