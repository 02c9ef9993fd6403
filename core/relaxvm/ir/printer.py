"""TVMScript-style text for expressions: ``n * 4 + 1``, ``T.min(a, b)``, ``T.Select(c, x, y)``.

Parentheses appear only where Python's precedence needs them, so the text reads back as the same
tree: an operand binding looser than its operator is wrapped, and so is a right operand binding
equally loosely (``a - (b - c)``, ``a + (b + c)``), because the operators associate to the left.
Comparisons never nest unwrapped, since ``a < b < c`` would chain in Python.

Constants of the default literal types (``int64`` for integers, ``float32`` for floats, and
``bool``) print bare; others name their type (``T.int32(4)``), so the text is unambiguous.
Variables print by name; two distinct variables with the same name print the same.
"""

from __future__ import annotations

import math

from ..runtime.dtype import DataType
from ._scalar import is_float_dtype
from .expr import FloatImm, IntImm, PrimExpr, Var
from .expr_nodes import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
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

__all__ = ["expr_to_str"]

# Python's precedence levels, loosest first.
_OR, _AND, _NOT, _CMP, _SUM, _PRODUCT, _UNARY, _ATOM = range(8)

_INFIX: dict[type, tuple[str, int]] = {
    Or: ("or", _OR),
    And: ("and", _AND),
    EQ: ("==", _CMP),
    NE: ("!=", _CMP),
    LT: ("<", _CMP),
    LE: ("<=", _CMP),
    GT: (">", _CMP),
    GE: (">=", _CMP),
    Add: ("+", _SUM),
    Sub: ("-", _SUM),
    Mul: ("*", _PRODUCT),
    FloorDiv: ("//", _PRODUCT),
    FloorMod: ("%", _PRODUCT),
}
_CALLS: dict[type, str] = {Min: "T.min", Max: "T.max", Select: "T.Select", Mod: "T.truncmod"}
_DEFAULT_LITERAL_TYPES = (DataType("int64"), DataType("float32"))


def expr_to_str(expr: PrimExpr) -> str:
    """The TVMScript-style text of ``expr`` (what ``str(expr)`` returns)."""
    return _render(expr)[0]


def _wrap(text_and_level: tuple[str, int], needs_parens: bool) -> str:
    text, _ = text_and_level
    return f"({text})" if needs_parens else text


def _render(expr: PrimExpr) -> tuple[str, int]:
    """Return the text of ``expr`` and the precedence level of its outermost operator."""
    if isinstance(expr, Var):
        return expr.name, _ATOM
    if isinstance(expr, IntImm):
        return _render_int(expr)
    if isinstance(expr, FloatImm):
        return _render_float(expr)
    node_type = type(expr)
    infix = _infix_symbol(expr)
    if infix is not None:
        return _render_infix(expr, *infix)
    if node_type is Div:
        return _render_call("T.truncdiv", expr.operands), _ATOM
    if node_type in _CALLS:
        return _render_call(_CALLS[node_type], expr.operands), _ATOM
    if isinstance(expr, Not):
        operand = _render(expr.a)
        return f"not {_wrap(operand, operand[1] < _NOT)}", _NOT
    if isinstance(expr, Cast):
        return f'T.Cast("{expr.dtype}", {_render(expr.value)[0]})', _ATOM
    # Nodes defined outside this layer (TIR's BufferLoad and intrinsic calls) render
    # themselves as atoms, given a function that renders their children.
    custom = getattr(expr, "_script_render", None)
    if custom is not None:
        return custom(lambda child: _render(child)[0]), _ATOM
    # A node type added later without printer support still prints something readable.
    return _render_call(f"T.{node_type.__name__}", expr.operands), _ATOM


def _infix_symbol(expr: PrimExpr) -> tuple[str, int] | None:
    if type(expr) is Div:
        return ("/", _PRODUCT) if is_float_dtype(expr.dtype) else None
    return _INFIX.get(type(expr))


def _render_infix(expr: PrimExpr, symbol: str, level: int) -> tuple[str, int]:
    if level == _CMP:
        # Comparisons chain in Python, so a comparison operand always needs parentheses.
        left, right = (_render(operand) for operand in expr.operands)
        left_text, right_text = _wrap(left, left[1] <= _CMP), _wrap(right, right[1] <= _CMP)
        return f"{left_text} {symbol} {right_text}", level
    # Walk down the left spine of same-level operators in a loop: long sums are left-deep
    # chains, and they need no parentheses on that side.
    spine: list[tuple[str, PrimExpr]] = []
    node = expr
    while True:
        info = _infix_symbol(node)
        if info is None or info[1] != level:
            break
        spine.append((info[0], node.operands[1]))
        node = node.operands[0]
    bottom = _render(node)
    parts = [_wrap(bottom, bottom[1] < level)]
    for link_symbol, right_operand in reversed(spine):
        right = _render(right_operand)
        parts.append(f"{link_symbol} {_wrap(right, right[1] <= level)}")
    return " ".join(parts), level


def _render_call(name: str, operands: tuple[PrimExpr, ...]) -> str:
    return f"{name}({', '.join(_render(operand)[0] for operand in operands)})"


def _render_int(expr: IntImm) -> tuple[str, int]:
    if expr.dtype == "bool":
        return ("True" if expr.value else "False"), _ATOM
    if expr.dtype in _DEFAULT_LITERAL_TYPES:
        return str(expr.value), (_UNARY if expr.value < 0 else _ATOM)
    return f"T.{expr.dtype}({expr.value})", _ATOM


def _render_float(expr: FloatImm) -> tuple[str, int]:
    value = expr.value
    text = repr(value) if math.isfinite(value) else f'"{value}"'
    if expr.dtype in _DEFAULT_LITERAL_TYPES and math.isfinite(value):
        return text, (_UNARY if value < 0 or text.startswith("-") else _ATOM)
    return f"T.{expr.dtype}({text})", _ATOM
