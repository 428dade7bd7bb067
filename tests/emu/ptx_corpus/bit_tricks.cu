// Bit-field extract/insert (asm bfe/bfi), __byte_perm (prmt), funnel shifts, 64-bit shifts.
extern "C" __global__ void bits(const unsigned* a, const unsigned* b, unsigned* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned x = a[i], y = b[i];
  unsigned* o = out + 8 * i;
  unsigned e, f;
  int se;
  asm("bfe.u32 %0, %1, 4, 8;" : "=r"(e) : "r"(x));
  asm("bfe.s32 %0, %1, 20, 9;" : "=r"(se) : "r"(x));
  asm("bfi.b32 %0, %1, %2, 8, 12;" : "=r"(f) : "r"(y), "r"(x));
  o[0] = e; o[1] = (unsigned)se; o[2] = f;
  o[3] = __byte_perm(x, y, 0x5140);
  o[4] = __funnelshift_l(x, y, i % 40);
  o[5] = __funnelshift_r(x, y, i % 40);
  o[6] = __funnelshift_lc(x, y, i % 40);
  o[7] = (unsigned)((((unsigned long long)y << 32) | x) >> (i % 64));
}
