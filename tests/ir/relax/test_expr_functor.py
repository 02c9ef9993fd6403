"""ExprVisitor / ExprMutator: traversal order, sharing of unchanged nodes, re-normalization."""

from __future__ import annotations

import pytest

from relaxvm.ir.relax import (
    BlockBuilder,
    Call,
    DataflowVar,
    Function,
    If,
    SeqExpr,
    TensorStructInfo,
    Var,
    VarBinding,
    op,
    well_formed,
)
from relaxvm.ir.relax.block import BindingBlock
from relaxvm.ir.relax.block_builder import BlockBuilderError
from relaxvm.ir.relax.expr_functor import ExprMutator, ExprVisitor, PassBuilder

F32 = "float32"


def _mlp_like():
    bb = BlockBuilder()
    x = Var("x", TensorStructInfo((2, 3), F32))
    w = Var("w", TensorStructInfo((3, 4), F32))
    with bb.function("main", [x, w]):
        with bb.dataflow():
            y = bb.emit(op.matmul(x, w))
            z = bb.emit(op.nn.relu(y))
            out = bb.emit_output(op.add(z, z))
        bb.emit_func_output(out)
    return bb.get()


class _CallNames(ExprVisitor):
    def __init__(self):
        self.names: list[str] = []
        self.defs: list[str] = []

    def visit_call_(self, call):
        self.names.append(call.op.name)
        super().visit_call_(call)

    def visit_var_def(self, var):
        self.defs.append(var.name_hint)


def test_visitor_walks_in_evaluation_order():
    visitor = _CallNames()
    visitor.visit_expr(_mlp_like()["main"])
    assert visitor.names == ["relax.matmul", "relax.nn.relu", "relax.add"]
    assert visitor.defs == ["x", "w", "lv", "lv1", "gv"]


def test_identity_mutator_shares_everything():
    func = _mlp_like()["main"]
    assert ExprMutator().visit_expr(func) is func


class _ReluToSigmoidPlusOne(ExprMutator):
    """Replaces relu(y) by sigmoid(y) + sigmoid(y), emitting the sigmoid as its own binding."""

    def visit_call_(self, call):
        call = super().visit_call_(call)
        if call.op.name == "relax.nn.relu":
            s = self.builder.emit(op.sigmoid(call.args[0]), "s")
            return op.add(s, s)
        return call


def test_mutator_emits_extra_bindings_and_renormalizes():
    func = _ReluToSigmoidPlusOne().visit_expr(_mlp_like()["main"])
    (block,) = func.body.blocks
    names = [(b.var.name_hint, b.value.op.name) for b in block.bindings]
    assert names == [
        ("lv", "relax.matmul"),
        ("s", "relax.sigmoid"),
        ("lv1", "relax.add"),
        ("gv", "relax.add"),
    ]
    assert isinstance(block.bindings[1].var, DataflowVar)
    assert all(b.value.struct_info is not None for b in block.bindings)
    well_formed(func)


class _ChangeShape(ExprMutator):
    """Rewrites matmul(x, w) to matmul(x, w)[:, :2]-like: here, a sum over axis 1, changing the
    binding's struct info, so its variable must be replaced everywhere."""

    def visit_call_(self, call):
        call = super().visit_call_(call)
        if call.op.name == "relax.matmul":
            return op.sum(call, axis=[1], keepdims=True)
        return call


def test_changed_struct_info_replaces_the_variable():
    old = _mlp_like()["main"]
    new = _ChangeShape().visit_expr(old)
    (block,) = new.body.blocks
    # The nested matmul is bound first (A-normal form), then the sum replaces the old binding.
    assert block.bindings[0].value.op.name == "relax.matmul"
    first = block.bindings[1]
    assert first.value.args[0] is block.bindings[0].var
    assert first.var is not old.body.blocks[0].bindings[0].var
    assert first.var.struct_info.shape_values[1].value == 1
    relu = block.bindings[2]
    assert relu.value.args[0] is first.var
    assert str(new.body.body.struct_info) == 'R.Tensor((2, 1), dtype="float32")'
    well_formed(new)


def test_if_branches_get_their_own_scopes():
    cond = Var("c", TensorStructInfo((), "bool"))
    x = Var("x", TensorStructInfo((2,), F32))
    branch = If(cond, op.nn.relu(x), x)
    bb = BlockBuilder()
    with bb.function("f", [cond, x]):
        r = bb.emit(branch)
        bb.emit_func_output(r)
    func = bb.get()["f"]
    new = _ReluToSigmoidPlusOne().visit_expr(func)
    if_node = new.body.blocks[0].bindings[0].value
    assert isinstance(if_node, If)
    true_branch = if_node.true_branch
    assert isinstance(true_branch, SeqExpr)
    inner = [b.value.op.name for blk in true_branch.blocks for b in blk.bindings]
    assert inner == ["relax.sigmoid", "relax.add"]
    assert if_node.false_branch is func.body.blocks[0].bindings[0].value.false_branch


def test_nested_function_is_visited():
    x = Var("x", TensorStructInfo((2,), F32))
    y = Var("y", TensorStructInfo((2,), F32))
    inner_bb = BlockBuilder()
    with inner_bb.function("inner", [y]):
        r = inner_bb.emit(op.nn.relu(y))
        inner_bb.emit_func_output(r)
    inner = inner_bb.get()["inner"]
    f = Var("f", inner.struct_info)
    outer = Function(
        [x],
        SeqExpr([BindingBlock([VarBinding(f, inner)])], x),
    )
    visitor = _CallNames()
    visitor.visit_expr(outer)
    assert visitor.names == ["relax.nn.relu"]
    new = _ReluToSigmoidPlusOne().visit_expr(outer)
    lifted = new.body.blocks[0].bindings[0].value
    assert isinstance(lifted, Function)
    assert [b.value.op.name for b in lifted.body.blocks[0].bindings] == [
        "relax.sigmoid",
        "relax.add",
    ]


def test_pass_builder_blocks():
    builder = PassBuilder()
    x = Var("x", TensorStructInfo((2,), F32))
    with pytest.raises(BlockBuilderError, match="no block is open"):
        builder.end_block()
    builder.begin_block(is_dataflow=True)
    assert builder.in_dataflow
    v = builder.emit(op.exp(x))
    assert isinstance(v, DataflowVar)
    block = builder.end_block()
    assert block.is_dataflow and len(block.bindings) == 1
    assert isinstance(block.bindings[0].value, Call)
    with pytest.raises(BlockBuilderError, match="called outside a function"):
        builder.emit(op.exp(x))
