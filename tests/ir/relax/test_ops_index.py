"""Inference of gather_elements, gather_nd, scatter_elements, scatter_nd and one_hot: TVM's
shapes, symbolic extents, unknown ranks, dtypes and errors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from relaxvm.ir import Analyzer, FloatImm, IntImm, PrimExpr
from relaxvm.ir import Var as SymVar
from relaxvm.ir.relax import PrimValue, StructInfo, TensorStructInfo, Var, op
from relaxvm.ir.relax.op import OpError, infer
from relaxvm.script import from_source

N = SymVar("n", "int64")


def tvar(shape: Sequence[Any] | None = None, dtype: str | None = "float32", ndim: int = -1) -> Var:
    return Var("x", TensorStructInfo(shape, dtype, ndim=ndim))


def ivar(shape: Sequence[Any] | None = None, dtype: str = "int64", ndim: int = -1) -> Var:
    return tvar(shape, dtype, ndim)


def assert_shape(sinfo: StructInfo, expected: Sequence[Any], dtype: str | None = "float32") -> None:
    assert isinstance(sinfo, TensorStructInfo), sinfo
    values = sinfo.shape_values
    assert values is not None, sinfo
    assert len(values) == len(expected), f"{sinfo} vs {expected}"
    analyzer = Analyzer()
    for got, want in zip(values, expected, strict=True):
        assert isinstance(got, PrimExpr)
        assert analyzer.can_prove_equal(got, want), f"{sinfo}: {got} != {want}"
    assert (None if sinfo.dtype is None else str(sinfo.dtype)) == dtype, sinfo


def assert_rank(sinfo: StructInfo, ndim: int, dtype: str | None = "float32") -> None:
    assert isinstance(sinfo, TensorStructInfo), sinfo
    assert sinfo.shape_values is None and sinfo.ndim == ndim, sinfo
    assert (None if sinfo.dtype is None else str(sinfo.dtype)) == dtype, sinfo


F1 = PrimValue(FloatImm("float32", 1.0))
F0 = PrimValue(FloatImm("float32", 0.0))


# ---- gather_elements ------------------------------------------------------------------------
def test_gather_elements_takes_the_indices_shape_and_data_dtype() -> None:
    assert_shape(infer(op.gather_elements(tvar([N, 4]), ivar([N, 2]), axis=1)), [N, 2])
    assert_shape(
        infer(op.gather_elements(tvar([5, 4], "int8"), ivar([7, 4], "uint8"))), [7, 4], "int8"
    )
    assert_shape(infer(op.gather_elements(tvar(ndim=2), ivar([3, 2]))), [3, 2])
    assert_rank(infer(op.gather_elements(tvar([3, 4]), ivar(ndim=2))), 2)


def test_gather_elements_attrs_and_errors() -> None:
    call = op.gather_elements(tvar([3, 4]), ivar([3, 4]), axis=-1)
    assert call.attrs["axis"] == -1
    with pytest.raises(
        OpError, match=r"relax.gather_elements: indices must have an integer dtype, got float32"
    ):
        infer(op.gather_elements(tvar([3, 4]), tvar([3, 4])))
    with pytest.raises(OpError, match=r"data and indices must have the same rank"):
        infer(op.gather_elements(tvar([3, 4]), ivar([3])))
    with pytest.raises(OpError, match=r"axis 2 is out of range for a tensor of rank 2"):
        infer(op.gather_elements(tvar([3, 4]), ivar([3, 4]), axis=2))
    with pytest.raises(
        OpError, match=r"indices of shape \(3, 5\) is longer than data of shape \(3, 4\) on axis 1"
    ):
        infer(op.gather_elements(tvar([3, 4]), ivar([3, 5]), axis=0))
    with pytest.raises(OpError, match=r"axis must be an int, got 'a'"):
        op.gather_elements(tvar([3, 4]), ivar([3, 4]), axis="a")  # type: ignore[arg-type]


# ---- gather_nd ------------------------------------------------------------------------------
def test_gather_nd_shapes() -> None:
    assert_shape(infer(op.gather_nd(tvar([N, 4, 5]), ivar([7, 2]))), [7, 5])
    assert_shape(infer(op.gather_nd(tvar([N, 4, 5]), ivar([N, 3, 1]), batch_dims=1)), [N, 3, 5])
    assert_shape(infer(op.gather_nd(tvar([2, 4]), ivar([3, 2], "int32"))), [3])
    assert_rank(infer(op.gather_nd(tvar([2, 4]), ivar([3, N]))), -1)
    assert_rank(infer(op.gather_nd(tvar(ndim=3), ivar([3, 1]))), 3)


def test_gather_nd_errors() -> None:
    with pytest.raises(
        OpError,
        match=r"relax.gather_nd: indices.shape\[-1\] \(3\) must be at most the rank of data less batch_dims \(2 - 0\)",
    ):
        infer(op.gather_nd(tvar([2, 4]), ivar([5, 3])))
    with pytest.raises(OpError, match=r"batch_dims must be non-negative, got -1"):
        infer(op.gather_nd(tvar([2, 4]), ivar([5, 1]), batch_dims=-1))
    with pytest.raises(OpError, match=r"batch axis 0 differs"):
        infer(op.gather_nd(tvar([2, 4]), ivar([3, 1]), batch_dims=1))
    with pytest.raises(OpError, match=r"indices must have rank at least 1, got a scalar"):
        infer(op.gather_nd(tvar([2, 4]), ivar([])))
    with pytest.raises(OpError, match=r"indices must have an integer dtype, got bool"):
        infer(op.gather_nd(tvar([2, 4]), ivar([3, 1], "bool")))


# ---- scatter_elements -----------------------------------------------------------------------
def test_scatter_elements_keeps_the_data_struct_info() -> None:
    call = op.scatter_elements(tvar([N, 4]), ivar([N, 2]), tvar([N, 2]), axis=1, reduction="max")
    assert call.attrs == {"axis": 1, "reduction": "max"}
    assert_shape(infer(call), [N, 4])
    assert_rank(infer(op.scatter_elements(tvar(ndim=2), ivar([1, 2]), tvar([1, 2]))), 2)


def test_scatter_elements_errors() -> None:
    with pytest.raises(
        OpError, match=r"relax.scatter_elements: reduction must be one of .*got 'sum'"
    ):
        op.scatter_elements(tvar([3]), ivar([3]), tvar([3]), reduction="sum")
    with pytest.raises(OpError, match=r"data and updates must have the same dtype"):
        infer(op.scatter_elements(tvar([3]), ivar([3]), tvar([3], "int32")))
    with pytest.raises(OpError, match=r"must have the same rank"):
        infer(op.scatter_elements(tvar([3, 1]), ivar([3]), tvar([3])))
    with pytest.raises(OpError, match=r"indices' shape \(2,\) must equal updates' \(3,\)"):
        infer(op.scatter_elements(tvar([3]), ivar([2]), tvar([3])))
    with pytest.raises(OpError, match=r"longer than data of shape \(3, 2\) on axis 1"):
        infer(op.scatter_elements(tvar([3, 2]), ivar([1, 3]), tvar([1, 3])))


# ---- scatter_nd -----------------------------------------------------------------------------
def test_scatter_nd_keeps_the_data_struct_info() -> None:
    call = op.scatter_nd(tvar([N, 4]), ivar([5, 1]), tvar([5, 4]), reduction="mul")
    assert call.attrs == {"reduction": "mul"}
    assert_shape(infer(call), [N, 4])
    assert_shape(infer(op.scatter_nd(tvar([N, 4]), ivar([5, 2]), tvar([5]))), [N, 4])


def test_scatter_nd_errors() -> None:
    with pytest.raises(OpError, match=r"relax.scatter_nd: reduction must be one of .*got 'mean'"):
        op.scatter_nd(tvar([3]), ivar([1, 1]), tvar([1]), reduction="mean")
    with pytest.raises(OpError, match=r"updates must have rank 2 \(indices.ndim - 1 \+ data.ndim"):
        infer(op.scatter_nd(tvar([3, 4]), ivar([5, 1]), tvar([5])))
    with pytest.raises(OpError, match=r"updates' shape \(5, 3\) must equal \(5, 4\)"):
        infer(op.scatter_nd(tvar([3, 4]), ivar([5, 1]), tvar([5, 3])))
    with pytest.raises(
        OpError, match=r"indices.shape\[-1\] \(3\) must be at most the rank of data \(2\)"
    ):
        infer(op.scatter_nd(tvar([3, 4]), ivar([5, 3]), tvar([5])))


# ---- one_hot --------------------------------------------------------------------------------
def test_one_hot_inserts_the_depth_axis() -> None:
    assert_shape(infer(op.one_hot(ivar([N, 3]), F1, F0, 5)), [N, 3, 5])
    assert_shape(infer(op.one_hot(ivar([N, 3]), F1, F0, 5, axis=0)), [5, N, 3])
    assert_shape(infer(op.one_hot(ivar([N, 3]), F1, F0, 5, axis=1)), [N, 5, 3])
    ints = op.one_hot(
        ivar([2], "int32"), PrimValue(IntImm("int32", 7)), PrimValue(IntImm("int32", 0)), 3
    )
    assert_shape(infer(ints), [2, 3], "int32")
    assert_rank(infer(op.one_hot(ivar(ndim=2), F1, F0, 5)), 3)
    assert infer(op.one_hot(ivar(), F1, F0, 5)).ndim == -1
    call = op.one_hot(ivar([2]), 1.5, 0.5, depth=4)
    assert call.attrs == {"depth": 4, "axis": -1}
    assert isinstance(call.args[1], PrimValue)


def test_one_hot_errors() -> None:
    with pytest.raises(
        OpError,
        match=r"relax.one_hot: on_value and off_value must have the same dtype, got float32 and int32",
    ):
        infer(op.one_hot(ivar([2]), F1, PrimValue(IntImm("int32", 0)), 3))
    with pytest.raises(OpError, match=r"axis 3 is out of range for a tensor of rank 3"):
        infer(op.one_hot(ivar([2, 2]), F1, F0, 3, axis=3))
    with pytest.raises(OpError, match=r"depth must be non-negative, got -1"):
        infer(op.one_hot(ivar([2]), F1, F0, -1))
    with pytest.raises(OpError, match=r"on_value must be a PrimValue"):
        infer(op.one_hot(ivar([2]), tvar([1]), F0, 3))
    with pytest.raises(OpError, match=r"indices must have an integer dtype, got float32"):
        infer(op.one_hot(tvar([2]), F1, F0, 3))


def test_script_spells_the_index_ops() -> None:
    mod = from_source(
        """
@R.function
def main(x: R.Tensor((3, 4), "float32"), i: R.Tensor((3, 2), "int64")):
    a = R.gather_elements(x, i, axis=1)
    b = R.gather_nd(x, i)
    c = R.scatter_elements(x, i, a, axis=1, reduction="add")
    d = R.one_hot(i, R.prim_value(T.float32(1)), R.prim_value(T.float32(0)), 5, axis=0)
    return (a, b, c, d)
"""
    )
    text = mod.script()
    assert 'R.scatter_elements(x, i, a, axis=1, reduction="add")' in text
    assert "R.gather_nd(x, i, batch_dims=0)" in text
    assert 'R.Tensor((5, 3, 2), dtype="float32")' in text
