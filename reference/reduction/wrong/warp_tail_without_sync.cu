// expect: race
// also: correctness
// why: the last 32 partial sums are added by warp 0 with no __syncwarp() (and no volatile): lanes of a warp are not in lock-step since Volta, and the compiler keeps values in registers, so lanes read neighbours' sums before they are written.

#define BLOCK 256

extern "C" __global__ void reduce_sum(const float* __restrict__ x, float* out, int n)
{
    __shared__ float s[BLOCK];
    const int t = threadIdx.x;
    const int i = blockIdx.x * BLOCK + t;

    s[t] = (i < n) ? x[i] : 0.0f;
    __syncthreads();
    for (int k = BLOCK / 2; k > 32; k >>= 1) {
        if (t < k)
            s[t] += s[t + k];
        __syncthreads();
    }
    if (t < 32) {
        s[t] += s[t + 32];
        s[t] += s[t + 16];
        s[t] += s[t + 8];
        s[t] += s[t + 4];
        s[t] += s[t + 2];
        s[t] += s[t + 1];
    }
    __syncthreads();
    if (t == 0)
        atomicAdd(out, s[0]);
}
