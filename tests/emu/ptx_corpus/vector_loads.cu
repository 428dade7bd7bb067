// float2 / float4 / int4 vector loads and stores (ld.global.v4, st.global.v2).
extern "C" __global__ void vec(const float4* a, const float2* b, const int4* c, float4* o4, float2* o2, int4* oi, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float4 v = a[i];
  o4[i] = make_float4(v.w, v.z * 2.0f, v.y + v.x, v.x - v.w);
  float2 w = reinterpret_cast<const float2*>(b)[i];
  o2[i] = make_float2(w.x * w.y, w.x + w.y);
  int4 k = c[i];
  oi[i] = make_int4(k.x + k.y, k.z ^ k.w, k.x << 2, k.w >> 1);
}
