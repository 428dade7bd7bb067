// High halves of products and averages: __umulhi, __mulhi, __umul64hi, __mul24, __sad, __hadd, __rhadd.
extern "C" __global__ void mulhi(const int* a, const int* b, long long* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int x = a[i], y = b[i];
  long long* o = out + 7 * i;
  o[0] = __umulhi((unsigned)x, (unsigned)y);
  o[1] = __mulhi(x, y);
  o[2] = (long long)__umul64hi((unsigned long long)x * 977, (unsigned long long)y * 1000003);
  o[3] = __mul24(x & 0x7fffff, y & 0xffff);
  o[4] = __sad(x, y, 5u);
  o[5] = __hadd(x, y);
  o[6] = __rhadd(x, y);
}
