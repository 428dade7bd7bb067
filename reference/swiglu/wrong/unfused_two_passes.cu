// expect: traffic
// also: performance
// why: it computes silu(a) into out in one pass and multiplies by b in a second pass that reads out back, an extra store and load of every element.

extern "C" __global__ void swiglu(const float* __restrict__ a,
                                  const float* __restrict__ b,
                                  float* __restrict__ out,
                                  int n)
{
    const int first = blockIdx.x * blockDim.x + threadIdx.x;
    const int stride = gridDim.x * blockDim.x;

    // Pass 1: out = silu(a)
    for (int i = first; i < n; i += stride) {
        const float v = a[i];
        out[i] = v / (1.0f + expf(-v));
    }
    // Pass 2: out = out * b
    for (int i = first; i < n; i += stride)
        out[i] = out[i] * b[i];
}
