"""Reductions: axis normalization, keepdims, argmax/argmin dtype, unknown ranks."""

from __future__ import annotations

import numpy as np
import pytest

from relaxvm.ir import Var as SymVar
from relaxvm.ir.relax import op
from relaxvm.ir.relax.op import OpError, infer
from relaxvm.ir.relax.op.reduction import REDUCTIONS

from .conftest import assert_rank_only, assert_shape, tvar

AXIS_CASES = [None, 0, 1, -1, [0, 2], (-1, -3), [1]]


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("axis", AXIS_CASES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduction_shapes_match_numpy(name: str, axis: object, keepdims: bool) -> None:
    shape = (2, 3, 4)
    np_axis = tuple(axis) if isinstance(axis, list) else axis
    expected = np.sum(np.zeros(shape), axis=np_axis, keepdims=keepdims).shape
    sinfo = infer(getattr(op, name)(tvar(shape), axis=axis, keepdims=keepdims))
    assert_shape(sinfo, expected)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_reductions_give_int64(name: str) -> None:
    n = SymVar("n")
    assert_shape(infer(getattr(op, name)(tvar((n, 5)), axis=1)), (n,), "int64")
    assert_shape(infer(getattr(op, name)(tvar((n, 5)), axis=0, keepdims=True)), (1, 5), "int64")
    assert_shape(infer(getattr(op, name)(tvar((n, 5)))), (), "int64")
    with pytest.raises(OpError, match=rf"relax.{name}: axis must be a single int or None"):
        infer(getattr(op, name)(tvar((2, 3)), axis=[0, 1]))  # type: ignore[arg-type]


def test_symbolic_dims_are_kept() -> None:
    n, m = SymVar("n"), SymVar("m")
    assert_shape(infer(op.sum(tvar((n, m, 4)), axis=[1])), (n, 4))
    assert_shape(infer(op.mean(tvar((n, m, 4)), axis=-1, keepdims=True)), (n, m, 1))


def test_unknown_rank() -> None:
    assert_shape(infer(op.sum(tvar(None, ndim=-1))), ())
    assert_rank_only(infer(op.sum(tvar(None, ndim=-1), axis=1)), -1)
    assert_rank_only(infer(op.max(tvar(None, ndim=-1), keepdims=True)), -1)
    assert_rank_only(infer(op.max(tvar(None, ndim=3), axis=[0, 1])), 1)
    assert_rank_only(infer(op.min(tvar(None, ndim=3), axis=[0], keepdims=True)), 3)


def test_unknown_dtype_is_kept_unknown() -> None:
    assert_shape(infer(op.prod(tvar((2, 3), None), axis=0)), (3,), None)


def test_axis_out_of_range() -> None:
    with pytest.raises(OpError, match=r"relax.sum: axis 3 is out of range for a tensor of rank 3"):
        infer(op.sum(tvar((2, 3, 4)), axis=3))
    with pytest.raises(OpError, match=r"relax.variance: axis -4 is out of range"):
        infer(op.variance(tvar((2, 3, 4)), axis=-4))


def test_repeated_axis() -> None:
    with pytest.raises(OpError, match=r"relax.mean: axes \[1, -1\] repeat an axis"):
        infer(op.mean(tvar((2, 3)), axis=[1, -1]))


def test_bad_axis_type_in_builder() -> None:
    with pytest.raises(OpError, match=r"relax.sum: axis must be an int or a list of ints"):
        op.sum(tvar((2,)), axis="0")  # type: ignore[arg-type]
    with pytest.raises(OpError, match=r"relax.sum: axis\[0\] must be an int"):
        op.sum(tvar((2,)), axis=[0.5])  # type: ignore[list-item]


def test_non_tensor_input() -> None:
    from relaxvm.ir.relax import PrimValue

    with pytest.raises(OpError, match="relax.sum: x must be a tensor"):
        infer(op.sum(PrimValue(1)))
