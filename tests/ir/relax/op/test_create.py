"""Creation ops (full, zeros, ones, *_like, arange) and cumsum."""

from __future__ import annotations

import numpy as np
import pytest

from relaxvm.ir import Var as SymVar
from relaxvm.ir.relax import PrimValue, ShapeStructInfo, Var, const, op
from relaxvm.ir.relax.op import OpError, infer

from .conftest import assert_rank_only, assert_shape, tvar


def test_full_zeros_ones() -> None:
    n = SymVar("n")
    assert_shape(infer(op.full((n, 3), 1.5)), (n, 3), "float32")
    assert_shape(infer(op.full((2,), 7, dtype="int8")), (2,), "int8")
    assert_shape(infer(op.full([4], const(np.float16(1)))), (4,), "float16")
    assert_shape(infer(op.zeros((2, n), "int32")), (2, n), "int32")
    assert_shape(infer(op.ones(5, "bool")), (5,), "bool")
    s = Var("s", ShapeStructInfo(ndim=3))
    assert_rank_only(infer(op.zeros(s, "float32")), 3)


def test_full_errors() -> None:
    with pytest.raises(OpError, match=r"relax.full: fill_value must be a scalar"):
        infer(op.full((2,), tvar((2,))))
    with pytest.raises(OpError, match=r"relax.zeros: argument 0 must be a shape"):
        infer(op.zeros(tvar((2,)), "float32"))
    with pytest.raises(OpError, match=r"relax.zeros: invalid dtype 'nope'"):
        op.zeros((2,), "nope")


def test_like_ops() -> None:
    n = SymVar("n")
    assert_shape(infer(op.zeros_like(tvar((n, 2)))), (n, 2))
    assert_shape(infer(op.ones_like(tvar((n, 2)), "int64")), (n, 2), "int64")
    assert_shape(infer(op.full_like(tvar((3,), "int32"), 4)), (3,), "int32")
    assert_rank_only(infer(op.ones_like(tvar(None, ndim=-1))), -1)
    with pytest.raises(OpError, match="relax.full_like: fill_value must be a scalar"):
        infer(op.full_like(tvar((3,)), tvar((3,))))


@pytest.mark.parametrize(
    ("args", "dtype"),
    [
        ((5,), "int64"),
        ((2, 9, 3), "int64"),
        ((10, 0, -3), "int64"),
        ((0.0, 1.0, 0.3), "float32"),
        ((4, 2), "int64"),
    ],
)
def test_arange_matches_numpy(args: tuple, dtype: str) -> None:
    expected = np.arange(*args).shape
    assert_shape(infer(op.arange(*args)), expected, dtype)


def test_arange_symbolic_and_errors() -> None:
    n = SymVar("n")
    from relaxvm.ir import Analyzer, ConstIntBound

    analyzer = Analyzer()
    analyzer.update(n, ConstIntBound(0, 1000))
    assert_shape(op.infer_struct_info(op.arange(n), analyzer), (n,), "int64")
    assert_shape(op.infer_struct_info(op.arange(0, n * 2, 2), analyzer), (n,), "int64")
    assert_shape(infer(op.arange(0, 6, 2, dtype="int32")), (3,), "int32")
    with pytest.raises(OpError, match="relax.arange: step must be non-zero"):
        infer(op.arange(0, 5, 0))
    with pytest.raises(OpError, match="relax.arange: start must be a scalar PrimValue"):
        infer(op.arange(tvar(()), PrimValue(3), PrimValue(1)))


def test_cumsum() -> None:
    n = SymVar("n")
    assert_shape(infer(op.cumsum(tvar((n, 3)), axis=1)), (n, 3))
    assert_shape(infer(op.cumsum(tvar((n, 3)))), (n * 3,))
    assert_shape(infer(op.cumsum(tvar((2, 3), "int32"), axis=0, dtype="int64")), (2, 3), "int64")
    assert_rank_only(infer(op.cumsum(tvar(None, ndim=-1), axis=0)), -1)
    assert_rank_only(infer(op.cumsum(tvar(None, ndim=-1))), 1)
    with pytest.raises(OpError, match="relax.cumsum: axis 2 is out of range"):
        infer(op.cumsum(tvar((2, 3)), axis=2))
