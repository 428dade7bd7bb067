// Recursion: a __device__ function that calls itself. The emulator refuses it (by name and line).
__device__ int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
extern "C" __global__ void fib_kernel(const int* in, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = fib(in[i]);
}
