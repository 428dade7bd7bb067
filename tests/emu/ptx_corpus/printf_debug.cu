// Device printf of several argument types, guarded to one thread.
#include <cstdio>
extern "C" __global__ void debug_print(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (i == 0) printf("n=%d first=%f id=%u big=%lld\n", n, in[0], threadIdx.x, (long long)n * 1000000000LL);
  out[i] = in[i] + 1.0f;
}
