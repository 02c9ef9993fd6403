"""Unary elementwise operators, ``clip``, ``cast`` and the constant-filled tensors.

Every unary operator takes a :class:`~relaxvm.ir.tir.te.Tensor` and returns one of the same
shape, as TVM's ``topi.exp`` etc. Float-only math (``exp``, ``sqrt``, ...) raises a
VMTypeError on integer tensors (cast first); the rounding functions leave integers unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..errors import VMTypeError
from ..ir import PrimExpr
from ..ir import op as sop
from ..ir.dtype import is_bool_dtype, is_float_dtype
from ..ir.tir import intrin as T
from ..ir.tir import te
from ..runtime.dtype import DataType, DataTypeCode
from ._util import as_index, cast_to, const_like, require_tensor

__all__ = [
    "abs",
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "cast",
    "ceil",
    "clip",
    "cos",
    "cosh",
    "erf",
    "exp",
    "floor",
    "full",
    "full_like",
    "identity",
    "isfinite",
    "isinf",
    "isnan",
    "log",
    "log2",
    "logical_not",
    "negative",
    "ones_like",
    "round",
    "rsqrt",
    "sigmoid",
    "sign",
    "sin",
    "sinh",
    "sqrt",
    "tan",
    "tanh",
    "trunc",
    "zeros_like",
]


def _map(name: str, fn: Callable[[PrimExpr], PrimExpr], x: te.Tensor) -> te.Tensor:
    require_tensor(f"topi.{name}", x, "x")
    return te.compute(x.shape, lambda *i: fn(x[i]), name=f"T_{name}")


def _float_unary(name: str, fn: Callable[[PrimExpr], PrimExpr]) -> Callable[[te.Tensor], Any]:
    def op(x: te.Tensor) -> te.Tensor:
        require_tensor(f"topi.{name}", x, "x")
        if not is_float_dtype(x.dtype):
            raise VMTypeError(
                f"topi.{name}: expects a float tensor, got {x.dtype}; cast it first "
                f"(topi.cast(x, 'float32'))"
            )
        return _map(name, fn, x)

    op.__name__ = name
    op.__doc__ = f"""Elementwise ``{name}`` of a float tensor.

    Parameters
    ----------
    x : te.Tensor
        A float tensor.

    Raises
    ------
    VMTypeError
        A non-float tensor.
    """
    return op


exp = _float_unary("exp", T.exp)
log = _float_unary("log", T.log)
sqrt = _float_unary("sqrt", T.sqrt)
rsqrt = _float_unary("rsqrt", T.rsqrt)
sigmoid = _float_unary("sigmoid", T.sigmoid)
tanh = _float_unary("tanh", T.tanh)
erf = _float_unary("erf", T.erf)
sin = _float_unary("sin", T.sin)
cos = _float_unary("cos", T.cos)
tan = _float_unary("tan", T.tan)
log2 = _float_unary("log2", T.log2)
asin = _float_unary("asin", T.asin)
acos = _float_unary("acos", T.acos)
atan = _float_unary("atan", T.atan)
sinh = _float_unary("sinh", T.sinh)
cosh = _float_unary("cosh", T.cosh)
asinh = _float_unary("asinh", T.asinh)
acosh = _float_unary("acosh", T.acosh)
atanh = _float_unary("atanh", T.atanh)


def _rounding(name: str, fn: Callable[[PrimExpr], PrimExpr]) -> Callable[[te.Tensor], Any]:
    def op(x: te.Tensor) -> te.Tensor:
        return _map(name, lambda v: fn(v) if is_float_dtype(v.dtype) else v, x)

    op.__name__ = name
    op.__doc__ = f"""Elementwise ``{name}``; integer tensors are returned unchanged in value.

    Parameters
    ----------
    x : te.Tensor
        The input.
    """
    return op


floor = _rounding("floor", T.floor)
ceil = _rounding("ceil", T.ceil)
#: Halfway cases round to even, as numpy's ``round``.
round = _rounding("round", T.round)
trunc = _rounding("trunc", T.trunc)


def abs(x: te.Tensor) -> te.Tensor:
    """Elementwise absolute value (``-0.0`` gives ``0.0``; unsigned values are unchanged)."""

    def fn(v: PrimExpr) -> PrimExpr:
        if is_float_dtype(v.dtype):
            return T.fabs(v)
        if v.dtype.code == DataTypeCode.UINT or is_bool_dtype(v.dtype):
            return v
        return sop.select(sop.less(v, sop.const(0, v.dtype)), sop.neg(v), v)

    return _map("abs", fn, x)


def negative(x: te.Tensor) -> te.Tensor:
    """Elementwise ``-x``."""
    require_tensor("topi.negative", x, "x")
    if is_bool_dtype(x.dtype):
        raise VMTypeError("topi.negative: bool tensors cannot be negated; use topi.logical_not")
    return _map("negative", sop.neg, x)


def sign(x: te.Tensor) -> te.Tensor:
    """Elementwise sign: 1, -1, or 0 for either zero; NaN stays NaN (as numpy)."""

    def fn(v: PrimExpr) -> PrimExpr:
        one, zero = sop.const(1, v.dtype), sop.const(0, v.dtype)
        positive = sop.select(sop.greater(v, zero), one, zero)
        if v.dtype.code == DataTypeCode.UINT:
            return positive
        # No comparison holds for NaN: the innermost branch returns v itself.
        rest = sop.select(sop.equal(v, zero), zero, v) if is_float_dtype(v.dtype) else zero
        return sop.select(
            sop.greater(v, zero), one, sop.select(sop.less(v, zero), sop.neg(one), rest)
        )

    return _map("sign", fn, x)


def isnan(x: te.Tensor) -> te.Tensor:
    """Elementwise ``x != x`` (bool); integers are never NaN."""
    false = sop.const(False)
    return _map("isnan", lambda v: sop.not_equal(v, v) if is_float_dtype(v.dtype) else false, x)


def isinf(x: te.Tensor) -> te.Tensor:
    """Elementwise ``abs(x) == inf`` (bool); integers are never infinite."""
    false = sop.const(False)

    def fn(v: PrimExpr) -> PrimExpr:
        if not is_float_dtype(v.dtype):
            return false
        return sop.equal(T.fabs(v), sop.const(float("inf"), v.dtype))

    return _map("isinf", fn, x)


def isfinite(x: te.Tensor) -> te.Tensor:
    """Elementwise ``abs(x) < inf`` (bool: false for NaN and ``±inf``)."""
    true = sop.const(True)

    def fn(v: PrimExpr) -> PrimExpr:
        if not is_float_dtype(v.dtype):
            return true
        return sop.less(T.fabs(v), sop.const(float("inf"), v.dtype))

    return _map("isfinite", fn, x)


def logical_not(x: te.Tensor) -> te.Tensor:
    """Elementwise ``not x`` of ``x`` read as bool."""
    return _map("logical_not", lambda v: sop.logical_not(cast_to(v, DataType("bool"))), x)


def identity(x: te.Tensor) -> te.Tensor:
    """A copy of ``x``."""
    return _map("identity", lambda v: v, x)


def clip(x: te.Tensor, a_min: Any, a_max: Any) -> te.Tensor:
    """``min(max(x, a_min), a_max)``; NaN stays NaN, as numpy's ``clip``.

    Parameters
    ----------
    x : te.Tensor
        The input.
    a_min, a_max : number or PrimExpr
        The bounds, converted to ``x``'s dtype.
    """
    require_tensor("topi.clip", x, "x")
    low = const_like(a_min, x.dtype, "topi.clip a_min")
    high = const_like(a_max, x.dtype, "topi.clip a_max")
    return _map("clip", lambda v: sop.min_expr(sop.max_expr(v, low), high), x)


def cast(x: te.Tensor | PrimExpr, dtype: str | DataType) -> Any:
    """``x`` converted to ``dtype`` (to bool means ``!= 0``, as numpy's ``astype``).

    A scalar ``PrimExpr`` gives a scalar expression, as in TVM.
    """
    target = DataType(dtype)
    if isinstance(x, PrimExpr):
        return cast_to(x, target)
    return _map("cast", lambda v: cast_to(v, target), x)


def full(shape: Sequence[Any], dtype: str | DataType, fill_value: Any) -> te.Tensor:
    """A tensor of ``shape`` filled with ``fill_value`` (TVM's ``topi.full``)."""
    extents = [as_index(s, "topi.full shape") for s in shape]
    value = const_like(fill_value, DataType(dtype), "topi.full fill_value")
    return te.compute(extents, lambda *i: value, name="T_full")


def full_like(x: te.Tensor, fill_value: Any) -> te.Tensor:
    """A tensor with ``x``'s shape and dtype filled with ``fill_value``."""
    require_tensor("topi.full_like", x, "x")
    value = const_like(fill_value, x.dtype, "topi.full_like fill_value")
    return te.compute(x.shape, lambda *i: value, name="T_full_like")


def zeros_like(x: te.Tensor) -> te.Tensor:
    """``full_like(x, 0)``."""
    return full_like(x, 0)


def ones_like(x: te.Tensor) -> te.Tensor:
    """``full_like(x, 1)``."""
    return full_like(x, 1)
