"""Elementwise math ops beyond arithmetic: trigonometric and hyperbolic functions, ``sign``,
``square``, ``trunc``, the float checks (``isnan``, ``isinf``, ``isfinite``), remainders
(``mod``, ``floor_mod``), bitwise ops and shifts. Signatures and dtype rules follow TVM's
``relax.op``: the trigonometric functions need a float tensor, the checks give bool, bitwise
ops take integers or bools and shifts integers only (floats are refused when the call is
built, where TVM would fail later in codegen)."""

from __future__ import annotations

from collections.abc import Callable

from ....runtime.dtype import DataType, DataTypeCode
from .._base import RelaxExpr
from ..expr import Call
from ..struct_info import StructInfo
from ._common import dims_text, make_call, same_shape, unify_dtypes
from ._elementwise_common import binary_operands, broadcast_result, is_float
from .registry import InferContext, register_op

_BOOL = DataType("bool")

TRIG_UNARY = (
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
)
NUMERIC_MATH_UNARY = ("sign", "square", "trunc")
FLOAT_CHECKS = ("isnan", "isinf", "isfinite")
REMAINDERS = ("mod", "floor_mod")
BITWISE_BINARY = ("bitwise_and", "bitwise_or", "bitwise_xor")
SHIFTS = ("left_shift", "right_shift")


def _is_integer(dtype: DataType) -> bool:
    return dtype.lanes == 1 and dtype.code in (DataTypeCode.INT, DataTypeCode.UINT)


def _infer_trig(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "x")
    if info.dtype is not None and not is_float(info.dtype):
        raise ctx.type_error(
            f"x must have a float dtype, got {info.dtype} with shape {dims_text(info)} "
            "(cast it with astype first)"
        )
    return same_shape(info, info.dtype)


def _infer_numeric(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "x")
    if info.dtype == _BOOL:
        raise ctx.error(f"x must be numeric, got bool with shape {dims_text(info)}")
    return same_shape(info, info.dtype)


def _infer_check(call: Call, ctx: InferContext) -> StructInfo:
    # Any dtype, as TVM (an integer or bool is never NaN or inf); the result is bool.
    return same_shape(ctx.tensor_arg(call, 0, "x"), _BOOL)


def _infer_bitwise_not(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "x")
    if info.dtype is not None and info.dtype != _BOOL and not _is_integer(info.dtype):
        raise ctx.type_error(
            f"x must have an integer or bool dtype, got {info.dtype} with shape {dims_text(info)}"
        )
    return same_shape(info, info.dtype)


def _binary_rule(
    allowed: str, accepts: tuple[str, ...]
) -> Callable[[Call, InferContext], StructInfo]:
    """Inference of a broadcast binary op whose common dtype must pass ``allowed``."""

    def infer(call: Call, ctx: InferContext) -> StructInfo:
        infos = binary_operands(call, ctx)
        dtype = unify_dtypes(ctx, infos)
        if dtype is not None:
            ok = {
                "numeric": dtype != _BOOL,
                "bits": dtype == _BOOL or _is_integer(dtype),
                "integer": _is_integer(dtype),
            }[allowed]
            if not ok:
                shapes = " and ".join(dims_text(info) for info in infos)
                raise ctx.type_error(
                    f"operands must have {' or '.join(accepts)} dtypes, got {dtype} "
                    f"(shapes {shapes})"
                )
        return broadcast_result(ctx, infos, dtype)

    return infer


for _name in TRIG_UNARY:
    register_op(f"relax.{_name}", num_inputs=1, infer=_infer_trig, doc=f"{_name} (float)")
for _name in NUMERIC_MATH_UNARY:
    register_op(f"relax.{_name}", num_inputs=1, infer=_infer_numeric, doc=_name)
for _name in FLOAT_CHECKS:
    register_op(f"relax.{_name}", num_inputs=1, infer=_infer_check, doc=f"{_name}, gives bool")
register_op(
    "relax.bitwise_not", num_inputs=1, infer=_infer_bitwise_not, doc="~x (integers or bools)"
)
_RULES = {
    **dict.fromkeys(REMAINDERS, ("numeric", ("numeric (int or float)",))),
    **dict.fromkeys(BITWISE_BINARY, ("bits", ("integer", "bool"))),
    **dict.fromkeys(SHIFTS, ("integer", ("integer",))),
}
for _name, (_allowed, _accepts) in _RULES.items():
    register_op(
        f"relax.{_name}",
        num_inputs=2,
        infer=_binary_rule(_allowed, _accepts),
        doc=f"elementwise {_name}",
    )


def _unary(name: str, x: RelaxExpr) -> Call:
    return make_call(f"relax.{name}", [x])


def _binary(name: str, x1: RelaxExpr, x2: RelaxExpr) -> Call:
    return make_call(f"relax.{name}", [x1, x2])


def sin(x: RelaxExpr) -> Call:
    """Sine (float tensors)."""
    return _unary("sin", x)


def cos(x: RelaxExpr) -> Call:
    """Cosine (float tensors)."""
    return _unary("cos", x)


def tan(x: RelaxExpr) -> Call:
    """Tangent (float tensors)."""
    return _unary("tan", x)


def asin(x: RelaxExpr) -> Call:
    """Arcsine (float tensors); NaN outside ``[-1, 1]``."""
    return _unary("asin", x)


def acos(x: RelaxExpr) -> Call:
    """Arccosine (float tensors); NaN outside ``[-1, 1]``."""
    return _unary("acos", x)


def atan(x: RelaxExpr) -> Call:
    """Arctangent (float tensors)."""
    return _unary("atan", x)


def sinh(x: RelaxExpr) -> Call:
    """Hyperbolic sine (float tensors)."""
    return _unary("sinh", x)


def cosh(x: RelaxExpr) -> Call:
    """Hyperbolic cosine (float tensors)."""
    return _unary("cosh", x)


def asinh(x: RelaxExpr) -> Call:
    """Inverse hyperbolic sine (float tensors)."""
    return _unary("asinh", x)


def acosh(x: RelaxExpr) -> Call:
    """Inverse hyperbolic cosine (float tensors); NaN below 1."""
    return _unary("acosh", x)


def atanh(x: RelaxExpr) -> Call:
    """Inverse hyperbolic tangent (float tensors); +-inf at +-1, NaN beyond."""
    return _unary("atanh", x)


def sign(x: RelaxExpr) -> Call:
    """-1, 0 or 1 by the sign of ``x``, as numpy: NaN stays NaN and -0.0 gives 0.0."""
    return _unary("sign", x)


def square(x: RelaxExpr) -> Call:
    """``x * x``."""
    return _unary("square", x)


def trunc(x: RelaxExpr) -> Call:
    """Round toward zero (integers are unchanged)."""
    return _unary("trunc", x)


def isnan(x: RelaxExpr) -> Call:
    """Where ``x`` is NaN (bool result; never for integers)."""
    return _unary("isnan", x)


def isinf(x: RelaxExpr) -> Call:
    """Where ``x`` is +-inf (bool result; never for integers)."""
    return _unary("isinf", x)


def isfinite(x: RelaxExpr) -> Call:
    """Where ``x`` is neither NaN nor inf (bool result; always for integers)."""
    return _unary("isfinite", x)


def bitwise_not(x: RelaxExpr) -> Call:
    """``~x`` on integers; logical not on bools (as numpy's ``invert``)."""
    return _unary("bitwise_not", x)


def mod(x1: RelaxExpr, x2: RelaxExpr) -> Call:
    """Remainder with the sign of ``x1`` (C's ``%``/``fmod``, TVM's truncmod); ``x % 0`` is 0
    for integers and NaN for floats."""
    return _binary("mod", x1, x2)


def floor_mod(x1: RelaxExpr, x2: RelaxExpr) -> Call:
    """Remainder with the sign of ``x2`` (numpy's ``mod``, TVM's floormod); ``x % 0`` is 0 for
    integers and NaN for floats."""
    return _binary("floor_mod", x1, x2)


def bitwise_and(x1: RelaxExpr, x2: RelaxExpr) -> Call:
    """``x1 & x2`` on integers or bools, with numpy broadcasting."""
    return _binary("bitwise_and", x1, x2)


def bitwise_or(x1: RelaxExpr, x2: RelaxExpr) -> Call:
    """``x1 | x2`` on integers or bools, with numpy broadcasting."""
    return _binary("bitwise_or", x1, x2)


def bitwise_xor(x1: RelaxExpr, x2: RelaxExpr) -> Call:
    """``x1 ^ x2`` on integers or bools, with numpy broadcasting."""
    return _binary("bitwise_xor", x1, x2)


def left_shift(x1: RelaxExpr, x2: RelaxExpr) -> Call:
    """``x1 << x2`` on integers; a count outside ``[0, bits)`` gives 0 (numpy's rule)."""
    return _binary("left_shift", x1, x2)


def right_shift(x1: RelaxExpr, x2: RelaxExpr) -> Call:
    """``x1 >> x2`` on integers (arithmetic for signed types); a count outside ``[0, bits)``
    gives the sign fill, 0 or -1 (numpy's rule)."""
    return _binary("right_shift", x1, x2)


__all__ = [
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "bitwise_and",
    "bitwise_not",
    "bitwise_or",
    "bitwise_xor",
    "cos",
    "cosh",
    "floor_mod",
    "isfinite",
    "isinf",
    "isnan",
    "left_shift",
    "mod",
    "right_shift",
    "sign",
    "sin",
    "sinh",
    "square",
    "tan",
    "trunc",
]
