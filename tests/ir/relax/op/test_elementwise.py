"""Elementwise ops: broadcasting (static and symbolic), dtype rules, unary ops, where."""

from __future__ import annotations

import numpy as np
import pytest

from relaxvm.ir import Var as SymVar
from relaxvm.ir.relax import PrimValue, ShapeStructInfo, TensorStructInfo, Var, op
from relaxvm.ir.relax.op import OpError, infer
from relaxvm.ir.relax.op.elementwise import (
    ARITH_BINARY,
    COMPARISONS,
    FLOAT_UNARY,
    LOGICAL_BINARY,
    NUMERIC_UNARY,
)

from .conftest import assert_rank_only, assert_shape, tvar

BROADCAST_CASES = [
    ((2, 3), (3,)),
    ((4, 1, 5), (2, 1)),
    ((1,), (7, 2)),
    ((), (3, 3)),
    ((2, 1, 3), (1, 4, 1)),
]


@pytest.mark.parametrize("name", ARITH_BINARY)
@pytest.mark.parametrize(("lhs", "rhs"), BROADCAST_CASES)
def test_arith_broadcast_matches_numpy(name: str, lhs: tuple, rhs: tuple) -> None:
    sinfo = infer(getattr(op, name)(tvar(lhs), tvar(rhs)))
    assert_shape(sinfo, np.broadcast_shapes(lhs, rhs))


@pytest.mark.parametrize("name", COMPARISONS)
def test_comparisons_give_bool(name: str) -> None:
    sinfo = infer(getattr(op, name)(tvar((2, 3), "int32"), tvar((3,), "int32")))
    assert_shape(sinfo, (2, 3), "bool")


@pytest.mark.parametrize("name", LOGICAL_BINARY)
def test_logical_ops_take_bools(name: str) -> None:
    sinfo = infer(getattr(op, name)(tvar((4,), "bool"), tvar((1,), "bool")))
    assert_shape(sinfo, (4,), "bool")
    with pytest.raises(OpError, match=rf"relax.{name}: operand 1 must be bool, got float32"):
        infer(getattr(op, name)(tvar((4,), "bool"), tvar((4,))))


def test_symbolic_broadcast_keeps_the_variable() -> None:
    n = SymVar("n")
    assert_shape(infer(op.add(tvar((n, 4)), tvar((4,)))), (n, 4))
    assert_shape(infer(op.add(tvar((n, 1)), tvar((1, 4)))), (n, 4))
    # Equal by the analyzer, although written differently.
    assert_shape(infer(op.multiply(tvar((n * 2, 4)), tvar((2 * n, 4)))), (2 * n, 4))


def test_symbolic_against_static_gives_rank_only() -> None:
    # As TVM: n may be 1 or 4 at run time, so the extent is not decided statically.
    n = SymVar("n")
    sinfo = infer(op.add(tvar((n,)), tvar((4,))))
    assert isinstance(sinfo, TensorStructInfo)
    assert sinfo.shape is None and sinfo.ndim == 1 and str(sinfo.dtype) == "float32"


def test_two_unrelated_symbols_give_rank_only() -> None:
    n, m = SymVar("n"), SymVar("m")
    sinfo = infer(op.add(tvar((n, 3)), tvar((m, 3))))
    assert isinstance(sinfo, TensorStructInfo)
    assert sinfo.shape is None and sinfo.ndim == 2


def test_static_mismatch_names_op_and_both_shapes() -> None:
    n = SymVar("n")
    with pytest.raises(
        OpError,
        match=r"relax.add: operands with shapes \(n, 4\) and \(3, 5\) cannot broadcast: "
        r"dimension 1 is 4 vs 5",
    ):
        infer(op.add(tvar((n, 4)), tvar((3, 5))))


def test_provably_different_symbolic_extents_give_rank_only() -> None:
    from relaxvm.ir import Analyzer, ConstIntBound

    n = SymVar("n")
    analyzer = Analyzer()
    analyzer.update(n, ConstIntBound(2, 100))
    call = op.add(tvar((n,)), tvar((n + 1,)))
    # As TVM, only two different literals are an error; the rest is left to run time.
    for sinfo in (op.infer_struct_info(call, analyzer), infer(call)):
        assert isinstance(sinfo, TensorStructInfo) and sinfo.shape is None and sinfo.ndim == 1


def test_dtype_mismatch_is_an_error() -> None:
    with pytest.raises(
        OpError, match=r"relax.subtract: operands must have the same dtype, got \(2,\) float32"
    ):
        infer(op.subtract(tvar((2,)), tvar((2,), "int32")))


def test_unknown_dtype_gives_unknown_result_dtype() -> None:
    assert_shape(infer(op.add(tvar((2,), None), tvar((2,), "int32"))), (2,), None)
    assert_shape(infer(op.less(tvar((2,), None), tvar((2,)))), (2,), "bool")


def test_unknown_rank_gives_unknown_rank() -> None:
    assert_rank_only(infer(op.add(tvar(None, ndim=-1), tvar((2,)))), -1)
    assert_rank_only(infer(op.add(tvar(None, ndim=3), tvar((2, 2)))), 3)


def test_shape_variable_is_kept_for_same_operand() -> None:
    s = Var("s", ShapeStructInfo(ndim=2))
    x = Var("x", TensorStructInfo(s, "float32"))
    result = infer(op.add(x, x))
    assert isinstance(result, TensorStructInfo)
    assert result.shape is s


def test_scalar_prim_value_operand() -> None:
    assert_shape(infer(op.multiply(tvar((2, 3)), PrimValue(2.0))), (2, 3))


def test_non_tensor_operand_is_an_error() -> None:
    s = Var("s", ShapeStructInfo([2]))
    with pytest.raises(OpError, match="relax.add: operand 1 must be a tensor or a scalar"):
        infer(op.add(tvar((2,)), s))


@pytest.mark.parametrize("name", FLOAT_UNARY)
def test_float_unary(name: str) -> None:
    n = SymVar("n")
    assert_shape(infer(getattr(op, name)(tvar((n, 3)))), (n, 3))
    assert_rank_only(infer(getattr(op, name)(tvar(None, ndim=-1))), -1)
    with pytest.raises(OpError, match=rf"relax.{name}: x must have a float dtype, got int32"):
        infer(getattr(op, name)(tvar((2,), "int32")))


@pytest.mark.parametrize("name", NUMERIC_UNARY)
def test_numeric_unary(name: str) -> None:
    assert_shape(infer(getattr(op, name)(tvar((2, 5), "int32"))), (2, 5), "int32")
    assert_rank_only(infer(getattr(op, name)(tvar(None, None, ndim=2))), 2, None)
    with pytest.raises(OpError, match=rf"relax.{name}: x must be numeric, got bool"):
        infer(getattr(op, name)(tvar((2,), "bool")))


def test_logical_not() -> None:
    assert_shape(infer(op.logical_not(tvar((3,), "bool"))), (3,), "bool")
    with pytest.raises(OpError, match="relax.logical_not: x must be bool, got float32"):
        infer(op.logical_not(tvar((3,))))


def test_unary_needs_a_tensor() -> None:
    with pytest.raises(OpError, match=r"relax.exp: x must be a tensor, got R.Prim"):
        infer(op.exp(PrimValue(1.0)))


def test_clip() -> None:
    n = SymVar("n")
    call = op.clip(tvar((n, 2)), 0.0, 6.0)
    assert [type(a).__name__ for a in call.args] == ["Var", "PrimValue", "PrimValue"]
    assert_shape(infer(call), (n, 2))
    bad = op.clip(tvar((2,)), tvar((1,)), 1.0)
    with pytest.raises(OpError, match=r"relax.clip: min must be a scalar"):
        infer(bad)
    with pytest.raises(OpError, match="relax.clip: expected a number or PrimExpr"):
        op.clip(tvar((2,)), "low", 1.0)


def test_astype() -> None:
    n = SymVar("n")
    assert_shape(infer(op.astype(tvar((n, 3)), "float16")), (n, 3), "float16")
    assert_rank_only(infer(op.astype(tvar(None, ndim=-1), "int8")), -1, "int8")
    with pytest.raises(OpError, match="relax.astype: invalid dtype 'float33'"):
        op.astype(tvar((2,)), "float33")


def test_where_three_way_broadcast() -> None:
    n = SymVar("n")
    sinfo = infer(op.where(tvar((n, 1), "bool"), tvar((1, 4)), tvar((4,))))
    assert_shape(sinfo, (n, 4))
    assert_shape(infer(op.where(tvar((2, 1, 3), "bool"), tvar((4, 1)), tvar(()))), (2, 4, 3))


def test_where_errors() -> None:
    with pytest.raises(OpError, match="relax.where: condition must be bool, got float32"):
        infer(op.where(tvar((2,)), tvar((2,)), tvar((2,))))
    with pytest.raises(OpError, match="relax.where: x1 and x2 must have the same dtype"):
        infer(op.where(tvar((2,), "bool"), tvar((2,)), tvar((2,), "int32")))
    with pytest.raises(OpError, match=r"relax.where: operands with shapes .* cannot broadcast"):
        infer(op.where(tvar((3,), "bool"), tvar((2,)), tvar((2,))))
