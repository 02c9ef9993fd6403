"""Structural ops: call_tir and friends, packed calls, shape_of, print/assert, closures."""

from __future__ import annotations

import pytest

from relaxvm.ir import Var as SymVar
from relaxvm.ir import const
from relaxvm.ir.relax import (
    Call,
    ExternFunc,
    FuncStructInfo,
    GlobalVar,
    ObjectStructInfo,
    PrimValue,
    ShapeExpr,
    ShapeStructInfo,
    TensorStructInfo,
    TupleStructInfo,
    Var,
    op,
)
from relaxvm.ir.relax.op import OpError, get_op_info, infer
from relaxvm.runtime.device import cpu

from .conftest import assert_shape, tvar


def test_call_tir_returns_the_declared_output() -> None:
    n = SymVar("n")
    out = TensorStructInfo((n, 4), "float32")
    call = op.call_tir(GlobalVar("add_kernel"), [tvar((n, 4)), tvar((n, 4))], out)
    assert infer(call) == out
    two = [TensorStructInfo((2,), "float32"), TensorStructInfo((3,), "int32")]
    result = infer(op.call_tir(GlobalVar("k"), [tvar((2,))], two, ShapeExpr([n])))
    assert result == TupleStructInfo(two)


def test_call_tir_errors() -> None:
    with pytest.raises(OpError, match="relax.call_tir: output 0 must be a tensor"):
        infer(op.call_tir(GlobalVar("k"), [tvar((2,))], ShapeStructInfo([2])))
    # A single tensor argument becomes a 1-tuple, as TVM's call_tir makes it.
    single = op.call_tir(GlobalVar("k"), tvar((2,)), TensorStructInfo((2,), "float32"))
    assert len(single.args[1].fields) == 1
    bare = Call(single.op, [GlobalVar("k"), tvar((2,))], sinfo_args=[single.sinfo_args[0]])
    with pytest.raises(OpError, match="relax.call_tir: the arguments must be passed as a tuple"):
        infer(bare)
    bad = Call(
        op.call_tir(GlobalVar("k"), [tvar((2,))], TensorStructInfo((2,), dtype=None)).op,
        [GlobalVar("k"), tvar((2,))],
    )
    with pytest.raises(
        OpError, match="needs exactly one struct info argument for the result, got 0"
    ):
        infer(bad)
    with pytest.raises(OpError, match="relax.call_tir: out_sinfo must be a StructInfo"):
        op.call_tir(GlobalVar("k"), [tvar((2,))], "float32")
    with pytest.raises(OpError, match="relax.call_tir: tir_vars must be a shape"):
        infer(
            op.call_tir(
                GlobalVar("k"), [tvar((2,))], TensorStructInfo((2,), dtype=None), tvar((1,))
            )
        )


def test_call_tir_inplace() -> None:
    out = TensorStructInfo((2,), "float32")
    call = op.call_tir_inplace(GlobalVar("k"), [tvar((2,)), tvar((2,))], 0, out)
    assert infer(call) == out
    with pytest.raises(OpError, match=r"inplace_indices\[0\] = 5 is not an argument index"):
        infer(op.call_tir_inplace(GlobalVar("k"), [tvar((2,))], 5, out))
    with pytest.raises(OpError, match=r"inplace_indices \[0, 1\] must name one argument"):
        infer(op.call_tir_inplace(GlobalVar("k"), [tvar((2,))], [0, 1], out))


def test_packed_calls() -> None:
    out = TensorStructInfo((3,), "float32")
    assert infer(op.call_dps_packed("my.func", [tvar((3,))], out)) == out
    assert infer(op.call_pure_packed("my.pure", tvar((3,)), sinfo_args=out)) == out
    with pytest.raises(OpError, match="relax.call_pure_packed: the callee must be an ExternFunc"):
        infer(Call(op.call_pure_packed("f", sinfo_args=out).op, [tvar((3,))], sinfo_args=[out]))
    packed = op.call_packed("my.impure", tvar((3,)), sinfo_args=out)
    assert isinstance(packed.op, ExternFunc)
    assert infer(packed) == out
    assert infer(op.call_packed("my.any")) == ObjectStructInfo()
    assert get_op_info("relax.print").purity is False


def test_shape_of_and_tensor_to_shape() -> None:
    n = SymVar("n")
    assert infer(op.shape_of(tvar((n, 4)))) == ShapeStructInfo([n, 4])
    assert infer(op.shape_of(tvar(None, ndim=3))) == ShapeStructInfo(ndim=3)
    assert infer(op.tensor_to_shape(tvar((3,), "int64"))) == ShapeStructInfo(ndim=3)
    assert infer(op.tensor_to_shape(tvar((n,), "int64"))) == ShapeStructInfo(ndim=-1)
    with pytest.raises(OpError, match=r"relax.tensor_to_shape: x must be a 1-d tensor"):
        infer(op.tensor_to_shape(tvar((3, 1), "int64")))
    with pytest.raises(OpError, match=r"relax.tensor_to_shape: x must have an integer dtype"):
        infer(op.tensor_to_shape(tvar((3,))))


def test_print_assert_null() -> None:
    assert infer(op.print(tvar((2,)), format="x={}")) == TupleStructInfo([])
    assert infer(op.assert_op(PrimValue(const(True)))) == TupleStructInfo([])
    assert infer(op.assert_op(tvar((), "bool"), [tvar((2,))], "bad {}")) == TupleStructInfo([])
    with pytest.raises(OpError, match="relax.assert_op: the condition must be bool, got float32"):
        infer(op.assert_op(tvar(())))
    with pytest.raises(OpError, match="relax.assert_op: the condition must be a bool scalar"):
        infer(op.assert_op(tvar((2,), "bool")))
    assert infer(op.null_value()) == ObjectStructInfo()


def test_closures() -> None:
    t = TensorStructInfo((2,), "float32")
    fn = GlobalVar("f", FuncStructInfo([t, t, t], t))
    closure_sinfo = infer(op.make_closure(fn, [tvar((2,))]))
    assert closure_sinfo == FuncStructInfo([t, t], t)
    closure = Var("c", closure_sinfo)
    assert infer(op.invoke_closure(closure, [tvar((2,)), tvar((2,))], t)) == t
    with pytest.raises(OpError, match="captures 4 values but the function has only 3"):
        infer(op.make_closure(fn, [tvar((2,))] * 4))
    with pytest.raises(OpError, match="relax.make_closure: the function must be callable"):
        infer(op.make_closure(tvar((2,)), []))
    with pytest.raises(OpError, match="relax.invoke_closure: the closure must be callable"):
        infer(op.invoke_closure(tvar((2,)), [], t))


def test_to_vdevice() -> None:
    result = infer(op.to_vdevice(tvar((2, 3)), cpu()))
    assert isinstance(result, TensorStructInfo)
    assert result.vdevice == cpu()
    assert_shape(result, (2, 3))
    with pytest.raises(OpError, match="dst_vdevice must be a Device"):
        op.to_vdevice(tvar((2,)), "cpu")  # type: ignore[arg-type]
