"""The operator nodes of symbolic expressions: arithmetic, comparisons, logic, Select, Cast.

Constructors check operand types strictly (both operands of a binary node share one type) and
never fold: ``Add(IntImm(1), IntImm(2))`` stays an ``Add``. A Python number next to an
expression takes the expression's type. The Python operators on :class:`PrimExpr` go through
:mod:`relaxvm.ir.op` instead, which promotes and folds. Import these names from
:mod:`relaxvm.ir` or :mod:`relaxvm.ir.expr`.
"""

from __future__ import annotations

import operator
from typing import Any, ClassVar

from ..errors import VMTypeError
from ..runtime.dtype import DataType
from . import _scalar
from ._scalar import is_bool_dtype, is_float_dtype, is_int_dtype
from .expr_base import ExprLike, PrimExpr, _coerce_operand, _coerce_pair, as_dtype

__all__ = [
    "EQ",
    "GE",
    "GT",
    "LE",
    "LT",
    "NE",
    "Add",
    "And",
    "BinaryOpExpr",
    "Cast",
    "CmpExpr",
    "Div",
    "FloorDiv",
    "FloorMod",
    "Max",
    "Min",
    "Mod",
    "Mul",
    "Not",
    "Or",
    "Select",
    "Sub",
]

_BOOL = DataType("bool")


class BinaryOpExpr(PrimExpr):
    """Base of two-operand nodes; operands ``a`` and ``b`` must have the same dtype."""

    __slots__ = ("a", "b")
    _operand_names = ("a", "b")
    a: PrimExpr
    b: PrimExpr
    #: The Python function giving this operation's value on scalars, ``f(a, b)``. Typed Any:
    #: mypy would read a Callable class attribute as a method and bind ``self``.
    _scalar_fn: ClassVar[Any]

    def __init__(self, a: ExprLike, b: ExprLike) -> None:
        name = type(self).__name__
        a, b = _coerce_pair(name, a, b)
        if a.dtype != b.dtype:
            raise VMTypeError(
                f"{name}: operand types differ ({a.dtype} vs {b.dtype}); cast one of them or "
                "use the Python operators, which promote"
            )
        self._check_operand_type(a.dtype)
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b)
        self._finish(self._result_type(a.dtype))

    def _check_operand_type(self, dtype: DataType) -> None:
        if not (is_int_dtype(dtype) or is_float_dtype(dtype)):
            raise VMTypeError(f"{type(self).__name__}: needs int or float operands, got {dtype}")

    def _result_type(self, operand_type: DataType) -> DataType:
        return operand_type


class Add(BinaryOpExpr):
    """``a + b``."""

    __slots__ = ()
    _scalar_fn = staticmethod(operator.add)


class Sub(BinaryOpExpr):
    """``a - b``."""

    __slots__ = ()
    _scalar_fn = staticmethod(operator.sub)


class Mul(BinaryOpExpr):
    """``a * b``."""

    __slots__ = ()
    _scalar_fn = staticmethod(operator.mul)


class Div(BinaryOpExpr):
    """TIR ``Div``: true division for floats, division rounding toward zero for ints."""

    __slots__ = ()
    _scalar_fn = staticmethod(_scalar.truncdiv)


class Mod(BinaryOpExpr):
    """TIR ``Mod``: remainder with the dividend's sign (C's ``%``)."""

    __slots__ = ()
    _scalar_fn = staticmethod(_scalar.truncmod)


class FloorDiv(BinaryOpExpr):
    """``a // b``: division rounding toward negative infinity."""

    __slots__ = ()
    _scalar_fn = staticmethod(_scalar.floordiv)


class FloorMod(BinaryOpExpr):
    """``a % b``: remainder with the divisor's sign, so ``a == b * (a // b) + a % b``."""

    __slots__ = ()
    _scalar_fn = staticmethod(_scalar.floormod)


class Min(BinaryOpExpr):
    """``T.min(a, b)``."""

    __slots__ = ()
    _scalar_fn = staticmethod(_scalar.minimum)


class Max(BinaryOpExpr):
    """``T.max(a, b)``."""

    __slots__ = ()
    _scalar_fn = staticmethod(_scalar.maximum)


class CmpExpr(BinaryOpExpr):
    """Base of the comparisons; the result is ``bool``."""

    __slots__ = ()

    def _check_operand_type(self, dtype: DataType) -> None:
        if not (is_int_dtype(dtype) or is_float_dtype(dtype) or is_bool_dtype(dtype)):
            raise VMTypeError(f"{type(self).__name__}: cannot compare values of type {dtype}")

    def _result_type(self, operand_type: DataType) -> DataType:
        return _BOOL


class EQ(CmpExpr):
    """``a == b`` as a node (build it with ``a.equal(b)``)."""

    __slots__ = ()
    _scalar_fn = staticmethod(operator.eq)


class NE(CmpExpr):
    """``a != b`` as a node (build it with ``a.not_equal(b)``)."""

    __slots__ = ()
    _scalar_fn = staticmethod(operator.ne)


class LT(CmpExpr):
    """``a < b``."""

    __slots__ = ()
    _scalar_fn = staticmethod(operator.lt)


class LE(CmpExpr):
    """``a <= b``."""

    __slots__ = ()
    _scalar_fn = staticmethod(operator.le)


class GT(CmpExpr):
    """``a > b``."""

    __slots__ = ()
    _scalar_fn = staticmethod(operator.gt)


class GE(CmpExpr):
    """``a >= b``."""

    __slots__ = ()
    _scalar_fn = staticmethod(operator.ge)


class _LogicalBinary(BinaryOpExpr):
    __slots__ = ()

    def _check_operand_type(self, dtype: DataType) -> None:
        if not is_bool_dtype(dtype):
            raise VMTypeError(f"{type(self).__name__}: operands must be bool, got {dtype}")


class And(_LogicalBinary):
    """Logical ``a and b`` on bool operands."""

    __slots__ = ()
    _scalar_fn = staticmethod(lambda x, y: bool(x) and bool(y))


class Or(_LogicalBinary):
    """Logical ``a or b`` on bool operands."""

    __slots__ = ()
    _scalar_fn = staticmethod(lambda x, y: bool(x) or bool(y))


class Not(PrimExpr):
    """Logical ``not a`` on a bool operand."""

    __slots__ = ("a",)
    _operand_names = ("a",)
    a: PrimExpr

    def __init__(self, a: ExprLike) -> None:
        a = _coerce_operand("Not", a, _BOOL)
        if not is_bool_dtype(a.dtype):
            raise VMTypeError(f"Not: operand must be bool, got {a.dtype}")
        object.__setattr__(self, "a", a)
        self._finish(_BOOL)


class Select(PrimExpr):
    """``T.Select(condition, true_value, false_value)``: pick a value by a bool condition."""

    __slots__ = ("condition", "false_value", "true_value")
    _operand_names = ("condition", "true_value", "false_value")
    condition: PrimExpr
    true_value: PrimExpr
    false_value: PrimExpr

    def __init__(self, condition: ExprLike, true_value: ExprLike, false_value: ExprLike) -> None:
        condition = _coerce_operand("Select", condition, _BOOL)
        if not is_bool_dtype(condition.dtype):
            raise VMTypeError(f"Select: condition must be bool, got {condition.dtype}")
        true_value, false_value = _coerce_pair("Select", true_value, false_value)
        if true_value.dtype != false_value.dtype:
            raise VMTypeError(
                f"Select: branch types differ ({true_value.dtype} vs {false_value.dtype})"
            )
        object.__setattr__(self, "condition", condition)
        object.__setattr__(self, "true_value", true_value)
        object.__setattr__(self, "false_value", false_value)
        self._finish(true_value.dtype)


class Cast(PrimExpr):
    """``T.Cast(dtype, value)``: convert ``value`` to ``dtype`` (wrapping, truncating)."""

    __slots__ = ("value",)
    _operand_names = ("value",)
    value: PrimExpr

    def __init__(self, dtype: str | DataType, value: ExprLike) -> None:
        dtype = as_dtype(dtype, "Cast")
        value = _coerce_operand("Cast", value, None)
        for role, checked in (("target", dtype), ("source", value.dtype)):
            if not (
                is_int_dtype(checked)
                or is_float_dtype(checked)
                or is_bool_dtype(checked)
                or (checked.is_float8 and checked.lanes == 1)  # casts are all float8 allows
            ):
                raise VMTypeError(f"Cast: {role} type must be a scalar number type, got {checked}")
        object.__setattr__(self, "value", value)
        self._finish(dtype)

    def _ctor_args(self) -> tuple[Any, ...]:
        return (str(self.dtype), self.value)

    def _rebuild(self, operands: tuple[PrimExpr, ...]) -> PrimExpr:
        return Cast(self.dtype, operands[0])
