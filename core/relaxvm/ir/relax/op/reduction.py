"""Reductions over axes: sum, mean, max, min, prod, variance, argmax, argmin."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ....runtime.dtype import DataType
from ...expr import IntImm
from .._base import RelaxExpr
from ..expr import Call
from ..struct_info import StructInfo
from ._common import as_axes, make_call, normalize_axes, tensor
from .registry import InferContext, register_op

REDUCTIONS = ("sum", "mean", "max", "min", "prod", "variance")
ARG_REDUCTIONS = ("argmax", "argmin")
_INT64 = DataType("int64")
_ATTRS = {
    "axis": "None (all axes) or a tuple of axes; negatives count from the end",
    "keepdims": "keep reduced axes as extent 1",
}


def _infer_reduce(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "x")
    axes = ctx.attr(call, "axis")
    keepdims = bool(ctx.attr(call, "keepdims", False))
    is_arg = ctx.op_name.endswith(("argmax", "argmin"))
    dtype = _INT64 if is_arg else info.dtype
    if is_arg and axes is not None and len(axes) != 1:
        raise ctx.error(f"axis must be a single int or None, got {list(axes)}")
    if info.ndim == -1:
        # Rank unknown: only "reduce everything, drop the axes" has a known (0-d) result.
        if axes is None and not keepdims:
            return tensor([], dtype, like=info)
        return tensor(None, dtype, -1, like=info)
    reduced = set(range(info.ndim)) if axes is None else set(normalize_axes(ctx, axes, info.ndim))
    values = info.shape_values
    if values is None:
        ndim = info.ndim if keepdims else info.ndim - len(reduced)
        return tensor(None, dtype, ndim, like=info)
    out = []
    for index, dim in enumerate(values):
        if index not in reduced:
            out.append(dim)
        elif keepdims:
            out.append(IntImm(1))
    return tensor(out, dtype, like=info)


for _name in (*REDUCTIONS, *ARG_REDUCTIONS):
    register_op(
        f"relax.{_name}", num_inputs=1, infer=_infer_reduce, attrs=_ATTRS, doc=f"{_name} reduction"
    )


def _reduce(name: str, x: RelaxExpr, axis: Any, keepdims: bool) -> Call:
    op_name = f"relax.{name}"
    return make_call(op_name, [x], {"axis": as_axes(op_name, axis), "keepdims": bool(keepdims)})


def sum(x: RelaxExpr, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Call:
    """Sum over ``axis`` (all axes when None)."""
    return _reduce("sum", x, axis, keepdims)


def mean(x: RelaxExpr, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Call:
    """Mean over ``axis`` (all axes when None)."""
    return _reduce("mean", x, axis, keepdims)


def max(x: RelaxExpr, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Call:
    """Maximum over ``axis`` (all axes when None)."""
    return _reduce("max", x, axis, keepdims)


def min(x: RelaxExpr, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Call:
    """Minimum over ``axis`` (all axes when None)."""
    return _reduce("min", x, axis, keepdims)


def prod(x: RelaxExpr, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Call:
    """Product over ``axis`` (all axes when None)."""
    return _reduce("prod", x, axis, keepdims)


def variance(x: RelaxExpr, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Call:
    """Population variance over ``axis`` (all axes when None)."""
    return _reduce("variance", x, axis, keepdims)


def argmax(x: RelaxExpr, axis: int | None = None, keepdims: bool = False) -> Call:
    """Index (int64) of the maximum along ``axis`` (of the flattened tensor when None)."""
    return _reduce("argmax", x, axis, keepdims)


def argmin(x: RelaxExpr, axis: int | None = None, keepdims: bool = False) -> Call:
    """Index (int64) of the minimum along ``axis`` (of the flattened tensor when None)."""
    return _reduce("argmin", x, axis, keepdims)


# Spelled out (not built from the tuples above) so that type checkers see the names.
__all__ = [
    "argmax",
    "argmin",
    "max",
    "mean",
    "min",
    "prod",
    "sum",
    "variance",
]
