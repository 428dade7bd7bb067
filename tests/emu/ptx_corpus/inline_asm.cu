// Inline PTX: %laneid and %warpid through asm, an asm block with its own scoped register declarations, lanemask_lt with popc.
extern "C" __global__ void asm_regs(const unsigned* in, unsigned* out) {
  unsigned lane, warp, lt, r;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  asm volatile("mov.u32 %0, %%warpid;" : "=r"(warp));
  asm("mov.u32 %0, %%lanemask_lt;" : "=r"(lt));
  unsigned x = in[blockIdx.x * blockDim.x + threadIdx.x];
  asm("{\n\t.reg .u32 t1, t2;\n\tmul.lo.u32 t1, %1, 3;\n\tadd.u32 t2, t1, %2;\n\tmov.u32 %0, t2;\n\t}"
      : "=r"(r) : "r"(x), "r"(lane));
  unsigned* o = out + (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  o[0] = lane; o[1] = warp; o[2] = __popc(lt); o[3] = r;
}
