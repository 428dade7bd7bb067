// Integer atomics of every width and operation: add/sub/min/max/exch/and/or/xor/inc/dec on int, unsigned, ull.
extern "C" __global__ void atomics_int(const int* in, int* si, unsigned* su, unsigned long long* sull, long long* sll, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v = in[i];
  atomicAdd(&si[0], v);
  atomicSub(&si[1], v);
  atomicMin(&si[2], v);
  atomicMax(&si[3], v);
  atomicAnd(&si[4], ~(1 << (i % 31)));
  atomicOr(&si[5], 1 << (i % 31));
  atomicXor(&si[6], v);
  atomicAdd(&su[0], (unsigned)v * 3u);
  atomicMin(&su[1], (unsigned)v);
  atomicMax(&su[2], (unsigned)v);
  atomicInc(&su[3], 17u);
  atomicDec(&su[4], 13u);
  atomicAdd(&sull[0], (unsigned long long)v << 33);
  atomicMax(&sull[1], (unsigned long long)v * 1000003ull);
  atomicOr(&sull[2], 1ull << (i % 64));
  atomicMin(&sll[0], -(long long)v * 5);
  atomicMax(&sll[1], (long long)v - 100);
}
