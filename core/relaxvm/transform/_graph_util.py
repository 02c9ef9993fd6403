"""Helpers shared by the graph-level passes: purity, variable uses, op patterns.

Kept private to :mod:`relaxvm.transform`; each pass module imports only what it needs.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

from ..ir.relax import (
    Call,
    ExternFunc,
    FuncStructInfo,
    Function,
    GlobalVar,
    IRModule,
    Op,
    Var,
)
from ..ir.relax._base import RelaxExpr
from ..ir.relax.expr_functor import ExprVisitor
from ..ir.relax.op.registry import get_op_info

__all__ = [
    "OpPattern",
    "VarUses",
    "free_relax_vars",
    "global_refs",
    "is_impure_call",
    "map_relax_functions",
    "op_name",
]


class OpPattern(enum.IntEnum):
    """TVM's ``OpPatternKind``: how a kernel reads its inputs, the key of operator fusion."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_EWISE_FUSABLE = 4
    TUPLE = 7
    OPAQUE = 8


def op_name(call: Call) -> str | None:
    """The op's name when ``call`` calls an :class:`Op`, else None."""
    return call.op.name if isinstance(call.op, Op) else None


def is_impure_call(expr: RelaxExpr) -> bool:
    """Whether evaluating ``expr`` (a binding's value) may have a visible side effect.

    Calls of impure ops (``relax.print``, ``relax.invoke_closure``...), of packed functions
    by name (``R.call_packed``) and of callees whose signature says impure are impure; so is
    anything whose purity cannot be told, to stay on the safe side.
    """
    if not isinstance(expr, Call):
        return False
    op = expr.op
    if isinstance(op, Op):
        try:
            return not get_op_info(op.name).purity
        except Exception:  # an op without registry entry (memory/vm ops): assume effects
            return True
    if isinstance(op, ExternFunc):
        return True
    sinfo = op.struct_info
    if isinstance(sinfo, FuncStructInfo):
        return not sinfo.purity
    return True


class VarUses(ExprVisitor):
    """Count the uses of each Relax variable (definitions are not uses)."""

    def __init__(self) -> None:
        self.counts: dict[Var, int] = {}

    def visit_var_(self, var: Var) -> None:
        self.counts[var] = self.counts.get(var, 0) + 1


def _collect_defs_and_uses(expr: RelaxExpr) -> tuple[set[Var], list[Var]]:
    class _Collector(ExprVisitor):
        def __init__(self) -> None:
            self.defined: set[Var] = set()
            self.used: list[Var] = []

        def visit_var_def(self, var: Var) -> None:
            self.defined.add(var)

        def visit_var_(self, var: Var) -> None:
            self.used.append(var)

    collector = _Collector()
    collector.visit_expr(expr)
    return collector.defined, collector.used


def free_relax_vars(expr: RelaxExpr) -> list[Var]:
    """Relax variables used in ``expr`` but defined outside it, in first-use order."""
    defined, used = _collect_defs_and_uses(expr)
    seen: dict[Var, None] = {}
    for var in used:
        if var not in defined:
            seen.setdefault(var)
    return list(seen)


def global_refs(expr: RelaxExpr) -> set[str]:
    """Names of the GlobalVars that ``expr`` mentions (callees and ``call_tir`` kernels)."""

    class _Globals(ExprVisitor):
        def __init__(self) -> None:
            self.names: set[str] = set()

        def visit_leaf_(self, leaf: RelaxExpr) -> None:
            if isinstance(leaf, GlobalVar):
                self.names.add(leaf.name_hint)

    finder = _Globals()
    finder.visit_expr(expr)
    return finder.names


def map_relax_functions(mod: IRModule, rewrite: Callable[[GlobalVar, Function], Any]) -> IRModule:
    """A copy of ``mod`` with every Relax function replaced by ``rewrite(gvar, func)``."""
    result = mod.copy()
    for gvar, func in mod.items():
        if isinstance(func, Function):
            new = rewrite(gvar, func)
            if new is not func:
                result.update_func(gvar.name_hint, new)
    return result
