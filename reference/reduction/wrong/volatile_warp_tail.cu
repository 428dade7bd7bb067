// expect: race
// also: correctness
// why: the legacy warp-synchronous tail: warp 0 adds the last 64 partial sums through a volatile pointer with no __syncwarp() between the steps. volatile keeps the accesses in memory but since Volta the lanes of a warp are not in lock-step, so a lane may read a neighbour's sum before it is written (racecheck reports it on an H200).

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
        volatile float* v = s;
        v[t] += v[t + 32];
        v[t] += v[t + 16];
        v[t] += v[t + 8];
        v[t] += v[t + 4];
        v[t] += v[t + 2];
        v[t] += v[t + 1];
    }
    if (t == 0)
        atomicAdd(out, s[0]);
}
