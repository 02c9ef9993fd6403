"""Helpers for the op tests: variables with given struct info and shape comparison."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from relaxvm.ir import Analyzer, PrimExpr
from relaxvm.ir.relax import StructInfo, TensorStructInfo, Var


def tvar(shape: Sequence[Any] | None = None, dtype: str | None = "float32", ndim: int = -1) -> Var:
    """A Relax variable of tensor type."""
    return Var("x", TensorStructInfo(shape, dtype, ndim=ndim))


def assert_shape(sinfo: StructInfo, expected: Sequence[Any], dtype: str | None = "float32") -> None:
    """``sinfo`` is a tensor of ``dtype`` whose extents equal ``expected`` (by the Analyzer)."""
    assert isinstance(sinfo, TensorStructInfo), sinfo
    values = sinfo.shape_values
    assert values is not None, f"no literal shape in {sinfo}"
    assert len(values) == len(expected), f"{sinfo} vs {expected}"
    analyzer = Analyzer()
    for got, want in zip(values, expected, strict=True):
        assert isinstance(got, PrimExpr)
        assert analyzer.can_prove_equal(got, want), f"{sinfo}: {got} != {want}"
    if dtype is None:
        assert sinfo.dtype is None
    else:
        assert str(sinfo.dtype) == dtype, sinfo


def assert_rank_only(sinfo: StructInfo, ndim: int, dtype: str | None = "float32") -> None:
    """``sinfo`` is a tensor without a literal shape and of rank ``ndim`` (-1: unknown)."""
    assert isinstance(sinfo, TensorStructInfo), sinfo
    assert sinfo.shape_values is None, sinfo
    assert sinfo.ndim == ndim, sinfo
    assert (None if sinfo.dtype is None else str(sinfo.dtype)) == dtype, sinfo
