// reduction: out += sum of the n floats of x.
//
// Launch: grid = ceil(n / 256) blocks of 256 threads; thread t of block b owns x[b * 256 + t].
// out points to one float, zero (or some value) on entry: add the sum of x to it.
//
// Fill in the three TODOs. Do not change the kernel's name or parameters.

#define BLOCK 256

extern "C" __global__ void reduce_sum(const float* __restrict__ x, float* out, int n)
{
    __shared__ float s[BLOCK];
    const int t = threadIdx.x;
    const int i = blockIdx.x * BLOCK + t;

    // TODO(1): load. s[t] = x[i], or 0 for a thread with i >= n (the last block is partial).
    //   Then a barrier: the tree below reads elements that other warps wrote.

    // TODO(2): the tree. for k = 128, 64, ..., 1: threads t < k add s[t + k] into s[t].
    //   Keep the active threads contiguous (t < k, not t % (2 * k) == 0) and a __syncthreads()
    //   after every step, outside the if, reached by all 256 threads.

    // TODO(3): combine the blocks. Thread 0 adds s[0] to *out with atomicAdd. A plain
    //   *out += s[0] loses updates: blocks run in no fixed order and at the same time.
}
