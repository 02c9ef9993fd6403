"""Python operators on Relax expressions, and the hint for a Python number next to one.

As in TVM, ``x + y`` on two Relax expressions builds ``R.add(x, y)`` (an unnormalized Call,
like the op builders). A Python number is not a Relax value: it has no dtype, and TVM refuses
to guess one. ``x * 2`` raises a :class:`~relaxvm.errors.VMTypeError` that spells out the call
to write instead, ``R.multiply(x, R.const(2, "float32"))``, with the dtype of ``x``. The same
hint is appended when an op builder gets a number (:func:`number_hint`).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

from ...errors import VMTypeError
from ._base import RelaxExpr

__all__ = ["binary", "is_number", "number_hint", "script_name", "unary"]

#: Python operator symbol of each op, for messages.
_SYMBOLS = {
    "add": "+",
    "subtract": "-",
    "multiply": "*",
    "divide": "/",
    "floor_divide": "//",
    "power": "**",
}


def is_number(value: Any) -> bool:
    """Whether ``value`` is a Python (or numpy) scalar number, ``bool`` included."""
    return isinstance(value, numbers.Number)


def script_name(op_name: str) -> str:
    """How the script format spells op ``op_name``: ``relax.nn.softmax`` -> ``R.nn.softmax``."""
    return "R." + op_name.removeprefix("relax.")


def _literal(value: Any) -> str:
    """A number as the user would type it (a numpy scalar shows its Python value)."""
    item = getattr(value, "item", None)
    return repr(item() if callable(item) else value)


def _expr_text(expr: Any) -> str:
    name = getattr(expr, "name_hint", None)
    return name if isinstance(name, str) and name else "x"


def _dtype_of(args: Sequence[Any], value: Any) -> str:
    """The dtype the constant should have: the first Relax operand's, else the literal's."""
    for arg in args:
        dtype = getattr(getattr(arg, "struct_info", None), "dtype", None)
        if dtype is not None:
            return str(dtype)
    if isinstance(value, bool):
        return "bool"
    return "int32" if isinstance(value, numbers.Integral) else "float32"


def number_hint(op_name: str, args: Sequence[Any], index: int) -> str:
    """The call to write when argument ``index`` of op ``op_name`` is a Python number.

    Returns e.g. ``wrap Python numbers with R.const: R.multiply(x, R.const(2, "float32"))``.
    """
    value = args[index]
    dtype = _dtype_of([a for a in args if isinstance(a, RelaxExpr)], value)
    shown = [
        f'R.const({_literal(value)}, "{dtype}")' if i == index else _show(arg)
        for i, arg in enumerate(args)
    ]
    return f"wrap Python numbers with R.const: {script_name(op_name)}({', '.join(shown)})"


def _show(arg: Any) -> str:
    if isinstance(arg, RelaxExpr):
        return _expr_text(arg)
    if is_number(arg):
        return f"R.const({_literal(arg)})"
    return repr(arg)


def binary(op: str, lhs: Any, rhs: Any) -> Any:
    """``lhs <op> rhs`` where one side is a Relax expression.

    Returns
    -------
    Call
        ``R.<op>(lhs, rhs)`` when both sides are Relax expressions.
    NotImplemented
        When the other side is neither a Relax expression nor a number (Python then tries
        the other operand, and raises its own TypeError).

    Raises
    ------
    VMTypeError
        One side is a Python number; the message gives the call to write instead.
    """
    if isinstance(lhs, RelaxExpr) and isinstance(rhs, RelaxExpr):
        from . import op as relax_op

        return getattr(relax_op, op)(lhs, rhs)
    index = 1 if isinstance(lhs, RelaxExpr) else 0
    number = (lhs, rhs)[index]
    if not is_number(number):
        return NotImplemented
    raise VMTypeError(
        f"unsupported operand: Relax expression {_symbol_text(op, lhs, rhs)}: a Python "
        f"{type(number).__name__} is not a Relax value (it has no dtype); "
        f"{number_hint('relax.' + op, [lhs, rhs], index)}"
    )


def _symbol_text(op: str, lhs: Any, rhs: Any) -> str:
    def side(value: Any) -> str:
        return _expr_text(value) if isinstance(value, RelaxExpr) else _literal(value)

    return f"`{side(lhs)} {_SYMBOLS[op]} {side(rhs)}`"


def unary(op: str, operand: RelaxExpr) -> Any:
    """``R.<op>(operand)`` (``-x`` is ``R.negative(x)``)."""
    from . import op as relax_op

    return getattr(relax_op, op)(operand)
