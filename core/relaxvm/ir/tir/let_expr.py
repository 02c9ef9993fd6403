"""The TIR ``Let`` expression: ``body`` with ``var`` bound to ``value`` (TVM's ``tir.Let``).

In the script it is ``T.Let(body, where={x: value})`` (TVM's spelling), with ``x`` declared
as ``x = T.int32()``. TIR expressions have no side effects, so a ``Let`` means the same as
``body`` with ``value`` substituted for ``var``; :func:`inline_lets` does that substitution
when blocks are lowered (:mod:`relaxvm.ir.tir.lower_blocks`), so the interpreter and the code
generators never see a ``Let``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import VMTypeError
from ..expr import ExprLike, PrimExpr, Var
from ..expr_functor import substitute
from ..op import convert

__all__ = ["Let", "has_lets", "inline_lets", "let_vars"]


class Let(PrimExpr):
    """``body`` evaluated with ``var`` bound to ``value``.

    Parameters
    ----------
    var : Var
        The variable ``body`` may use; it has ``value``'s type.
    value : PrimExpr
    body : PrimExpr
        The result (its type is the Let's type).
    """

    __slots__ = ("body", "value", "var")
    _operand_names = ("var", "value", "body")
    var: Var
    value: PrimExpr
    body: PrimExpr

    def __init__(self, var: Var, value: ExprLike, body: ExprLike) -> None:
        if not isinstance(var, Var):
            raise VMTypeError(f"Let: var must be a Var, got {var!r}")
        value_expr, body_expr = convert(value), convert(body)
        if value_expr.dtype != var.dtype:
            raise VMTypeError(
                f"Let {var.name}: value `{value_expr}` has type {value_expr.dtype}, the "
                f"variable {var.dtype}"
            )
        object.__setattr__(self, "var", var)
        object.__setattr__(self, "value", value_expr)
        object.__setattr__(self, "body", body_expr)
        self._finish(body_expr.dtype)

    def _script_render(self, render: Callable[[PrimExpr], str]) -> str:
        return f"T.Let({render(self.body)}, where={{{render(self.var)}: {render(self.value)}}})"

    def _evaluate(self, evaluate_child: Callable[[PrimExpr], Any]) -> Any:
        return evaluate_child(substitute(self.body, {self.var: self.value}))


def has_lets(expr: PrimExpr) -> bool:
    """Whether ``expr`` contains a :class:`Let`."""
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, Let):
            return True
        stack.extend(node.operands)
    return False


def let_vars(stmt: Any) -> list[Var]:
    """The variables bound by the :class:`Let` expressions of statement ``stmt``, in order."""
    from .stmt_functor import StmtVisitor  # the statement layer imports this module

    found: dict[Var, None] = {}

    class _Collect(StmtVisitor):
        def visit_expr(self, expr: PrimExpr) -> None:
            stack = [expr]
            while stack:
                node = stack.pop()
                if isinstance(node, Let):
                    found.setdefault(node.var)
                stack.extend(reversed(node.operands))

    _Collect().visit_stmt(stmt)
    return list(found)


def inline_lets(expr: PrimExpr) -> PrimExpr:
    """``expr`` with every :class:`Let` replaced by its body, the value substituted for the
    variable (the value is computed once per use)."""
    if not has_lets(expr):
        return expr
    return _inline(expr)


def _inline(expr: PrimExpr) -> PrimExpr:
    if isinstance(expr, Let):
        value = _inline(expr.value)
        return substitute(_inline(expr.body), {expr.var: value})
    operands = expr.operands
    if not operands:
        return expr
    return expr.with_operands(*(_inline(operand) for operand in operands))
