// __noinline__ device functions: PTX .func bodies reached by call, with scalar, pointer and float returns.
__device__ __noinline__ int poly(int x, int y) { return x * x + 3 * y - 1; }
__device__ __noinline__ float lerp(float a, float b, float t) { return a + t * (b - a); }
__device__ __noinline__ void store_pair(int* p, int a, int b) { p[0] = a; p[1] = b; }
extern "C" __global__ void calls(const int* in, int* out, float* outf, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v = in[i];
  int r = poly(v, i);
  if (v & 1) r = poly(r, 1);
  store_pair(out + 2 * i, r, v);
  outf[i] = lerp((float)v, (float)i, 0.25f);
}
