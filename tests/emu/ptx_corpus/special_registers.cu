// Every special register a student's inline asm may read (cluster ones aside), one column each.
#define READ32(reg, k) { unsigned v; asm volatile("mov.u32 %0, %%" reg ";" : "=r"(v)); o[k] = v; }
#define READ64(reg, k) { unsigned long long v; asm volatile("mov.u64 %0, %%" reg ";" : "=l"(v)); o[k] = v; }
extern "C" __global__ void specials(unsigned long long* out) {
  extern __shared__ int dyn[];
  unsigned long long* o = out + 32 * ((blockIdx.x * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x);
  READ32("tid.x", 0) READ32("tid.y", 1) READ32("tid.z", 2) READ32("ntid.x", 3) READ32("ntid.y", 4)
  READ32("ntid.z", 5) READ32("ctaid.x", 6) READ32("ctaid.y", 7) READ32("ctaid.z", 8)
  READ32("nctaid.x", 9) READ32("nctaid.y", 10) READ32("nctaid.z", 11) READ32("laneid", 12)
  READ32("warpid", 13) READ32("nwarpid", 14) READ32("smid", 15) READ32("nsmid", 16)
  READ64("gridid", 17) READ32("lanemask_eq", 18) READ32("lanemask_le", 19) READ32("lanemask_lt", 20)
  READ32("lanemask_ge", 21) READ32("lanemask_gt", 22) READ32("clock", 23) READ32("clock_hi", 24)
  READ64("clock64", 25) READ64("globaltimer", 26) READ32("globaltimer_lo", 27)
  READ32("globaltimer_hi", 28) READ32("total_smem_size", 29) READ32("dynamic_smem_size", 30)
  dyn[threadIdx.x] = threadIdx.x;
  o[31] = warpSize;
}
