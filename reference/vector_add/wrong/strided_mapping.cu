// expect: traffic
// why: inside each block, lane l of warp w handles element 8*l + w, so the 32 lanes of a warp touch 32 different 32-byte sectors instead of 4 (uncoalesced: 8 times the sectors).

extern "C" __global__ void add(const float* __restrict__ x,
                               const float* __restrict__ y,
                               float* __restrict__ out,
                               int n)
{
    // A permutation of the block's 256 elements: still correct, but each warp's
    // 32 accesses are 8 floats (32 bytes) apart.
    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
    const int i = blockIdx.x * blockDim.x + lane * 8 + warp;
    if (i < n)
        out[i] = x[i] + y[i];
}
