"""Elementwise ops: binary arithmetic with numpy broadcasting, comparisons, logical ops,
unary math, ``clip``, ``astype`` and ``where``."""

from __future__ import annotations

from typing import Any

from ....runtime.dtype import DataType, DataTypeCode
from .._base import RelaxExpr
from ..expr import Call
from ..struct_info import PrimStructInfo, StructInfo, TensorStructInfo
from ._common import (
    as_prim_value,
    broadcast_ndim,
    broadcast_shapes,
    dims_text,
    dtype_attr,
    make_call,
    same_shape,
    tensor,
    unify_dtypes,
)
from .registry import InferContext, register_op

_BOOL = DataType("bool")

ARITH_BINARY = (
    "add",
    "subtract",
    "multiply",
    "divide",
    "floor_divide",
    "power",
    "maximum",
    "minimum",
)
COMPARISONS = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")
LOGICAL_BINARY = ("logical_and", "logical_or", "logical_xor")
FLOAT_UNARY = ("exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf")
NUMERIC_UNARY = ("abs", "negative", "round", "floor", "ceil")


def _is_float(dtype: DataType) -> bool:
    return dtype.code in (DataTypeCode.FLOAT, DataTypeCode.BFLOAT)


def _require_bool(ctx: InferContext, info: TensorStructInfo, what: str) -> None:
    if info.dtype is not None and info.dtype != _BOOL:
        raise ctx.error(f"{what} must be bool, got {info.dtype} with shape {dims_text(info)}")


def _broadcast_result(
    ctx: InferContext, infos: list[TensorStructInfo], dtype: DataType | None
) -> TensorStructInfo:
    shape = broadcast_shapes(ctx, infos)
    if shape is not None:
        return tensor(shape, dtype, like=infos[0])
    if len(infos) == 2:
        # x op x with a shape variable: the shape is kept exactly.
        first, second = infos
        if first.shape is not None and first.shape is second.shape:
            return same_shape(first, dtype)
    return tensor(None, dtype, broadcast_ndim(infos), like=infos[0])


def _binary_operands(call: Call, ctx: InferContext) -> list[TensorStructInfo]:
    infos = []
    for index in range(2):
        sinfo = ctx.arg_sinfo(call, index)
        if isinstance(sinfo, PrimStructInfo):
            # A scalar operand behaves as a 0-d tensor, as in TVM.
            sinfo = TensorStructInfo([], sinfo.dtype)
        if not isinstance(sinfo, TensorStructInfo):
            raise ctx.error(f"operand {index} must be a tensor or a scalar, got {sinfo}")
        infos.append(sinfo)
    return infos


def _infer_arith(call: Call, ctx: InferContext) -> StructInfo:
    infos = _binary_operands(call, ctx)
    dtype = unify_dtypes(ctx, infos)
    return _broadcast_result(ctx, infos, dtype)


def _infer_compare(call: Call, ctx: InferContext) -> StructInfo:
    infos = _binary_operands(call, ctx)
    unify_dtypes(ctx, infos)
    return _broadcast_result(ctx, infos, _BOOL)


def _infer_logical(call: Call, ctx: InferContext) -> StructInfo:
    infos = _binary_operands(call, ctx)
    for index, info in enumerate(infos):
        _require_bool(ctx, info, f"operand {index}")
    return _broadcast_result(ctx, infos, _BOOL)


def _infer_float_unary(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "x")
    if info.dtype is not None and not _is_float(info.dtype):
        raise ctx.error(
            f"x must have a float dtype, got {info.dtype} with shape {dims_text(info)} "
            "(cast it with astype first)"
        )
    return same_shape(info, info.dtype)


def _infer_numeric_unary(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "x")
    if info.dtype == _BOOL:
        raise ctx.error(f"x must be numeric, got bool with shape {dims_text(info)}")
    return same_shape(info, info.dtype)


def _infer_logical_not(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "x")
    _require_bool(ctx, info, "x")
    return same_shape(info, _BOOL)


def _infer_clip(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "x")
    for index, name in ((1, "min"), (2, "max")):
        if not isinstance(ctx.arg_sinfo(call, index), PrimStructInfo):
            raise ctx.error(
                f"{name} must be a scalar (PrimValue), got {ctx.arg_sinfo(call, index)}"
            )
    return same_shape(info, info.dtype)


def _infer_astype(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "x")
    return same_shape(info, ctx.attr(call, "dtype"))


def _infer_where(call: Call, ctx: InferContext) -> StructInfo:
    cond = ctx.tensor_arg(call, 0, "condition")
    x = ctx.tensor_arg(call, 1, "x1")
    y = ctx.tensor_arg(call, 2, "x2")
    _require_bool(ctx, cond, "condition")
    dtype = unify_dtypes(ctx, [x, y], "x1 and x2")
    return _broadcast_result(ctx, [cond, x, y], dtype)


for _name in ARITH_BINARY:
    register_op(f"relax.{_name}", num_inputs=2, infer=_infer_arith, doc=f"elementwise {_name}")
for _name in COMPARISONS:
    register_op(f"relax.{_name}", num_inputs=2, infer=_infer_compare, doc=f"{_name}, gives bool")
for _name in LOGICAL_BINARY:
    register_op(f"relax.{_name}", num_inputs=2, infer=_infer_logical, doc=f"{_name} of bools")
for _name in FLOAT_UNARY:
    register_op(f"relax.{_name}", num_inputs=1, infer=_infer_float_unary, doc=f"{_name} (float)")
for _name in NUMERIC_UNARY:
    register_op(f"relax.{_name}", num_inputs=1, infer=_infer_numeric_unary, doc=_name)
register_op("relax.logical_not", num_inputs=1, infer=_infer_logical_not, doc="not of bools")
register_op("relax.clip", num_inputs=3, infer=_infer_clip, doc="clamp x to [min, max]")
register_op(
    "relax.astype",
    num_inputs=1,
    infer=_infer_astype,
    attrs={"dtype": "the target element type"},
    doc="cast the elements",
)
register_op("relax.where", num_inputs=3, infer=_infer_where, doc="select x1 where cond, else x2")


def _binary(name: str, x1: RelaxExpr, x2: RelaxExpr) -> Call:
    return make_call(f"relax.{name}", [x1, x2])


def add(x1: RelaxExpr, x2: RelaxExpr) -> Call:
    """``x1 + x2`` with numpy broadcasting."""
    return _binary("add", x1, x2)


def subtract(x1: RelaxExpr, x2: RelaxExpr) -> Call:
    """``x1 - x2`` with numpy broadcasting."""
    return _binary("subtract", x1, x2)


def multiply(x1: RelaxExpr, x2: RelaxExpr) -> Call:
    """``x1 * x2`` with numpy broadcasting."""
    return _binary("multiply", x1, x2)


def divide(x1: RelaxExpr, x2: RelaxExpr) -> Call:
    """``x1 / x2`` with numpy broadcasting."""
    return _binary("divide", x1, x2)


def floor_divide(x1: RelaxExpr, x2: RelaxExpr) -> Call:
    """``x1 // x2`` with numpy broadcasting."""
    return _binary("floor_divide", x1, x2)


def power(x1: RelaxExpr, x2: RelaxExpr) -> Call:
    """``x1 ** x2`` with numpy broadcasting."""
    return _binary("power", x1, x2)


def maximum(x1: RelaxExpr, x2: RelaxExpr) -> Call:
    """Elementwise maximum with numpy broadcasting."""
    return _binary("maximum", x1, x2)


def minimum(x1: RelaxExpr, x2: RelaxExpr) -> Call:
    """Elementwise minimum with numpy broadcasting."""
    return _binary("minimum", x1, x2)


def equal(x1: RelaxExpr, x2: RelaxExpr) -> Call:
    """``x1 == x2`` (bool result)."""
    return _binary("equal", x1, x2)


def not_equal(x1: RelaxExpr, x2: RelaxExpr) -> Call:
    """``x1 != x2`` (bool result)."""
    return _binary("not_equal", x1, x2)


def less(x1: RelaxExpr, x2: RelaxExpr) -> Call:
    """``x1 < x2`` (bool result)."""
    return _binary("less", x1, x2)


def less_equal(x1: RelaxExpr, x2: RelaxExpr) -> Call:
    """``x1 <= x2`` (bool result)."""
    return _binary("less_equal", x1, x2)


def greater(x1: RelaxExpr, x2: RelaxExpr) -> Call:
    """``x1 > x2`` (bool result)."""
    return _binary("greater", x1, x2)


def greater_equal(x1: RelaxExpr, x2: RelaxExpr) -> Call:
    """``x1 >= x2`` (bool result)."""
    return _binary("greater_equal", x1, x2)


def logical_and(x1: RelaxExpr, x2: RelaxExpr) -> Call:
    """Elementwise ``and`` of bool tensors."""
    return _binary("logical_and", x1, x2)


def logical_or(x1: RelaxExpr, x2: RelaxExpr) -> Call:
    """Elementwise ``or`` of bool tensors."""
    return _binary("logical_or", x1, x2)


def logical_xor(x1: RelaxExpr, x2: RelaxExpr) -> Call:
    """Elementwise ``xor`` of bool tensors."""
    return _binary("logical_xor", x1, x2)


def _unary(name: str, x: RelaxExpr) -> Call:
    return make_call(f"relax.{name}", [x])


def exp(x: RelaxExpr) -> Call:
    """``e ** x`` (float tensors)."""
    return _unary("exp", x)


def log(x: RelaxExpr) -> Call:
    """Natural logarithm (float tensors)."""
    return _unary("log", x)


def sqrt(x: RelaxExpr) -> Call:
    """Square root (float tensors)."""
    return _unary("sqrt", x)


def rsqrt(x: RelaxExpr) -> Call:
    """``1 / sqrt(x)`` (float tensors)."""
    return _unary("rsqrt", x)


def tanh(x: RelaxExpr) -> Call:
    """Hyperbolic tangent (float tensors)."""
    return _unary("tanh", x)


def sigmoid(x: RelaxExpr) -> Call:
    """``1 / (1 + exp(-x))`` (float tensors)."""
    return _unary("sigmoid", x)


def erf(x: RelaxExpr) -> Call:
    """The error function (float tensors)."""
    return _unary("erf", x)


def abs(x: RelaxExpr) -> Call:
    """Absolute value."""
    return _unary("abs", x)


def negative(x: RelaxExpr) -> Call:
    """``-x``."""
    return _unary("negative", x)


def round(x: RelaxExpr) -> Call:
    """Round to the nearest integer value."""
    return _unary("round", x)


def floor(x: RelaxExpr) -> Call:
    """Round down."""
    return _unary("floor", x)


def ceil(x: RelaxExpr) -> Call:
    """Round up."""
    return _unary("ceil", x)


def logical_not(x: RelaxExpr) -> Call:
    """Elementwise ``not`` of a bool tensor."""
    return _unary("logical_not", x)


def clip(x: RelaxExpr, min: Any, max: Any) -> Call:
    """Clamp ``x`` to ``[min, max]``; the bounds are numbers or PrimValues."""
    return make_call(
        "relax.clip", [x, as_prim_value("relax.clip", min), as_prim_value("relax.clip", max)]
    )


def astype(x: RelaxExpr, dtype: str | DataType) -> Call:
    """Cast the elements of ``x`` to ``dtype``."""
    parsed = dtype_attr("relax.astype", dtype)
    return make_call("relax.astype", [x], {"dtype": parsed})


def where(condition: RelaxExpr, x1: RelaxExpr, x2: RelaxExpr) -> Call:
    """``x1`` where ``condition`` holds, else ``x2`` (three-way broadcasting)."""
    return make_call("relax.where", [condition, x1, x2])


# Spelled out (not built from the tuples above) so that type checkers see the names.
__all__ = [
    "abs",
    "add",
    "astype",
    "ceil",
    "clip",
    "divide",
    "equal",
    "erf",
    "exp",
    "floor",
    "floor_divide",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "log",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "maximum",
    "minimum",
    "multiply",
    "negative",
    "not_equal",
    "power",
    "round",
    "rsqrt",
    "sigmoid",
    "sqrt",
    "subtract",
    "tanh",
    "where",
]
