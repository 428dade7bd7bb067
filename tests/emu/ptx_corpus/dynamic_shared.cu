// Dynamic shared memory (extern __shared__) sized at launch: a block tree reduction.
extern "C" __global__ void dyn_reduce(const float* in, float* out, int n) {
  extern __shared__ float buf[];
  int t = threadIdx.x;
  int i = blockIdx.x * blockDim.x + t;
  buf[t] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) buf[t] += buf[t + s];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = buf[0];
}
