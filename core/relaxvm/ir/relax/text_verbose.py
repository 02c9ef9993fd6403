"""``verbose_expr=True`` of ``.script()``: the definitions of an expression's free variables."""

from __future__ import annotations

from typing import Any

from .expr import Call, Tuple, TupleGetItem, Var

__all__ = ["verbose_definitions"]


def _variables(node: Any, found: dict[Var, None]) -> None:
    # A shallow walk of the expression forms that hold operands: variables bound inside a
    # function or sequence are defined by it, so they are not free here.
    if isinstance(node, Var):
        found[node] = None
    elif isinstance(node, Call):
        for arg in node.args:
            _variables(arg, found)
    elif isinstance(node, Tuple):
        for field in node.fields:
            _variables(field, found)
    elif isinstance(node, TupleGetItem):
        _variables(node.tuple_value, found)


def verbose_definitions(node: Any) -> list[str]:
    """``x: R.Tensor((2,), dtype="float32")`` for each variable ``node`` uses, in order."""
    found: dict[Var, None] = {}
    _variables(node, found)
    return [f"{var.name_hint}: {var.struct_info.script()}" for var in found if var.struct_info]
