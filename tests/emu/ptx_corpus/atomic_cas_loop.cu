// atomicCAS loops: a float atomic max and a double atomic multiply built from CAS.
__device__ float atomic_max_float(float* addr, float v) {
  int* a = (int*)addr;
  int old = *a, assumed;
  do {
    assumed = old;
    if (__int_as_float(assumed) >= v) break;
    old = atomicCAS(a, assumed, __float_as_int(v));
  } while (assumed != old);
  return __int_as_float(old);
}
__device__ double atomic_mul_double(double* addr, double v) {
  unsigned long long* a = (unsigned long long*)addr;
  unsigned long long old = *a, assumed;
  do {
    assumed = old;
    old = atomicCAS(a, assumed, __double_as_longlong(__longlong_as_double(assumed) * v));
  } while (assumed != old);
  return __longlong_as_double(old);
}
extern "C" __global__ void cas_loops(const float* in, float* mx, double* prod, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  atomic_max_float(mx, in[i]);
  if (i < 20) atomic_mul_double(prod, 1.0 + (i % 3));
}
