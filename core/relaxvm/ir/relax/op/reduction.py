"""Reductions over axes: sum, mean, max, min, prod, variance, std, argmax, argmin, median;
and the cumulative product (cumprod, a scan like create.cumsum)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ....runtime.dtype import DataType
from ...expr import IntImm
from .._base import RelaxExpr
from ..expr import Call
from ..struct_info import StructInfo, TensorStructInfo, TupleStructInfo
from ._common import (
    as_axes,
    as_int,
    dtype_attr,
    make_call,
    normalize_axes,
    normalize_axis,
    product,
    same_shape,
    tensor,
)
from .registry import InferContext, register_op

REDUCTIONS = ("sum", "mean", "max", "min", "prod", "variance", "std")
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
        # As TVM: a rank-only input still gives a literal shape when every extent of the
        # result is known: all ones (every axis kept as 1) or the 0-d shape.
        if keepdims and axes is None:
            return tensor([IntImm(1)] * info.ndim, dtype, like=info)
        ndim = info.ndim if keepdims else info.ndim - len(reduced)
        return tensor([] if ndim == 0 else None, dtype, ndim, like=info)
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


def _infer_median(call: Call, ctx: InferContext) -> StructInfo:
    # TVM's InferTypeStatisticalExtension: a reduction, and with exactly one axis a pair
    # (values, int64 indices along that axis).
    values = _infer_reduce(call, ctx)
    axes = ctx.attr(call, "axis")
    if axes is None or len(axes) != 1 or not isinstance(values, TensorStructInfo):
        return values
    indices = TensorStructInfo(values.shape, _INT64, ndim=values.ndim, vdevice=values.vdevice)
    return TupleStructInfo([values, indices])


register_op(
    "relax.median",
    num_inputs=1,
    infer=_infer_median,
    attrs=_ATTRS,
    doc="lower median; with one axis also its index",
)


def _infer_scan(call: Call, ctx: InferContext) -> StructInfo:
    # TVM's InferTypeScan: the input's shape (a 1-d tensor of every element when axis is None)
    # in the dtype attribute, or the input's dtype.
    info = ctx.tensor_arg(call, 0, "data")
    dtype = ctx.attr(call, "dtype") or info.dtype
    axis = ctx.attr(call, "axis")
    if axis is None:
        values = info.shape_values
        if values is None:
            return tensor(None, dtype, 1, like=info)
        return tensor([ctx.analyzer.simplify(product(values))], dtype, like=info)
    if info.ndim != -1:
        if info.ndim == 0:
            raise ctx.error("data must have rank >= 1 to scan along an axis, got a 0-d tensor")
        normalize_axis(ctx, axis, info.ndim)
    return same_shape(info, dtype)


register_op(
    "relax.cumprod",
    num_inputs=1,
    infer=_infer_scan,
    attrs={
        "axis": "None flattens first",
        "dtype": "the element type; None takes it from the input",
        "exclusive": "exclude the own element",
    },
    doc="cumulative product",
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


def std(x: RelaxExpr, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Call:
    """Population standard deviation, ``sqrt(variance)``, over ``axis`` (all axes when None).

    Integer inputs give the integer square root (truncated) of the integer variance.
    """
    return _reduce("std", x, axis, keepdims)


def cumprod(
    data: RelaxExpr,
    axis: int | None = None,
    dtype: str | DataType | None = None,
    exclusive: bool = False,
) -> Call:
    """Cumulative product along ``axis``.

    Parameters
    ----------
    data : RelaxExpr
        The input tensor.
    axis : int, optional
        The scan axis; None scans the flattened tensor (the result is 1-d).
    dtype : str or DataType, optional
        The result (and accumulation) dtype; the input's by default.
    exclusive : bool
        Exclude each element from its own product: the first is 1.

    Returns
    -------
    Call
        A tensor of ``data``'s shape (1-d when ``axis`` is None).
    """
    name = "relax.cumprod"
    attrs = {
        "axis": None if axis is None else as_int(name, "axis", axis),
        "dtype": dtype_attr(name, dtype),
        "exclusive": bool(exclusive),
    }
    return make_call(name, [data], attrs)


def median(x: RelaxExpr, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Call:
    """The lower median over ``axis`` (all axes when None), as TVM's and PyTorch's median.

    For an even count it is the lower of the two middle values (numpy's ``median`` averages
    them). A NaN anywhere in the reduced elements gives NaN.

    Parameters
    ----------
    x : RelaxExpr
        The input tensor.
    axis : int or sequence of int, optional
        The reduced axes; None reduces every axis.
    keepdims : bool
        Keep the reduced axes as extent 1.

    Returns
    -------
    Call
        With exactly one axis, a tuple ``(values, indices)``: ``indices`` (int64) is the
        position along the axis of the median (the first of equal values in a stable sort;
        the first NaN when there is one). Otherwise the values alone.
    """
    return _reduce("median", x, axis, keepdims)


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
    "cumprod",
    "max",
    "mean",
    "median",
    "min",
    "prod",
    "std",
    "sum",
    "variance",
]
