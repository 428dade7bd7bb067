// 64-bit integer arithmetic: mul, mul.hi via __mul64hi, shifts, popc, mixed widths, unsigned wrap.
extern "C" __global__ void i64(const long long* a, const long long* b, long long* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  long long x = a[i], y = b[i];
  long long* o = out + 6 * i;
  o[0] = x * y;
  o[1] = __mul64hi(x, y);
  o[2] = (x << 7) ^ (y >> 3);
  o[3] = (long long)((unsigned long long)x >> 11);
  o[4] = __popcll(x) + __clzll(y) + __ffsll(x);
  o[5] = (long long)((unsigned)x * (unsigned)y) + (long long)(int)x * (int)y;
}
