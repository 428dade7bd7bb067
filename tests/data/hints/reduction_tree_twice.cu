// The tree runs twice (the first result thrown away): twice the reference's shared wavefronts, none of them conflicting.
// Reference solution for reduction: out += sum(x).
// One block of 256 threads per 256 elements: a tree in shared memory, then one atomicAdd per block.

#define BLOCK 256

extern "C" __global__ void reduce_sum(const float* __restrict__ x, float* out, int n)
{
    __shared__ float s[BLOCK];
    const int t = threadIdx.x;
    const int i = blockIdx.x * BLOCK + t;

    s[t] = (i < n) ? x[i] : 0.0f;       // threads past n add nothing
    __syncthreads();
    const float mine = s[t];
    for (int k = BLOCK / 2; k > 0; k >>= 1) {   // a first tree whose result is thrown away
        if (t < k)
            s[t] += s[t + k];
        __syncthreads();
    }
    s[t] = mine;                         // back to the loaded values: the tree again, below
    __syncthreads();

    // Sequential addressing: at each step the active threads are contiguous (whole warps idle
    // together) and a warp reads 32 consecutive floats (no bank conflict).
    for (int k = BLOCK / 2; k > 0; k >>= 1) {
        if (t < k)
            s[t] += s[t + k];
        __syncthreads();                 // every step's writes before the next step's reads
    }

    if (t == 0)
        atomicAdd(out, s[0]);            // blocks run in no fixed order: only an atomic may combine them
}
