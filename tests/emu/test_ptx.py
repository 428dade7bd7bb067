"""The PTX parser on hand-written and NVRTC-emitted text."""

from __future__ import annotations

from grader.emu import ptx

TEXT = r"""
.version 9.5
.target sm_90
.address_size 64
.global .align 4 .u32 counter = 5;
.global .align 1 .b8 $str[4] = {104, 105, 10};
.extern .shared .align 16 .b8 dyn[];
.visible .entry k(
	.param .u64 k_param_0,
	.param .u32 k_param_1,
	.param .align 8 .b8 k_param_2[16]
)
.maxntid 256, 1, 1
{
	.local .align 16 .b8 	__local_depot0[32];
	.reg .pred 	%p<3>;
	.reg .b32 	%r<5>;
	.reg .b64 	%SP;
	.shared .align 4 .b8 _ZZ1kE1s[128];
	.loc	1 7 3
	ld.param.u64 	%rd1, [k_param_0+8];
	@!%p1 bra 	$L__BB0_2;
	.loc	2 40 1, function_name $L__info_string0, inlined_at 1 9 5
	shfl.sync.down.b32 	%r1|%p2, %r2, 16, 31, -1;
	ld.global.nc.v4.f32 	{%f1, %f2, _, %f4}, [%rd1+-16];
$L__BB0_2:
	.loc	1 0 3
	mov.f32 	%f1, 0f3F800000;
	ret;
}
.file	1 "submission.cu"
"""


def test_declarations():
    m = ptx.parse(TEXT)
    k = m.kernels["k"]
    assert [(p.name, p.ptx_type, p.size, p.offset) for p in k.params] == [
        ("k_param_0", "u64", 8, 0), ("k_param_1", "u32", 4, 8), ("k_param_2", "b8", 16, 16)]
    assert k.regs["%p2"] == "pred" and k.regs["%r4"] == "b32" and k.regs["%SP"] == "b64"
    assert [(v.name, v.size) for v in k.shared] == [("_ZZ1kE1s", 128)]
    assert [(v.name, v.size, v.align) for v in k.local] == [("__local_depot0", 32, 16)]
    counter, s = m.variables
    assert counter.init == (5).to_bytes(4, "little") and s.init == b"hi\n\0"
    assert m.extern_shared[0].name == "dyn" and m.extern_shared[0].extern


def test_instructions_and_lines():
    k = ptx.parse(TEXT).kernels["k"]
    ld, bra, shfl, ldv, mov, ret = k.instrs
    assert ld.line == 7 and ld.operands[1] == ptx.Addr(ptx.Sym("k_param_0"), 8)
    assert bra.guard == ("%p1", True) and k.labels == {"$L__BB0_2": 4}
    assert shfl.line == 9  # inlined from another file: the submission line it was inlined at
    assert shfl.mods == ("sync", "down", "b32")
    assert shfl.operands[0] == ptx.Pair(ptx.Reg("%r1"), ptx.Reg("%p2"))
    assert shfl.operands[4] == ptx.Imm(-1)
    assert ldv.operands[0] == ptx.Vec((ptx.Reg("%f1"), ptx.Reg("%f2"), ptx.Sink(), ptx.Reg("%f4")))
    assert ldv.operands[1] == ptx.Addr(ptx.Reg("%rd1"), -16)
    assert mov.line == 0  # `.loc 1 0` means no source line
    assert mov.operands[1] == ptx.FImm(0x3F800000, 32)
    assert ret.opcode == "ret"


def test_nvrtc_output(compile_ptx):
    src = r'''
    __device__ int hits;
    extern "C" __global__ void f(float* x) {
      __shared__ float t[32];
      t[threadIdx.x] = x[threadIdx.x];
      __syncthreads();
      x[threadIdx.x] = t[31 - threadIdx.x];
      atomicAdd(&hits, 1);
    }'''
    m = ptx.parse(compile_ptx(src))
    k = m.kernels["f"]
    ops = {i.opcode for i in k.instrs}
    assert {"ld", "st", "bar", "atom", "ret"} <= ops
    assert any(v.name == "hits" for v in m.variables)
    assert all(i.line > 0 for i in k.instrs)
