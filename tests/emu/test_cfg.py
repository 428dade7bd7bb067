"""Basic blocks and reconvergence points."""

from __future__ import annotations

from grader.emu import cfg, ptx

IF_ELSE = """
.visible .entry k()
{
	.reg .pred %p<3>;
	.reg .b32 %r<5>;
	setp.lt.u32 %p1, %r1, 4;
	@%p1 bra $THEN;
	add.s32 %r2, %r2, 1;
	bra.uni $JOIN;
$THEN:
	add.s32 %r2, %r2, 2;
$JOIN:
	add.s32 %r3, %r2, 1;
	setp.lt.u32 %p2, %r3, 9;
	@%p2 bra $JOIN;
	@%p1 ret;
	add.s32 %r4, %r3, 1;
	ret;
}
"""


def test_if_else_reconverges_at_join_and_loop_at_exit():
    k = ptx.parse(IF_ELSE).kernels["k"]
    g = cfg.build(k)
    join = k.labels["$JOIN"]
    assert g.reconverge[1] == join  # the if/else branch
    assert g.reconverge[3] == join  # the unconditional bra.uni out of the else arm
    assert g.reconverge[7] == 8  # the loop's back edge: reconverge after the loop
    assert g.exit_pc == len(k.instrs)


def test_predicated_ret_has_fallthrough():
    k = ptx.parse(IF_ELSE).kernels["k"]
    g = cfg.build(k)
    ret_block = next(i for i, (s, e) in enumerate(g.blocks) if s <= 8 < e)
    assert len(g.succs[ret_block]) == 2


def test_endless_loop_reconverges_at_exit():
    text = """
.visible .entry k()
{
	.reg .pred %p<2>;
$TOP:
	@%p1 bra $TOP;
	bra.uni $TOP;
}
"""
    k = ptx.parse(text).kernels["k"]
    g = cfg.build(k)
    assert g.reconverge[0] == g.exit_pc
