// Directed-rounding and cache-hint intrinsics: __fadd_rz/__fmul_rd/__fdiv_ru/__fsqrt_rn/__fmaf_rz,
// __dadd_rn/__dmul_ru, __ldcs/__ldcg/__ldlu/__stcs/__stwt, __threadfence, volatile, a used atomicAdd result.
extern "C" __global__ void rounding(const float* a, const float* b, const double* d, float* out, double* dout,
                                    int* counter, int* slots, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = __ldcs(&a[i]), y = __ldcg(&b[i]);
  float* o = out + 6 * i;
  o[0] = __fadd_rz(x, y);
  o[1] = __fmul_rd(x, y);
  o[2] = __fdiv_ru(x, y);
  o[3] = __fsqrt_rn(fabsf(x));
  o[4] = __fmaf_rz(x, y, 1.0f);
  __stcs(&o[5], __ldlu(&a[i]) * 2.0f);
  double z = d[i];
  dout[2 * i] = __dadd_rn(z, 1.0 / 3.0);
  __stwt(&dout[2 * i + 1], __dmul_ru(z, 1.0 / 3.0));
  int slot = atomicAdd(counter, 1);
  __threadfence();
  volatile int* vs = slots;
  vs[slot] = i;
}
