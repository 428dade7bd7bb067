// Histogram with shared-memory atomics, merged into global with atomicAdd; grid-stride loop with size_t.
extern "C" __global__ void histo(const unsigned char* data, unsigned* bins, size_t n) {
  __shared__ unsigned local[64];
  for (int b = threadIdx.x; b < 64; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    atomicAdd(&local[data[i] & 63], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < 64; b += blockDim.x) atomicAdd(&bins[b], local[b]);
}
