// expect: correctness
// why: the gate is applied to the wrong input: it computes silu(b) * a instead of silu(a) * b.

extern "C" __global__ void swiglu(const float* __restrict__ a,
                                  const float* __restrict__ b,
                                  float* __restrict__ out,
                                  int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const float v = b[i];
        out[i] = v / (1.0f + expf(-v)) * a[i];
    }
}
