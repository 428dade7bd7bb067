// Templates: a templated device functor and a templated __global__ instantiated for float and int.
template <typename T> struct Axpy {
  T a;
  __device__ T operator()(T x, T y) const { return a * x + y; }
};
template <typename T, int UNROLL>
__global__ void axpy(const T* x, T* y, T a, int n) {
  Axpy<T> f{a};
  int base = (blockIdx.x * blockDim.x + threadIdx.x) * UNROLL;
#pragma unroll
  for (int u = 0; u < UNROLL; ++u)
    if (base + u < n) y[base + u] = f(x[base + u], y[base + u]);
}
template __global__ void axpy<float, 4>(const float*, float*, float, int);
template __global__ void axpy<int, 2>(const int*, int*, int, int);
