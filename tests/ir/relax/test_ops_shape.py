"""Inference of tril, triu, flip, tile, repeat, stack, meshgrid, collapse_sum_*, eye and
eye_like: numpy shapes, symbolic extents, unknown ranks, dtypes and errors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from relaxvm.ir import Analyzer, PrimExpr
from relaxvm.ir import Var as SymVar
from relaxvm.ir.relax import (
    PrimValue,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
    Var,
    op,
)
from relaxvm.ir.relax.op import OpError, infer
from relaxvm.script import from_source


def tvar(shape: Sequence[Any] | None = None, dtype: str | None = "float32", ndim: int = -1) -> Var:
    return Var("x", TensorStructInfo(shape, dtype, ndim=ndim))


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
    assert sinfo.shape_values is None, sinfo
    assert sinfo.ndim == ndim, sinfo
    assert (None if sinfo.dtype is None else str(sinfo.dtype)) == dtype, sinfo


N = SymVar("n")


# ---- tril / triu ------------------------------------------------------------------------------
@pytest.mark.parametrize("builder", [op.tril, op.triu])
def test_tril_triu_keep_the_shape(builder: Any) -> None:
    assert_shape(infer(builder(tvar((N, 3, 4), "int32"), 1)), (N, 3, 4), "int32")
    assert_rank(infer(builder(tvar(None, ndim=-1))), -1)
    k = SymVar("k")
    call = builder(tvar((2, 2)), k)
    assert isinstance(call.args[1], PrimValue)
    assert_shape(infer(call), (2, 2))


@pytest.mark.parametrize("name", ["tril", "triu"])
def test_tril_triu_errors(name: str) -> None:
    builder = getattr(op, name)
    with pytest.raises(
        OpError,
        match=rf"relax.{name}: needs a tensor of at least two dimensions, got x of "
        r"shape \(4,\)",
    ):
        infer(builder(tvar((4,))))
    with pytest.raises(OpError, match=rf"relax.{name}: k must be an integer PrimValue"):
        infer(builder(tvar((2, 2)), 1.5))


# ---- flip / tile / repeat ---------------------------------------------------------------------
def test_flip() -> None:
    assert_shape(infer(op.flip(tvar((N, 4)), -1)), (N, 4))
    assert_rank(infer(op.flip(tvar(None, ndim=3), 2)), 3)
    with pytest.raises(OpError, match=r"relax.flip: axis 2 is out of range for a tensor of rank 2"):
        infer(op.flip(tvar((2, 3)), 2))
    with pytest.raises(OpError, match=r"relax.flip: axis must be an int, got None"):
        op.flip(tvar((2, 3)), None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("shape", "reps"), [((2, 3), (2,)), ((2, 3), (2, 1, 3)), ((2, 3, 4), (1, 2)), ((3,), (0, 2))]
)
def test_tile_matches_numpy(shape: tuple, reps: tuple) -> None:
    assert_shape(infer(op.tile(tvar(shape), reps)), np.tile(np.zeros(shape), reps).shape)


def test_tile_symbolic_and_unknown() -> None:
    assert_shape(infer(op.tile(tvar((N, 4)), 3)), (N, 12))
    assert_shape(infer(op.tile(tvar((N,)), [2, 2])), (2, N * 2))
    assert_rank(infer(op.tile(tvar(None, ndim=2), [1, 1, 1])), 3)
    assert_rank(infer(op.tile(tvar(None, ndim=-1), [2])), -1)
    with pytest.raises(OpError, match=r"relax.tile: repeats must be non-negative, got \[2, -1\]"):
        op.tile(tvar((2, 3)), [2, -1])


@pytest.mark.parametrize(("axis", "expected"), [(None, (24,)), (0, (6, 4)), (-1, (2, 12))])
def test_repeat_matches_numpy(axis: int | None, expected: tuple) -> None:
    assert np.repeat(np.zeros((2, 4)), 3, axis=axis).shape == expected
    assert_shape(infer(op.repeat(tvar((2, 4)), 3, axis=axis)), expected)


def test_repeat_symbolic_unknown_and_errors() -> None:
    assert_shape(infer(op.repeat(tvar((N, 4)), 2)), (N * 8,))
    assert_shape(infer(op.repeat(tvar((N, 4)), 2, axis=0)), (N * 2, 4))
    assert_rank(infer(op.repeat(tvar(None, ndim=-1), 2)), 1)
    assert_rank(infer(op.repeat(tvar(None, ndim=-1), 2, axis=0)), -1)
    with pytest.raises(OpError, match=r"relax.repeat: axis -3 is out of range"):
        infer(op.repeat(tvar((2, 4)), 2, axis=-3))
    with pytest.raises(OpError, match=r"relax.repeat: repeats must be a positive int, got 0"):
        op.repeat(tvar((2, 4)), 0)


# ---- stack / meshgrid -------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_stack_matches_numpy(axis: int) -> None:
    expected = np.stack([np.zeros((2, 3))] * 3, axis=axis).shape
    assert_shape(infer(op.stack([tvar((2, 3))] * 3, axis=axis)), expected)


def test_stack_symbolic_unknown_and_errors() -> None:
    assert_shape(infer(op.stack([tvar((N, 4)), tvar((N, 4))], axis=1)), (N, 2, 4))
    assert_shape(infer(op.stack([tvar((N, 4)), tvar(None, ndim=2)])), (2, N, 4))
    assert_rank(infer(op.stack([tvar(None, ndim=-1)])), -1)
    assert_rank(infer(op.stack([tvar(None, ndim=2)] * 2)), 3)
    with pytest.raises(OpError, match=r"relax.stack: tensors must have the same shape, got "
                       r"\(2, 3\), \(2, 4\)"):  # fmt: skip
        infer(op.stack([tvar((2, 3)), tvar((2, 4))]))
    with pytest.raises(OpError, match=r"relax.stack: tensors must have the same dtype"):
        infer(op.stack([tvar((2, 3)), tvar((2, 3), "int32")]))
    with pytest.raises(
        OpError, match=r"relax.stack: axis 3 is out of range for a tensor of rank 3"
    ):
        infer(op.stack([tvar((2, 3))] * 2, axis=3))
    with pytest.raises(OpError, match=r"relax.stack: needs at least one tensor"):
        infer(op.stack([]))
    with pytest.raises(OpError, match=r"relax.stack: the argument must be a tuple of tensors"):
        infer(op.stack(tvar((2, 3))))


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid_matches_numpy(indexing: str) -> None:
    grids = np.meshgrid(np.zeros(2), np.zeros(3), np.zeros(4), indexing=indexing)
    out = infer(op.meshgrid([tvar((2,)), tvar((3,)), tvar((4,))], indexing=indexing))
    assert isinstance(out, TupleStructInfo) and len(out.fields) == 3
    for field, grid in zip(out.fields, grids, strict=True):
        assert_shape(field, grid.shape)


def test_meshgrid_symbolic_unknown_and_errors() -> None:
    out = infer(op.meshgrid([tvar((N,)), tvar((3,))]))
    assert isinstance(out, TupleStructInfo)
    assert_shape(out.fields[1], (N, 3))
    unknown = infer(op.meshgrid([tvar((N,)), tvar(None, ndim=1)]))
    assert isinstance(unknown, TupleStructInfo)
    assert_rank(unknown.fields[0], 2)
    with pytest.raises(OpError, match=r"relax.meshgrid: tensor 1 must be 1-d, got shape \(2, 2\)"):
        infer(op.meshgrid([tvar((2,)), tvar((2, 2))]))
    with pytest.raises(OpError, match=r"relax.meshgrid: indexing must be 'ij' or 'xy', got 'ji'"):
        op.meshgrid([tvar((2,))], indexing="ji")


# ---- collapse_sum -----------------------------------------------------------------------------
def test_collapse_sum_to_and_like() -> None:
    assert_shape(infer(op.collapse_sum_to(tvar((N, 2, 4), "int32"), (2, 1))), (2, 1), "int32")
    assert_shape(infer(op.collapse_sum_like(tvar((N, 4)), tvar((1, 4), "int8"))), (1, 4))
    assert_rank(infer(op.collapse_sum_like(tvar((N, 4)), tvar(None, ndim=1))), 1)
    assert_shape(infer(op.collapse_sum_to(tvar(None, ndim=-1), (3,))), (3,))
    target = Var("s", ShapeStructInfo(ndim=2))
    by_var = infer(op.collapse_sum_to(tvar((N, 4)), target))
    assert isinstance(by_var, TensorStructInfo) and by_var.shape is target


def test_collapse_sum_errors() -> None:
    with pytest.raises(
        OpError,
        match=r"relax.collapse_sum_to: cannot collapse data of shape \(2, 3\) to \(2, 2\)"
        r": dimension 1 of data is 3, which is neither 2 nor summed over",
    ):
        infer(op.collapse_sum_to(tvar((2, 3)), (2, 2)))
    with pytest.raises(
        OpError,
        match=r"relax.collapse_sum_like: cannot collapse data of shape \(3,\) to a "
        r"shape of higher rank 2",
    ):
        infer(op.collapse_sum_like(tvar((3,)), tvar((1, 3))))


# ---- eye / eye_like ---------------------------------------------------------------------------
def test_eye() -> None:
    assert_shape(infer(op.eye(3)), (3, 3))
    assert_shape(infer(op.eye(N, 4, k=-1, dtype="int32")), (N, 4), "int32")
    with pytest.raises(OpError, match=r"relax.eye: n must be non-negative, got -2"):
        infer(op.eye(-2))
    with pytest.raises(OpError, match=r"relax.eye: k must be an integer PrimValue"):
        infer(op.eye(2, 2, 0.5))
    with pytest.raises(OpError, match=r"relax.eye: dtype is required, got None"):
        op.eye(2, dtype=None)  # type: ignore[arg-type]


def test_eye_like() -> None:
    assert_shape(infer(op.eye_like(tvar((N, 4)), 1)), (N, 4))
    assert_shape(infer(op.eye_like(tvar((2, 4)), dtype="int8")), (2, 4), "int8")
    assert_rank(infer(op.eye_like(tvar(None, ndim=-1))), 2)
    with pytest.raises(OpError, match=r"relax.eye_like: x must be a 2-d tensor, got shape \(4,\)"):
        infer(op.eye_like(tvar((4,))))


# ---- script -----------------------------------------------------------------------------------
def test_script_parses_and_prints_the_ops() -> None:
    source = """
from relaxvm.script import ir as I, relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), v: R.Tensor((3,), "int32")):
        a = R.tril(x, 1)
        f = R.stack((a, x), axis=2)
        g = R.meshgrid((v, v), indexing="xy")
        h = R.collapse_sum_to(x, R.shape([1, 4]))
        j = R.eye(3, 4, 1, dtype="int32")
        return (f, g, h, j, R.repeat(x, 2), R.tile(x, [2, 1]), R.flip(x, axis=0))
"""
    text = str(from_source(source))
    assert "R.tril(x, R.prim_value(1))" in text
    assert 'f: R.Tensor((n, 4, 2), dtype="float32") = R.stack((a, x), axis=2)' in text
    assert 'R.meshgrid((v, v), indexing="xy")' in text
    assert 'h: R.Tensor((1, 4), dtype="float32")' in text
    assert 'R.eye(R.prim_value(3), R.prim_value(4), R.prim_value(1), dtype="int32")' in text
    assert "R.repeat(x, repeats=2, axis=None)" in text
    assert "R.tile(x, repeats=[2, 1])" in text
