// Integer dot products: __dp4a (signed and unsigned) and __dp2a_lo / __dp2a_hi.
extern "C" __global__ void dots(const int* a, const int* b, const int* c, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int x = a[i], y = b[i], z = c[i];
  out[4 * i + 0] = __dp4a(x, y, z);
  out[4 * i + 1] = (int)__dp4a((unsigned)x, (unsigned)y, (unsigned)z);
  out[4 * i + 2] = __dp2a_lo(x, y, z);
  out[4 * i + 3] = __dp2a_hi(x, y, z);
}
