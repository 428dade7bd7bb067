// expect: traffic
// also: performance
// why: no shared tile: a warp reads a row of in but writes a column of out, 32 sectors per store request instead of 4.

extern "C" __global__ void transpose(const float* __restrict__ in,
                                     float* __restrict__ out,
                                     int rows,
                                     int cols)
{
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    const int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols)
        out[c * rows + r] = in[r * cols + c];
}
