// __shfl_xor_sync butterfly, __shfl_sync broadcast, __shfl_up_sync inclusive scan.
extern "C" __global__ void shuffles(const int* in, int* xor_sum, int* bcast, int* scan) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x & (warpSize - 1);
  int v = in[i];
  int s = v;
  for (int m = 16; m >= 1; m >>= 1) s += __shfl_xor_sync(0xffffffff, s, m);
  xor_sum[i] = s;
  bcast[i] = __shfl_sync(0xffffffff, v, 5);
  int x = v;
  for (int d = 1; d < warpSize; d <<= 1) {
    int y = __shfl_up_sync(0xffffffff, x, d);
    if (lane >= d) x += y;
  }
  scan[i] = x;
}
