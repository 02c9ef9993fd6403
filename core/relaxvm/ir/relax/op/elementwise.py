"""Elementwise ops: binary arithmetic with numpy broadcasting, comparisons, logical ops,
unary math, ``clip``, ``astype`` and ``where``."""

from __future__ import annotations

from typing import Any

from ....runtime.device import Device
from ....runtime.dtype import DataType
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
    unify_dtypes,
)
from ._elementwise_common import (
    binary_dtype,
    binary_operands,
    broadcast_result,
    is_float,
    require_bool,
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


def _infer_arith(call: Call, ctx: InferContext) -> StructInfo:
    infos = binary_operands(call, ctx)
    dtype = binary_dtype(ctx, infos)
    return broadcast_result(ctx, infos, dtype)


def _infer_compare(call: Call, ctx: InferContext) -> StructInfo:
    # As TVM's InferStructInfoBroadcastCMP: the result is bool whatever the operand dtypes
    # (mixed dtypes compare after the usual TIR promotion); only arithmetic needs equal dtypes.
    infos = binary_operands(call, ctx)
    return broadcast_result(ctx, infos, _BOOL)


def _infer_logical(call: Call, ctx: InferContext) -> StructInfo:
    infos = binary_operands(call, ctx)
    for index, info in enumerate(infos):
        require_bool(ctx, info, f"operand {index}")
    return broadcast_result(ctx, infos, _BOOL)


def _infer_float_unary(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "x")
    if info.dtype is not None and not is_float(info.dtype):
        raise ctx.type_error(
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
    require_bool(ctx, info, "x")
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


def _where_vdevice(infos: list[TensorStructInfo]) -> Device | None:
    # As TVM's where: the first vdevice given wins, and a conflicting one drops it.
    chosen: Device | None = None
    for info in infos:
        if info.vdevice is None:
            continue
        if chosen is None:
            chosen = info.vdevice
        elif getattr(info.vdevice, "target", True) is not None and info.vdevice != chosen:
            return None
    return chosen


def _infer_where(call: Call, ctx: InferContext) -> StructInfo:
    cond = ctx.tensor_arg(call, 0, "condition")
    x = ctx.tensor_arg(call, 1, "x1")
    y = ctx.tensor_arg(call, 2, "x2")
    if cond.dtype is None:
        # As TVM's where: a condition of unknown dtype is not known to be bool, so it is
        # refused (the logical ops, by contrast, accept an unknown dtype).
        raise ctx.type_error(
            f"condition must be bool, got a tensor of unknown dtype with shape {dims_text(cond)}"
        )
    require_bool(ctx, cond, "condition")
    dtype = unify_dtypes(ctx, [x, y], "x1 and x2")
    vdevice = _where_vdevice([cond, x, y])
    # TVM broadcasts x1 with x2 first, then the condition with that result.
    values = broadcast_shapes(ctx, [x, y])
    if values is not None:
        values = broadcast_shapes(ctx, [cond, TensorStructInfo(list(values), dtype)])
    if values is not None:
        return TensorStructInfo(list(values), dtype, vdevice=vdevice)
    if cond.shape is not None and cond.shape is x.shape and cond.shape is y.shape:
        # One shape variable shared by all three operands is kept exactly.
        return TensorStructInfo(cond.shape, dtype, ndim=cond.ndim, vdevice=vdevice)
    return TensorStructInfo(None, dtype, ndim=broadcast_ndim([cond, x, y]), vdevice=vdevice)


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


# The math family lives in its own module; re-exported here so that the op namespace has it.
from .elementwise_math import (  # noqa: E402
    acos,
    acosh,
    asin,
    asinh,
    atan,
    atanh,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    cos,
    cosh,
    floor_mod,
    isfinite,
    isinf,
    isnan,
    left_shift,
    mod,
    right_shift,
    sign,
    sin,
    sinh,
    square,
    tan,
    trunc,
)

# Spelled out (not built from the tuples above) so that type checkers see the names.
__all__ = [
    "abs",
    "acos",
    "acosh",
    "add",
    "asin",
    "asinh",
    "astype",
    "atan",
    "atanh",
    "bitwise_and",
    "bitwise_not",
    "bitwise_or",
    "bitwise_xor",
    "ceil",
    "clip",
    "cos",
    "cosh",
    "divide",
    "equal",
    "erf",
    "exp",
    "floor",
    "floor_divide",
    "floor_mod",
    "greater",
    "greater_equal",
    "isfinite",
    "isinf",
    "isnan",
    "left_shift",
    "less",
    "less_equal",
    "log",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "maximum",
    "minimum",
    "mod",
    "multiply",
    "negative",
    "not_equal",
    "power",
    "right_shift",
    "round",
    "rsqrt",
    "sigmoid",
    "sign",
    "sin",
    "sinh",
    "sqrt",
    "square",
    "subtract",
    "tan",
    "tanh",
    "trunc",
    "where",
]
