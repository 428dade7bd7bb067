// expect: correctness
// why: it uses exp(+a) instead of exp(-a), which computes a * sigmoid(-a) instead of a * sigmoid(a).

extern "C" __global__ void swiglu(const float* __restrict__ a,
                                  const float* __restrict__ b,
                                  float* __restrict__ out,
                                  int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const float v = a[i];
        out[i] = v / (1.0f + expf(v)) * b[i];
    }
}
