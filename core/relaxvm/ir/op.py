"""Expression builders: what the Python operators on :class:`PrimExpr` call.

Unlike the node constructors, the builders

* wrap Python numbers (an ``int`` next to an ``int32`` expression becomes an ``int32`` constant;
  a lone ``int`` becomes ``int64``, the type of shape arithmetic; a lone ``float`` becomes
  ``float32``, like a TVMScript literal);
* promote mismatched operand types as TVM does (the narrower integer is cast to the wider one,
  an integer next to a float is cast to the float type, a bool next to a number is cast to it);
* fold constants (``IntImm(3) + 4`` is ``IntImm(7)``) and the obvious integer identities
  (``x + 0``, ``x * 1``, ``x * 0``, ``x // 1``, ``x % 1``), again as TVM's builders do.

A constant that would overflow its type is not folded: the node is kept instead.
"""

from __future__ import annotations

from typing import Any

from ..errors import VMTypeError, VMValueError
from ..runtime.dtype import DataType, DataTypeCode
from ._scalar import cast_scalar, fits_dtype, is_bool_dtype, is_float_dtype, is_int_dtype
from .expr_base import ExprLike, FloatImm, IntImm, PrimExpr, as_dtype
from .expr_nodes import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BinaryOpExpr,
    Cast,
    Div,
    FloorDiv,
    FloorMod,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    Select,
    Sub,
)

__all__ = [
    "add",
    "cast",
    "const",
    "convert",
    "equal",
    "floordiv",
    "floormod",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "logical_and",
    "logical_not",
    "logical_or",
    "max_expr",
    "min_expr",
    "mul",
    "neg",
    "not_equal",
    "select",
    "sub",
    "true_div",
    "truncdiv",
    "truncmod",
]

_INT64 = DataType("int64")
_FLOAT32 = DataType("float32")
_BOOL = DataType("bool")


def const(value: int | float | bool, dtype: str | DataType | None = None) -> PrimExpr:
    """A constant: ``int`` -> ``int64``, ``bool`` -> ``bool``, ``float`` -> ``float32``.

    Parameters
    ----------
    value : int, float or bool
        The value (numpy scalars are accepted).
    dtype : str or DataType, optional
        Overrides the default type; an int value with a float dtype gives a FloatImm.
    """
    if isinstance(value, PrimExpr):
        raise VMTypeError(f"const: expected a Python number, got the expression `{value}`")
    if dtype is None:
        if isinstance(value, bool):
            return IntImm(_BOOL, value)
        if isinstance(value, int) or hasattr(value, "__index__"):
            return IntImm(_INT64, value)
        return FloatImm(_FLOAT32, value)
    dtype = as_dtype(dtype, "const")
    if is_float_dtype(dtype):
        return FloatImm(dtype, value)
    return IntImm(dtype, value)


def convert(value: ExprLike) -> PrimExpr:
    """Return ``value`` if it is a PrimExpr, else wrap the Python number with :func:`const`."""
    if isinstance(value, PrimExpr):
        return value
    if not isinstance(value, (int, float)) and not hasattr(value, "__index__"):
        raise VMTypeError(f"convert: cannot make a PrimExpr from {type(value).__name__}")
    return const(value)


def _wrap(value: Any, like: DataType, where: str) -> PrimExpr:
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, bool):
        return IntImm(like, int(value)) if not is_float_dtype(like) else FloatImm(like, value)
    if isinstance(value, int) or hasattr(value, "__index__"):
        if is_float_dtype(like):
            return FloatImm(like, float(value))
        if is_bool_dtype(like):
            return IntImm(_INT64, value)  # promoted below: bool op int computes in int64
        return IntImm(like, value)
    if isinstance(value, float):
        return FloatImm(like if is_float_dtype(like) else _FLOAT32, value)
    raise VMTypeError(f"{where}: expected a PrimExpr or a number, got {type(value).__name__}")


def _promote(a: PrimExpr, b: PrimExpr, where: str) -> tuple[PrimExpr, PrimExpr]:
    """Cast one operand so both have the same type, following TVM's BinaryOpMatchTypes."""
    ta, tb = a.dtype, b.dtype
    if ta == tb:
        return a, b
    if ta.lanes != 1 or tb.lanes != 1:
        raise VMTypeError(f"{where}: vector types {ta} and {tb} do not match")
    for expr_type in (ta, tb):
        if not (is_int_dtype(expr_type) or is_float_dtype(expr_type) or is_bool_dtype(expr_type)):
            raise VMTypeError(f"{where}: cannot compute with values of type {expr_type}")
    if is_float_dtype(ta) or is_float_dtype(tb):
        if is_float_dtype(ta) and is_float_dtype(tb):
            target = ta if ta.bits >= tb.bits else tb
        else:
            target = ta if is_float_dtype(ta) else tb
    elif is_bool_dtype(ta):
        target = tb
    elif is_bool_dtype(tb):
        target = ta
    else:
        bits = max(ta.bits, tb.bits)
        signed = DataTypeCode.INT in (ta.code, tb.code)
        target = DataType.from_code(DataTypeCode.INT if signed else DataTypeCode.UINT, bits)
    return cast(a, target), cast(b, target)


def _operands(a: ExprLike, b: ExprLike, where: str) -> tuple[PrimExpr, PrimExpr]:
    if not isinstance(a, PrimExpr) and not isinstance(b, PrimExpr):
        a, b = convert(a), convert(b)
    elif not isinstance(a, PrimExpr):
        a = _wrap(a, b.dtype, where)  # type: ignore[union-attr]
    elif not isinstance(b, PrimExpr):
        b = _wrap(b, a.dtype, where)
    return _promote(a, b, where)  # type: ignore[arg-type]


def _is_const(expr: PrimExpr) -> bool:
    return isinstance(expr, (IntImm, FloatImm))


def _const_of(value: Any, dtype: DataType) -> PrimExpr | None:
    """The constant for a folded value, or None when it does not fit ``dtype``."""
    if is_float_dtype(dtype):
        return FloatImm(dtype, float(value))
    number = int(value)
    if not fits_dtype(number, dtype):
        return None
    return IntImm(dtype, number)


def _fold(node_type: type[BinaryOpExpr], a: PrimExpr, b: PrimExpr) -> PrimExpr | None:
    if not (_is_const(a) and _is_const(b)):
        return None
    result_type = _BOOL if issubclass(node_type, (EQ, NE, LT, LE, GT, GE)) else a.dtype
    try:
        value = node_type._scalar_fn(a.value, b.value)  # type: ignore[attr-defined]
    except ZeroDivisionError:
        raise VMValueError(
            f"{node_type.__name__}: division by zero in `{a}` by `{b}` (constant divisor)"
        ) from None
    return _const_of(value, result_type)


def _is_int_value(expr: PrimExpr, value: int) -> bool:
    return isinstance(expr, IntImm) and expr.value == value and not is_bool_dtype(expr.dtype)


def _binary(node_type: type[BinaryOpExpr], a: ExprLike, b: ExprLike, where: str) -> PrimExpr:
    a, b = _operands(a, b, where)
    folded = _fold(node_type, a, b)
    return folded if folded is not None else node_type(a, b)


def add(a: ExprLike, b: ExprLike) -> PrimExpr:
    """``a + b`` with promotion and folding (``x + 0`` is ``x``)."""
    a, b = _operands(a, b, "add")
    if is_int_dtype(a.dtype):
        if _is_int_value(b, 0):
            return a
        if _is_int_value(a, 0):
            return b
    folded = _fold(Add, a, b)
    return folded if folded is not None else Add(a, b)


def sub(a: ExprLike, b: ExprLike) -> PrimExpr:
    """``a - b`` with promotion and folding (``x - 0`` is ``x``)."""
    a, b = _operands(a, b, "sub")
    if is_int_dtype(a.dtype) and _is_int_value(b, 0):
        return a
    folded = _fold(Sub, a, b)
    return folded if folded is not None else Sub(a, b)


def mul(a: ExprLike, b: ExprLike) -> PrimExpr:
    """``a * b`` with promotion and folding (``x * 1`` is ``x``, ``x * 0`` is ``0``)."""
    a, b = _operands(a, b, "mul")
    if is_int_dtype(a.dtype):
        for one, other in ((a, b), (b, a)):
            if _is_int_value(one, 1):
                return other
            if _is_int_value(one, 0):
                return one
    folded = _fold(Mul, a, b)
    return folded if folded is not None else Mul(a, b)


def neg(a: ExprLike) -> PrimExpr:
    """``-a``, built as ``a * -1`` like TVM (folded for constants)."""
    a = convert(a)
    if isinstance(a, FloatImm):
        return FloatImm(a.dtype, -a.value)
    if is_float_dtype(a.dtype):
        return mul(a, FloatImm(a.dtype, -1.0))
    return mul(a, -1)


def _division(node_type: type[BinaryOpExpr], a: ExprLike, b: ExprLike, where: str) -> PrimExpr:
    a, b = _operands(a, b, where)
    if _is_int_value(b, 0):
        raise VMValueError(f"{where}: division by zero (the divisor of `{a}` is the constant 0)")
    if is_int_dtype(a.dtype) and _is_int_value(b, 1):
        if node_type in (FloorDiv, Div):
            return a
        return IntImm(a.dtype, 0)
    folded = _fold(node_type, a, b)
    return folded if folded is not None else node_type(a, b)


def floordiv(a: ExprLike, b: ExprLike) -> PrimExpr:
    """``a // b``: floor division (rounds toward negative infinity)."""
    return _division(FloorDiv, a, b, "floordiv")


def floormod(a: ExprLike, b: ExprLike) -> PrimExpr:
    """``a % b``: floor modulo (the result has the sign of ``b``)."""
    return _division(FloorMod, a, b, "floormod")


def truncdiv(a: ExprLike, b: ExprLike) -> PrimExpr:
    """C-style integer division rounding toward zero (a TIR ``Div`` node)."""
    return _division(Div, a, b, "truncdiv")


def truncmod(a: ExprLike, b: ExprLike) -> PrimExpr:
    """C-style remainder with the dividend's sign (a TIR ``Mod`` node)."""
    return _division(Mod, a, b, "truncmod")


def true_div(a: ExprLike, b: ExprLike) -> PrimExpr:
    """``a / b``; only for floats, because integer ``/`` is ambiguous (as in TVM).

    Raises
    ------
    VMTypeError
        When both operands are integers: pick :func:`floordiv` or :func:`truncdiv` instead.
    """
    a_is_int = not isinstance(a, float) and (
        not isinstance(a, PrimExpr) or not is_float_dtype(a.dtype)
    )
    b_is_int = not isinstance(b, float) and (
        not isinstance(b, PrimExpr) or not is_float_dtype(b.dtype)
    )
    if a_is_int and b_is_int:
        raise VMTypeError(
            "integer division with `/` is ambiguous: use `//` (floor division), "
            "relaxvm.ir.floordiv / floormod, or truncdiv / truncmod"
        )
    return _division(Div, a, b, "div")


def min_expr(a: ExprLike, b: ExprLike) -> PrimExpr:
    """``T.min(a, b)`` with promotion and constant folding."""
    return _binary(Min, a, b, "min")


def max_expr(a: ExprLike, b: ExprLike) -> PrimExpr:
    """``T.max(a, b)`` with promotion and constant folding."""
    return _binary(Max, a, b, "max")


def equal(a: ExprLike, b: ExprLike) -> PrimExpr:
    """Build ``a == b`` (an :class:`EQ` node, or a bool constant when both are constants)."""
    return _binary(EQ, a, b, "equal")


def not_equal(a: ExprLike, b: ExprLike) -> PrimExpr:
    """Build ``a != b``."""
    return _binary(NE, a, b, "not_equal")


def less(a: ExprLike, b: ExprLike) -> PrimExpr:
    """Build ``a < b``."""
    return _binary(LT, a, b, "less")


def less_equal(a: ExprLike, b: ExprLike) -> PrimExpr:
    """Build ``a <= b``."""
    return _binary(LE, a, b, "less_equal")


def greater(a: ExprLike, b: ExprLike) -> PrimExpr:
    """Build ``a > b``."""
    return _binary(GT, a, b, "greater")


def greater_equal(a: ExprLike, b: ExprLike) -> PrimExpr:
    """Build ``a >= b``."""
    return _binary(GE, a, b, "greater_equal")


def _as_bool(value: ExprLike, where: str) -> PrimExpr:
    expr = IntImm(_BOOL, value) if isinstance(value, bool) else convert(value)
    if not is_bool_dtype(expr.dtype):
        raise VMTypeError(
            f"{where}: operands must be bool expressions, got `{expr}` of type {expr.dtype}"
            " (`&`, `|` and `~` are logical operators here, not bitwise)"
        )
    return expr


def logical_and(a: ExprLike, b: ExprLike) -> PrimExpr:
    """``a and b`` on bool expressions (``&``), folding constant operands."""
    a, b = _as_bool(a, "logical_and"), _as_bool(b, "logical_and")
    for known, other in ((a, b), (b, a)):
        if isinstance(known, IntImm):
            return other if known.value else known
    return And(a, b)


def logical_or(a: ExprLike, b: ExprLike) -> PrimExpr:
    """``a or b`` on bool expressions (``|``), folding constant operands."""
    a, b = _as_bool(a, "logical_or"), _as_bool(b, "logical_or")
    for known, other in ((a, b), (b, a)):
        if isinstance(known, IntImm):
            return known if known.value else other
    return Or(a, b)


def logical_not(a: ExprLike) -> PrimExpr:
    """``not a`` on a bool expression (``~``), folding a constant operand."""
    a = _as_bool(a, "logical_not")
    if isinstance(a, IntImm):
        return IntImm(_BOOL, not a.value)
    return Not(a)


def select(condition: ExprLike, true_value: ExprLike, false_value: ExprLike) -> PrimExpr:
    """``T.Select``; a constant condition picks its branch directly."""
    condition = _as_bool(condition, "select")
    true_value, false_value = _operands(true_value, false_value, "select")
    if isinstance(condition, IntImm):
        return true_value if condition.value else false_value
    return Select(condition, true_value, false_value)


def cast(value: ExprLike, dtype: str | DataType) -> PrimExpr:
    """Convert ``value`` to ``dtype``: no node if it already has that type; constants fold."""
    dtype = as_dtype(dtype, "cast")
    expr = convert(value)
    if expr.dtype == dtype:
        return expr
    if isinstance(expr, (IntImm, FloatImm)):
        try:
            folded = _const_of(cast_scalar(expr.value, dtype), dtype)
        except VMValueError:
            folded = None  # NaN/inf to int: leave the Cast for run time to decide
        if folded is not None:
            return folded
    return Cast(dtype, expr)
