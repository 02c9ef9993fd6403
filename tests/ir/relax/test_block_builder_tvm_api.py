"""TVM's BlockBuilder behaviour: variable names, the private block API and emit_te details."""

from __future__ import annotations

import numpy as np
import pytest

import relaxvm
from relaxvm.ir import Var as SymVar
from relaxvm.ir import tir
from relaxvm.ir.relax import (
    BindingBlock,
    BlockBuilder,
    BlockBuilderError,
    DataflowBlock,
    DataflowVar,
    PrimStructInfo,
    ShapeStructInfo,
    TensorStructInfo,
    Var,
    op,
)
from relaxvm.ir.tir import te


def tensor(shape: list, dtype: str = "float32") -> TensorStructInfo:
    return TensorStructInfo(shape, dtype)


def test_fresh_names_are_prefix_then_numbered_across_functions() -> None:
    x = Var("x", tensor([2]))
    bb = BlockBuilder()
    with bb.function("f", [x]):
        with bb.dataflow():
            lv0 = bb.emit(op.add(x, x))
            lv1 = bb.emit(op.add(lv0, x))
            gv0 = bb.emit_output(lv1)
        gv1 = bb.emit(op.add(gv0, gv0))
        bb.emit_func_output(gv1)
    with bb.function("g", [x]):
        with bb.dataflow():
            lv2 = bb.emit(op.add(x, x))
            gv2 = bb.emit_output(lv2)
        bb.emit_func_output(gv2)
    names = [v.name_hint for v in (lv0, lv1, gv0, gv1, lv2, gv2)]
    assert names == ["lv", "lv1", "gv", "gv1", "lv2", "gv2"]


def test_fresh_names_avoid_names_given_explicitly() -> None:
    x = Var("x", tensor([2]))
    bb = BlockBuilder()
    with bb.function("f", [x]):
        given = bb.emit(op.add(x, x), name_hint="gv1")
        first = bb.emit(op.add(given, x))
        second = bb.emit(op.add(first, x))
        bb.emit_func_output(second)
    assert [given.name_hint, first.name_hint, second.name_hint] == ["gv1", "gv", "gv2"]


def test_private_block_api_builds_nested_blocks_outside_a_function() -> None:
    m, n = SymVar("m"), SymVar("n")
    x = Var("x", tensor([m, n], "float16"))
    y = Var("y", tensor([n], "float16"))
    bb = BlockBuilder()
    bb._begin_binding_block()
    gv0 = bb.emit(op.add(x, y))
    bb._begin_dataflow_block()
    lv0 = bb.emit(op.multiply(gv0, y))
    gv1 = bb.emit_output(op.multiply(lv0, lv0))
    inner = bb._end_block()
    gv2 = bb.emit(op.add(x, y))
    outer = bb._end_block()
    assert isinstance(inner, DataflowBlock) and isinstance(lv0, DataflowVar)
    assert [b.var for b in inner.bindings] == [lv0, gv1]
    assert isinstance(outer, BindingBlock) and not isinstance(outer, DataflowBlock)
    assert [b.var for b in outer.bindings] == [gv0, gv2]
    assert gv1.struct_info == tensor([m, n], "float16")


def test_end_block_without_a_begin_is_an_error() -> None:
    with pytest.raises(BlockBuilderError, match=r"_end_block: no block is open"):
        BlockBuilder()._end_block()


def test_emit_outside_a_function_and_block_is_still_an_error() -> None:
    x = Var("x", tensor([2]))
    with pytest.raises(BlockBuilderError, match=r"BlockBuilder.emit: called outside a function"):
        BlockBuilder().emit(op.add(x, x))


def test_emit_te_kernel_is_private_and_takes_primfunc_attrs() -> None:
    x = Var("x", tensor([4]))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        out = bb.emit_te(
            lambda a: te.compute(a.shape, lambda i: a[i] + 1.0, name="B"),
            x,
            primfunc_name_hint="plus_one",
            primfunc_attrs={"some_attr": "foo"},
        )
        bb.emit_func_output(out)
    mod = bb.get()
    assert mod["plus_one"].attrs == {"tir.noalias": True, "some_attr": "foo"}
    assert "@T.prim_func(private=True)" in mod.script()
    # The private kernel still compiles: code generation attaches its symbol.
    vm = relaxvm.VirtualMachine(relaxvm.compile(mod, "llvm"), relaxvm.cpu())
    got = vm["main"](relaxvm.tensor(np.arange(4, dtype="float32"))).numpy()
    np.testing.assert_array_equal(got, np.arange(4, dtype="float32") + 1)


def test_emit_te_deduplicates_private_kernels() -> None:
    x = Var("x", tensor([4]))

    def plus_one(a: te.Tensor) -> te.Tensor:
        return te.compute(a.shape, lambda i: a[i] + 1.0, name="B")

    bb = BlockBuilder()
    with bb.function("main", [x]):
        first = bb.emit_te(plus_one, x)
        second = bb.emit_te(plus_one, first)
        bb.emit_func_output(second)
    mod = bb.get()
    assert [gv.name_hint for gv, f in mod if isinstance(f, tir.PrimFunc)] == ["plus_one"]


def test_emit_te_takes_a_prim_value_variable_as_its_symbol() -> None:
    row = SymVar("row")
    a = Var("A", tensor([16, 16]))
    index = Var("index", PrimStructInfo(value=row))
    bb = BlockBuilder()
    with bb.function("main", [a, index]):
        out = bb.emit_te(
            lambda t, i: te.compute([t.shape[1]], lambda j: t[i, j], name="slice"), a, index
        )
        bb.emit_func_output(out)
    call = bb.get()["main"].body.blocks[0].bindings[0].value
    assert [str(v) for v in call.args[2].values] == ["row"]
    assert out.struct_info == tensor([16])


def test_emit_te_rejects_a_shape_variable_argument() -> None:
    x = Var("x", tensor([200]))
    s = Var("s", ShapeStructInfo((200,)))
    bb = BlockBuilder()
    with (
        pytest.raises(BlockBuilderError, match=r"argument s is R.Shape\(\[200\]\), not a tensor"),
        bb.function("main", [x]),
    ):
        bb.emit_te(lambda a, shape: a, x, s)
