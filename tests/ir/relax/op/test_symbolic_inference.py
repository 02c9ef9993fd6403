"""Struct info inference as TVM's: symbolic, shape-variable and rank-only operands, vdevices,
and the validation of full and reshape."""

from __future__ import annotations

import pytest

from relaxvm.ir import Var as SymVar
from relaxvm.ir.relax import (
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    Var,
    VDevice,
    op,
)
from relaxvm.ir.relax.op import OpError, infer
from relaxvm.ir.relax.op.registry import OpTypeError

from .conftest import assert_shape, tvar


def assert_rank(sinfo: StructInfo, ndim: int, dtype: str | None = "float32") -> None:
    """``sinfo`` is a tensor of rank ``ndim`` with no known shape."""
    assert isinstance(sinfo, TensorStructInfo), sinfo
    assert sinfo.shape is None and sinfo.ndim == ndim, sinfo
    assert (str(sinfo.dtype) if sinfo.dtype is not None else None) == dtype, sinfo


M, N, K = SymVar("m"), SymVar("n"), SymVar("k")


# ---- binary broadcasting ----------------------------------------------------------------------
def test_undecidable_extents_give_rank_only() -> None:
    assert_rank(infer(op.add(tvar((M, N)), tvar((M, N + 2)))), 2)
    assert_rank(infer(op.subtract(tvar((K, N, M)), tvar((4, K, M, 1)))), 4)
    assert_rank(infer(op.multiply(tvar((N,)), tvar((4,)))), 1)


def test_decidable_symbolic_extents_keep_the_shape() -> None:
    assert_shape(infer(op.add(tvar((M, N)), tvar((M, N)))), (M, N))
    assert_shape(infer(op.add(tvar((1, N)), tvar((4, K, M, 1)))), (4, K, M, N))
    assert_shape(infer(op.maximum(tvar((N + N,)), tvar((2 * N,)))), (2 * N,))


def test_rank_only_operand_gives_the_broadcast_rank() -> None:
    assert_rank(infer(op.add(tvar((K, N, M)), tvar(None, ndim=2))), 3)
    assert_rank(infer(op.add(tvar(None, ndim=2), tvar(None, ndim=4))), 4)
    assert_rank(infer(op.add(tvar(None, ndim=2), tvar(None))), -1)


def test_two_different_literals_are_still_an_error() -> None:
    with pytest.raises(OpError, match=r"relax\.add: .* cannot broadcast: dimension 1 is 3 vs 4"):
        infer(op.add(tvar((N, 3)), tvar((N, 4))))


def test_one_shape_variable_on_both_sides_is_kept() -> None:
    s = Var("s", ShapeStructInfo(ndim=2))
    x = Var("x", TensorStructInfo(s, "float32"))
    y = Var("y", TensorStructInfo(s, "float32"))
    sinfo = infer(op.add(x, y))
    assert isinstance(sinfo, TensorStructInfo) and sinfo.shape is s
    other = Var("y", TensorStructInfo(Var("t", ShapeStructInfo(ndim=2)), "float32"))
    assert_rank(infer(op.add(x, other)), 2)


def test_comparison_takes_the_vdevice_of_either_operand() -> None:
    dev = VDevice("llvm")
    x = tvar((2, 3))
    y = Var("y", TensorStructInfo((2, 3), "float32", vdevice=dev))
    for call in (op.less(x, y), op.less(y, x), op.add(x, y)):
        sinfo = infer(call)
        assert isinstance(sinfo, TensorStructInfo) and sinfo.vdevice == dev


def test_different_vdevices_are_an_error() -> None:
    x = Var("x", TensorStructInfo((2,), "float32", vdevice=VDevice("llvm")))
    y = Var("y", TensorStructInfo((2,), "float32", vdevice=VDevice("cuda")))
    with pytest.raises(OpError, match=r"relax\.equal: operands are on different vdevices"):
        infer(op.equal(x, y))


def test_matmul_batch_extents_that_cannot_be_decided_give_rank_only() -> None:
    b1 = SymVar("b")
    x = tvar((N, 1, M, K))
    assert_shape(infer(op.matmul(x, tvar((M, 1, 3, K, 5)))), (M, N, 3, M, 5))
    assert_rank(infer(op.matmul(x, tvar((M, b1, 3, K, 5)))), 5)


# ---- where ------------------------------------------------------------------------------------
def test_where_broadcasts_values_then_condition() -> None:
    a, b, c, d, e = (SymVar(name) for name in "abcde")
    cond = tvar((a, b, 1, d, 1), "bool")
    sinfo = infer(op.where(cond, tvar((b, 1, d, e)), tvar((c, d, 1))))
    assert_shape(sinfo, (a, b, c, d, e))
    assert_rank(infer(op.where(cond, tvar((b, 1, SymVar("d"), e)), tvar((c, d, 1)))), 5)


def test_where_keeps_one_shape_variable_shared_by_all_operands() -> None:
    s = Var("s", ShapeStructInfo((6, 5, 4)))
    cond = Var("c", TensorStructInfo(s, "bool"))
    x = Var("x", TensorStructInfo(s, "float32"))
    y = Var("y", TensorStructInfo(s, "float32"))
    sinfo = infer(op.where(cond, x, y))
    assert isinstance(sinfo, TensorStructInfo) and sinfo.shape is s
    other = Var("y", TensorStructInfo(Var("t", ShapeStructInfo(ndim=3)), "float32"))
    assert_rank(infer(op.where(cond, x, other)), 3)


# ---- reductions -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["sum", "mean", "max", "variance"])
def test_reducing_a_rank_only_tensor_to_a_scalar_gives_shape_unit(name: str) -> None:
    reduce = getattr(op, name)
    assert_shape(infer(reduce(tvar(None, ndim=4))), ())
    assert_shape(infer(reduce(tvar(None, ndim=4), axis=[0, 1, 2, 3])), ())
    assert_shape(infer(reduce(tvar(None, ndim=3), keepdims=True)), (1, 1, 1))
    assert_rank(infer(reduce(tvar(None, ndim=4), axis=[1, 2])), 2)
    assert_rank(infer(reduce(tvar(None, ndim=4), axis=[1], keepdims=True)), 4)
    assert_rank(infer(reduce(tvar(None), axis=[1])), -1)


# ---- full -------------------------------------------------------------------------------------
def test_full_takes_the_fill_values_vdevice_and_the_shape_argument() -> None:
    dev = VDevice("llvm")
    fill = Var("v", TensorStructInfo((), "float32", vdevice=dev))
    sinfo = infer(op.full((2, 3), fill))
    assert_shape(sinfo, (2, 3))
    assert isinstance(sinfo, TensorStructInfo) and sinfo.vdevice == dev
    s = Var("s", ShapeStructInfo((M, 3)))
    sinfo = infer(op.full(s, Var("v", TensorStructInfo((), "float32")), "float16"))
    assert isinstance(sinfo, TensorStructInfo) and sinfo.shape is s
    assert str(sinfo.dtype) == "float16"


def test_full_rejects_a_fill_value_that_may_not_be_a_scalar() -> None:
    for fill in (tvar((1,)), tvar(None, ndim=1), tvar(None)):
        with pytest.raises(OpError, match=r"relax\.full: fill_value must be a scalar"):
            infer(op.full((2, 3), fill))
    # A PrimValue (a relaxvm extension) and a 0-d tensor are scalars.
    assert_shape(infer(op.full((2,), Var("p", PrimStructInfo("float32")))), (2,))


def test_full_rejects_a_bare_int_or_symbol_as_the_shape() -> None:
    fill = Var("v", TensorStructInfo((), "float32"))
    with pytest.raises(OpTypeError, match=r"relax\.full: shape must be a tuple/list"):
        op.full(4, fill)
    with pytest.raises(OpTypeError, match=r"relax\.full: shape must be a tuple/list"):
        op.full(M, fill)


# ---- reshape ----------------------------------------------------------------------------------
def test_reshape_zero_copies_the_input_extent() -> None:
    s = Var("s", ShapeStructInfo((2, 3, 4, 5)))
    x = Var("x", TensorStructInfo(s, "float32"))
    assert_shape(infer(op.reshape(x, (2, 3, 0, 5))), (2, 3, 4, 5))
    assert_shape(infer(op.reshape(x, (1, 3, 0, -1))), (1, 3, 4, 10))
    assert_shape(infer(op.reshape(tvar((N, 4)), (0, 2, 2))), (N, 2, 2))


def test_reshape_looks_through_a_shape_variable() -> None:
    s = Var("s", ShapeStructInfo((2, 3, 4, 5)))
    x = Var("x", TensorStructInfo(s, "float32"))
    with pytest.raises(OpError, match=r"cannot reshape x of shape s \(120 elements\) to "):
        infer(op.reshape(x, (4, 4, 1, 5)))
    with pytest.raises(OpError, match=r"120 is not a multiple of 80"):
        infer(op.reshape(x, (4, 4, -1, 5)))
    target = Var("ns", ShapeStructInfo((3, 8, 5)))
    assert_shape(infer(op.reshape(x, target)), (3, 8, 5))


def test_reshape_cancels_a_symbolic_remainder_to_one() -> None:
    a, b, c, d = (SymVar(name) for name in "abcd")
    assert_shape(infer(op.reshape(tvar((a, b, c, d)), (c, a * b * d, -1))), (c, a * b * d, 1))


def test_reshape_rejects_a_bare_int_or_symbol_as_the_shape() -> None:
    with pytest.raises(OpTypeError, match=r"got int 120 \(write \(120,\) for a 1-d shape\)"):
        op.reshape(tvar((2, 60)), 120)
    with pytest.raises(OpTypeError, match=r"relax\.reshape: shape must be a tuple/list"):
        op.reshape(tvar((2, 60)), M)


def test_reshape_zero_beyond_the_input_rank_is_an_error() -> None:
    with pytest.raises(OpError, match=r"copies extent 2 of x \(a 0 there\), but x has rank 2"):
        op.reshape(tvar((2, 3)), (3, 2, 0))
