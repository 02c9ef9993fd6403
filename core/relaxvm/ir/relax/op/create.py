"""Tensor creation: full, zeros, ones, their ``*_like`` forms, arange, eye, eye_like; and
cumsum."""

from __future__ import annotations

import math
from typing import Any

from ....runtime.dtype import DataType, DataTypeCode
from ...expr import FloatImm, IntImm, PrimExpr
from ...op import add, cast, floordiv, max_expr, sub
from .._base import RelaxExpr
from ..expr import Call, Var
from ..struct_info import PrimStructInfo, StructInfo, TensorStructInfo
from ._common import (
    as_int,
    as_prim_value,
    as_shape_expr,
    dims_text,
    dtype_attr,
    make_call,
    normalize_axis,
    product,
    same_shape,
    shape_arg_ndim,
    shape_arg_values,
    tensor,
)
from .registry import InferContext, OpError, OpTypeError, register_op

_DTYPE_ATTR = {"dtype": "the element type; None takes it from the input"}


def _scalar_dtype(ctx: InferContext, call: Call, index: int, what: str) -> DataType | None:
    """The dtype of a scalar argument (PrimValue or 0-d tensor); an error otherwise."""
    sinfo = ctx.arg_sinfo(call, index)
    if isinstance(sinfo, PrimStructInfo):
        return sinfo.dtype
    if isinstance(sinfo, TensorStructInfo) and sinfo.ndim in (0, -1):
        return sinfo.dtype
    raise ctx.error(f"{what} must be a scalar (PrimValue or 0-d tensor), got {sinfo}")


def _shaped(ctx: InferContext, call: Call, dtype: DataType | str | None) -> TensorStructInfo:
    values = shape_arg_values(ctx, call, 0)
    shape = call.args[0]
    if isinstance(shape, Var):
        # As TVM, the result's shape is the shape argument itself, a variable included.
        return TensorStructInfo(shape, dtype)
    if values is None:
        return tensor(None, dtype, shape_arg_ndim(ctx, call, 0))
    return tensor(values, dtype)


def _infer_full(call: Call, ctx: InferContext) -> StructInfo:
    # As TVM: the fill value is a 0-d tensor (a rank-unknown one is rejected too, since it
    # may not be a scalar); relaxvm also takes a PrimValue. The result lives where the fill
    # value does.
    fill = ctx.arg_sinfo(call, 1)
    if isinstance(fill, TensorStructInfo) and fill.ndim != 0:
        raise ctx.error(f"fill_value must be a scalar (a 0-d tensor or PrimValue), got {fill}")
    fill_dtype = _scalar_dtype(ctx, call, 1, "fill_value")
    dtype = ctx.attr(call, "dtype") or fill_dtype
    vdevice = fill.vdevice if isinstance(fill, TensorStructInfo) else None
    result = _shaped(ctx, call, dtype)
    return TensorStructInfo(result.shape, result.dtype, ndim=result.ndim, vdevice=vdevice)


def _infer_zeros_ones(call: Call, ctx: InferContext) -> StructInfo:
    return _shaped(ctx, call, ctx.attr(call, "dtype"))


def _infer_like(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "x")
    if len(call.args) == 2:
        _scalar_dtype(ctx, call, 1, "fill_value")
    return same_shape(info, ctx.attr(call, "dtype") or info.dtype)


def _is_float(dtype: DataType) -> bool:
    return dtype.code in (DataTypeCode.FLOAT, DataTypeCode.BFLOAT)


def _infer_arange(call: Call, ctx: InferContext) -> StructInfo:
    bounds: list[PrimExpr] = []
    for index, name in enumerate(("start", "end", "step")):
        sinfo = ctx.arg_sinfo(call, index)
        if not isinstance(sinfo, PrimStructInfo):
            raise ctx.error(f"{name} must be a scalar PrimValue, got {sinfo}")
        if sinfo.value is None:
            return tensor(None, ctx.attr(call, "dtype") or sinfo.dtype, 1)
        bounds.append(sinfo.value)
    start, end, step = bounds
    any_float = any(_is_float(b.dtype) for b in bounds)
    dtype = ctx.attr(call, "dtype") or ("float32" if any_float else "int64")
    if isinstance(step, (IntImm, FloatImm)) and step.value == 0:
        raise ctx.error("step must be non-zero")
    if all(isinstance(b, (IntImm, FloatImm)) for b in bounds):
        count = math.ceil((end.value - start.value) / step.value)  # type: ignore[attr-defined]
        return tensor([count if count > 0 else 0], dtype)
    if any_float or not isinstance(step, IntImm):
        return tensor(None, dtype, 1)
    start_i, end_i = cast(start, "int64"), cast(end, "int64")
    if step.value > 0:
        span = add(sub(end_i, start_i), step.value - 1)
        count_expr = floordiv(span, step.value)
    else:
        span = add(sub(start_i, end_i), -step.value - 1)
        count_expr = floordiv(span, -step.value)
    return tensor([ctx.analyzer.simplify(max_expr(count_expr, 0))], dtype)


def _int_prim(ctx: InferContext, call: Call, index: int, what: str) -> PrimExpr | None:
    """The value of an integer PrimValue argument; None when only its type is known."""
    sinfo = ctx.arg_sinfo(call, index)
    if not isinstance(sinfo, PrimStructInfo) or (
        sinfo.dtype is not None and sinfo.dtype.code not in (DataTypeCode.INT, DataTypeCode.UINT)
    ):
        raise ctx.type_error(f"{what} must be an integer PrimValue, got {sinfo}")
    return sinfo.value


def _infer_eye(call: Call, ctx: InferContext) -> StructInfo:
    rows, cols = _int_prim(ctx, call, 0, "n"), _int_prim(ctx, call, 1, "m")
    _int_prim(ctx, call, 2, "k")
    for what, value in (("n", rows), ("m", cols)):
        if isinstance(value, IntImm) and value.value < 0:
            raise ctx.error(f"{what} must be non-negative, got {value.value}")
    dtype = ctx.attr(call, "dtype")
    if rows is None or cols is None:
        return tensor(None, dtype, 2)
    return tensor([rows, cols], dtype)


def _infer_eye_like(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "x")
    _int_prim(ctx, call, 1, "k")
    if info.ndim not in (2, -1):
        raise ctx.error(f"x must be a 2-d tensor, got shape {dims_text(info)}")
    return TensorStructInfo(
        info.shape, ctx.attr(call, "dtype") or info.dtype, ndim=2, vdevice=info.vdevice
    )


def _infer_cumsum(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "data")
    dtype = ctx.attr(call, "dtype") or info.dtype
    axis = ctx.attr(call, "axis")
    if axis is None:
        values = info.shape_values
        if values is None:
            return tensor(None, dtype, 1, like=info)
        return tensor([ctx.analyzer.simplify(product(values))], dtype, like=info)
    if info.ndim != -1:
        normalize_axis(ctx, axis, info.ndim)
    return same_shape(info, dtype)


register_op(
    "relax.full", num_inputs=2, infer=_infer_full, attrs=_DTYPE_ATTR, doc="filled with a value"
)
register_op("relax.zeros", num_inputs=1, infer=_infer_zeros_ones, attrs=_DTYPE_ATTR, doc="zeros")
register_op("relax.ones", num_inputs=1, infer=_infer_zeros_ones, attrs=_DTYPE_ATTR, doc="ones")
register_op("relax.zeros_like", num_inputs=1, infer=_infer_like, attrs=_DTYPE_ATTR, doc="zeros")
register_op("relax.ones_like", num_inputs=1, infer=_infer_like, attrs=_DTYPE_ATTR, doc="ones")
register_op("relax.full_like", num_inputs=2, infer=_infer_like, attrs=_DTYPE_ATTR, doc="fill")
register_op(
    "relax.arange",
    num_inputs=3,
    infer=_infer_arange,
    attrs={"dtype": "element type; default int64, or float32 when a bound is a float"},
    doc="evenly spaced values in [start, end)",
)
register_op(
    "relax.eye",
    num_inputs=3,
    infer=_infer_eye,
    attrs={"dtype": "the element type"},
    doc="ones on diagonal k of an (n, m) matrix",
)
register_op(
    "relax.eye_like",
    num_inputs=2,
    infer=_infer_eye_like,
    attrs=_DTYPE_ATTR,
    doc="eye with the shape of a 2-d tensor",
)
register_op(
    "relax.cumsum",
    num_inputs=1,
    infer=_infer_cumsum,
    attrs={"axis": "None flattens first", **_DTYPE_ATTR, "exclusive": "exclude the own element"},
    doc="cumulative sum",
)


def full(shape: Any, fill_value: Any, dtype: str | DataType | None = None) -> Call:
    """A tensor of ``shape`` filled with ``fill_value`` (a number, PrimValue or 0-d tensor)."""
    name = "relax.full"
    if not isinstance(shape, (RelaxExpr, list, tuple)):
        # As TVM, a bare int or PrimExpr is not a shape (write (n,) for a 1-d one).
        raise OpTypeError(
            f"{name}: shape must be a tuple/list of extents or a shape value, got "
            f"{type(shape).__name__} {shape!r}"
        )
    args = [as_shape_expr(name, shape), as_prim_value(name, fill_value)]
    return make_call(name, args, {"dtype": dtype_attr(name, dtype)})


def zeros(shape: Any, dtype: str | DataType) -> Call:
    """A tensor of zeros."""
    return make_call(
        "relax.zeros",
        [as_shape_expr("relax.zeros", shape)],
        {"dtype": dtype_attr("relax.zeros", dtype)},
    )


def ones(shape: Any, dtype: str | DataType) -> Call:
    """A tensor of ones."""
    return make_call(
        "relax.ones",
        [as_shape_expr("relax.ones", shape)],
        {"dtype": dtype_attr("relax.ones", dtype)},
    )


def zeros_like(x: RelaxExpr, dtype: str | DataType | None = None) -> Call:
    """Zeros with the shape of ``x`` (and its dtype unless given)."""
    return make_call("relax.zeros_like", [x], {"dtype": dtype_attr("relax.zeros_like", dtype)})


def ones_like(x: RelaxExpr, dtype: str | DataType | None = None) -> Call:
    """Ones with the shape of ``x`` (and its dtype unless given)."""
    return make_call("relax.ones_like", [x], {"dtype": dtype_attr("relax.ones_like", dtype)})


def full_like(x: RelaxExpr, fill_value: Any, dtype: str | DataType | None = None) -> Call:
    """``fill_value`` with the shape of ``x`` (and its dtype unless given)."""
    name = "relax.full_like"
    return make_call(name, [x, as_prim_value(name, fill_value)], {"dtype": dtype_attr(name, dtype)})


def arange(start: Any, end: Any = None, step: Any = 1, dtype: str | DataType | None = None) -> Call:
    """Values ``start, start + step, ...`` below ``end``; ``arange(n)`` counts from 0."""
    name = "relax.arange"
    if end is None:
        start, end = 0, start
    args = [as_prim_value(name, v) for v in (start, end, step)]
    return make_call(name, args, {"dtype": dtype_attr(name, dtype)})


def eye(n: Any, m: Any = None, k: Any = 0, dtype: str | DataType = "float32") -> Call:
    """An ``(n, m)`` matrix with ones on diagonal ``k`` (0 the main one, > 0 above it) and
    zeros elsewhere; ``m`` defaults to ``n``. ``n``, ``m`` and ``k`` are ints, PrimExprs or
    integer PrimValues."""
    name = "relax.eye"
    args = [as_prim_value(name, v) for v in (n, n if m is None else m, k)]
    attr = dtype_attr(name, dtype)
    if attr is None:
        raise OpError(f"{name}: dtype is required, got {dtype!r}")
    return make_call(name, args, {"dtype": attr})


def eye_like(x: RelaxExpr, k: Any = 0, dtype: str | DataType | None = None) -> Call:
    """:func:`eye` with the shape of the 2-d tensor ``x`` (and its dtype unless given)."""
    name = "relax.eye_like"
    return make_call(name, [x, as_prim_value(name, k)], {"dtype": dtype_attr(name, dtype)})


def cumsum(
    data: RelaxExpr,
    axis: int | None = None,
    dtype: str | DataType | None = None,
    exclusive: bool = False,
) -> Call:
    """Cumulative sum along ``axis`` (over the flattened tensor when None)."""
    name = "relax.cumsum"
    attrs = {
        "axis": None if axis is None else as_int(name, "axis", axis),
        "dtype": dtype_attr(name, dtype),
        "exclusive": bool(exclusive),
    }
    return make_call(name, [data], attrs)


__all__ = [
    "arange",
    "cumsum",
    "eye",
    "eye_like",
    "full",
    "full_like",
    "ones",
    "ones_like",
    "zeros",
    "zeros_like",
]
