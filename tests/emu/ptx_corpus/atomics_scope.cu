// Scoped atomics: atomicAdd_block on shared memory, atomicAdd_system and atomicCAS_block / atomicExch_system on global.
extern "C" __global__ void atomics_scope(const int* in, int* block_sums, int* total, int* flags) {
  __shared__ int s;
  if (threadIdx.x == 0) s = 0;
  __syncthreads();
  int v = in[blockIdx.x * blockDim.x + threadIdx.x];
  atomicAdd_block(&s, v);
  atomicAdd_system(total, v);
  __syncthreads();
  if (threadIdx.x == 0) {
    block_sums[blockIdx.x] = s;
    atomicCAS_block(&flags[blockIdx.x], 0, blockIdx.x + 1);
    atomicExch_system(&flags[16 + blockIdx.x], 7);
  }
}
