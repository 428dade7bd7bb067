// __noinline__ functions taking and returning structs by value (PTX .param .b8 arrays), and a
// function that calls another.
struct Box { float lo[3]; int id; };
struct Hit { float t; int id; };
__device__ __noinline__ Hit nearest(Box b, float x) {
  Hit h; h.t = fabsf(b.lo[0] - x) + b.lo[1] * b.lo[2]; h.id = b.id * 10; return h;
}
__device__ __noinline__ float score(Box b, float x) { Hit h = nearest(b, x); return h.t + h.id; }
extern "C" __global__ void boxes(const float* in, float* out, int* ids, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  Box b = {{in[i], 0.5f, (float)(i % 4)}, i};
  Hit h = nearest(b, 1.0f);
  out[2 * i] = h.t;
  out[2 * i + 1] = score(b, -1.0f);
  ids[i] = h.id;
}
