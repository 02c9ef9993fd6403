"""TVMScript-style text for expressions: ``n * 4 + 1``, ``T.min(a, b)``, ``T.Select(c, x, y)``.

Parentheses appear only where Python's precedence needs them, so the text reads back as the same
tree: an operand binding looser than its operator is wrapped, and so is a right operand binding
equally loosely (``a - (b - c)``, ``a + (b + c)``), because the operators associate to the left.
Comparisons never nest unwrapped, since ``a < b < c`` would chain in Python.

Constants of the default literal types (``int64`` for integers, ``float32`` for floats, and
``bool``) print bare; others name their type (``T.int32(4)``), so the text is unambiguous.
Variables print by name; two distinct variables with the same name print the same.

The script printers choose another literal style (``literals=``): ``"relax"`` keeps only
``int64`` bare (a bare integer in a Relax shape is ``int64``) and ``"tir"`` names the type of
every number (``T.int64(4)``, ``T.float32(0.5)``), so that the text reads back with the same
types whatever a parser takes a bare literal to mean. ``names`` maps variables to the names a
script printer gave them (to keep two distinct variables apart).
"""

from __future__ import annotations

import json
import keyword
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import VMValueError
from ..runtime.dtype import DataType
from ._scalar import is_float_dtype
from .expr_base import FloatImm, IntImm, PrimExpr, Var
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

__all__ = ["INDENT", "Namer", "expr_to_str", "literal", "quote"]

#: One indentation level of script text.
INDENT = "    "
# Names the printed text itself needs: a variable must not hide them.
_RESERVED = frozenset({"I", "R", "T", "cls", "range", "print", "metadata"})
_PREFIXES = frozenset({"I", "R", "T"})  # the script namespaces
_RESERVED_WORDS = _RESERVED - _PREFIXES

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
#: Literal styles: the dtypes whose numbers print bare.
_BARE_LITERALS: dict[str, tuple[DataType, ...]] = {
    "default": _DEFAULT_LITERAL_TYPES,
    "relax": (DataType("int64"),),
    "tir": (),
}


def expr_to_str(
    expr: PrimExpr,
    literals: str = "default",
    names: Mapping[Any, str] | Callable[[Any], str] | None = None,
) -> str:
    """The TVMScript-style text of ``expr`` (what ``str(expr)`` returns).

    Parameters
    ----------
    expr : PrimExpr
    literals : str
        ``"default"`` (int64 and float32 numbers bare), ``"relax"`` (only int64 bare) or
        ``"tir"`` (every number names its type, ``T.int64(4)``).
    names : mapping or callable, optional
        The printed name of each variable (and buffer, for loads); ``.name`` where it gives
        none.
    """
    if literals not in _BARE_LITERALS:
        raise VMValueError(
            f"expr_to_str: literals must be one of {sorted(_BARE_LITERALS)}, got {literals!r}"
        )
    if names is None:
        name_of: Callable[[Any], str] = _var_name
    elif callable(names):
        name_of = names
    else:
        table = names
        name_of = lambda var: table.get(var, var.name)  # noqa: E731
    return _Renderer(_BARE_LITERALS[literals], name_of).render(expr)[0]


def _var_name(var: Any) -> str:
    return str(var.name)


def _wrap(text_and_level: tuple[str, int], needs_parens: bool) -> str:
    text, _ = text_and_level
    return f"({text})" if needs_parens else text


def _infix_symbol(expr: PrimExpr) -> tuple[str, int] | None:
    if type(expr) is Div:
        return ("/", _PRODUCT) if is_float_dtype(expr.dtype) else None
    return _INFIX.get(type(expr))


class _Renderer:
    """One printing of an expression tree, in one literal style."""

    def __init__(self, bare: tuple[DataType, ...], name_of: Callable[[Any], str]) -> None:
        self.bare = bare
        self.name_of = name_of

    def text(self, expr: PrimExpr) -> str:
        return self.render(expr)[0]

    def render(self, expr: PrimExpr) -> tuple[str, int]:
        """Return the text of ``expr`` and the precedence level of its outermost operator."""
        if isinstance(expr, Var):
            return self.name_of(expr), _ATOM
        if isinstance(expr, IntImm):
            return self._render_int(expr)
        if isinstance(expr, FloatImm):
            return self._render_float(expr)
        node_type = type(expr)
        infix = _infix_symbol(expr)
        if infix is not None:
            return self._render_infix(expr, *infix)
        if node_type is Div:
            return self._render_call("T.truncdiv", expr.operands), _ATOM
        if node_type in _CALLS:
            return self._render_call(_CALLS[node_type], expr.operands), _ATOM
        if isinstance(expr, Not):
            operand = self.render(expr.a)
            return f"not {_wrap(operand, operand[1] < _NOT)}", _NOT
        if isinstance(expr, Cast):
            return f'T.Cast("{expr.dtype}", {self.text(expr.value)})', _ATOM
        # Nodes defined outside this layer (TIR's BufferLoad and intrinsic calls) render
        # themselves as atoms, given a function that renders their children.
        buffer = getattr(expr, "buffer", None)
        if buffer is not None and hasattr(expr, "indices"):
            # A BufferLoad: the buffer goes through the name table like a variable.
            indices = ", ".join(self.text(index) for index in expr.indices) or "()"
            return f"{self.name_of(buffer)}[{indices}]", _ATOM
        custom = getattr(expr, "_script_render", None)
        if custom is not None:
            return custom(self.text), _ATOM
        # A node type added later without printer support still prints something readable.
        return self._render_call(f"T.{node_type.__name__}", expr.operands), _ATOM

    def _render_infix(self, expr: PrimExpr, symbol: str, level: int) -> tuple[str, int]:
        if level == _CMP:
            # Comparisons chain in Python, so a comparison operand always needs parentheses.
            left, right = (self.render(operand) for operand in expr.operands)
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
        bottom = self.render(node)
        parts = [_wrap(bottom, bottom[1] < level)]
        for link_symbol, right_operand in reversed(spine):
            right = self.render(right_operand)
            parts.append(f"{link_symbol} {_wrap(right, right[1] <= level)}")
        return " ".join(parts), level

    def _render_call(self, name: str, operands: tuple[PrimExpr, ...]) -> str:
        return f"{name}({', '.join(self.text(operand) for operand in operands)})"

    def _render_int(self, expr: IntImm) -> tuple[str, int]:
        if expr.dtype == "bool":
            # Python's True/False are bool in every style.
            return ("True" if expr.value else "False"), _ATOM
        if expr.dtype in self.bare:
            return str(expr.value), (_UNARY if expr.value < 0 else _ATOM)
        return f"T.{expr.dtype}({expr.value})", _ATOM

    def _render_float(self, expr: FloatImm) -> tuple[str, int]:
        value = expr.value
        text = repr(value) if math.isfinite(value) else f'"{value}"'
        if expr.dtype in self.bare and math.isfinite(value):
            return text, (_UNARY if value < 0 or text.startswith("-") else _ATOM)
        return f"T.{expr.dtype}({text})", _ATOM


# ---- helpers shared by the TIR and Relax script printers ----------------------------------
def quote(text: str) -> str:
    """``text`` as a double-quoted Python string literal (JSON escapes are valid Python)."""
    return json.dumps(text)


class Namer:
    """Unique Python identifiers for the variables and buffers of one printed function.

    Names are taken from each object's own name, made a valid identifier, and numbered
    (``i``, ``i_1``) when another live object already uses them. :meth:`push` / :meth:`pop`
    bracket a scope (a loop body): names defined inside are free again after it. With
    ``unique=False`` (one-line text for messages) names are only made valid, not numbered.
    """

    def __init__(self, unique: bool = True) -> None:
        self.unique = unique
        self._names: dict[int, str] = {}
        self._objects: list[Any] = []  # keeps named objects alive, so ids stay unique
        self._used: set[str] = set()
        self._scopes: list[list[int]] = [[]]

    def get(self, obj: Any) -> str | None:
        """The name given to ``obj``, or None if it has none yet."""
        return self._names.get(id(obj))

    def define(self, obj: Any, hint: str) -> str:
        """Give ``obj`` a fresh name based on ``hint`` and return it."""
        base = re.sub(r"\W", "_", hint) or "v"
        if base[0].isdigit():
            base = "v_" + base
        if keyword.iskeyword(base) or keyword.issoftkeyword(base) or base in _RESERVED_WORDS:
            base += "_"
        name, suffix = base, 1
        # The namespace prefixes count as names already taken, as in TVM (R -> R_1).
        while (self.unique and name in self._used) or name in _PREFIXES:
            name, suffix = f"{base}_{suffix}", suffix + 1
        self._used.add(name)
        self._names[id(obj)] = name
        self._objects.append(obj)
        self._scopes[-1].append(id(obj))
        return name

    def name(self, obj: Any) -> str:
        """The name of ``obj``, defining it (from its own name) on first use."""
        found = self._names.get(id(obj))
        if found is not None:
            return found
        return self.define(obj, str(getattr(obj, "name", None) or getattr(obj, "name_hint", "v")))

    def push(self) -> None:
        """Open a scope."""
        self._scopes.append([])

    def pop(self) -> None:
        """Close a scope: its names may be used again."""
        for key in self._scopes.pop():
            self._used.discard(self._names.pop(key))


def literal(value: Any, prim: Callable[[PrimExpr], str] | None = None) -> str:
    """A Python literal for an attribute value (``prim`` prints PrimExprs; by default with
    typed literals, ``T.int64(4)``, so they read back as expressions rather than ints)."""
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, PrimExpr):
        return prim(value) if prim is not None else expr_to_str(value, "tir")
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f"float({quote(repr(value))})"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(literal(item, prim) for item in value)
        return f"[{inner}]"
    if isinstance(value, Mapping):
        items = (f"{quote(str(key))}: {literal(value[key], prim)}" for key in sorted(value))
        return "{" + ", ".join(items) + "}"
    return str(value)
