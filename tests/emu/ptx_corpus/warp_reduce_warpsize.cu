// Warp-sum reduction written with warpSize: lane and warp index by % and /, shuffle distance warpSize/2.
extern "C" __global__ void warp_reduce(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x % warpSize;
  int warp = threadIdx.x / warpSize;
  __shared__ float partial[32];
  float v = i < n ? in[i] : 0.0f;
  for (int o = warpSize / 2; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (blockDim.x + warpSize - 1) / warpSize ? partial[lane] : 0.0f;
    for (int o = warpSize / 2; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);
    if (lane == 0) out[blockIdx.x] = v;
  }
}
