// expect: compile
// why: the kernel returns a value from a __global__ function, which must return void.

extern "C" __global__ void swiglu(const float* __restrict__ a,
                                  const float* __restrict__ b,
                                  float* __restrict__ out,
                                  int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return 0;
    const float v = a[i];
    out[i] = v / (1.0f + expf(-v)) * b[i];
}
