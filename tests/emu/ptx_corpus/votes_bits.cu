// Votes and bit intrinsics: __all_sync, __any_sync, __ballot_sync, __activemask, __popc, __ffs, __clz, __brev and their 64-bit forms.
extern "C" __global__ void votes(const int* in, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? in[i] : 0;
  unsigned b = __ballot_sync(0xffffffff, v > 0);
  int all = __all_sync(0xffffffff, v > -1000);
  int any = __any_sync(0xffffffff, v == 7);
  unsigned act = 0;
  if (v & 1) act = __activemask();
  unsigned long long w = ((unsigned long long)(unsigned)v << 32) | (unsigned)(v * 7);
  int* o = out + i * 11;
  if (i >= n) return;
  o[0] = b; o[1] = all; o[2] = any; o[3] = act;
  o[4] = __popc(v); o[5] = __ffs(v); o[6] = __clz(v); o[7] = __brev(v);
  o[8] = __popcll(w); o[9] = __ffsll(w); o[10] = __clzll(w);
}
