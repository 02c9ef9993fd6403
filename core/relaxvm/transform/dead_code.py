"""``DeadCodeElimination``: drop unused pure bindings and functions nothing reaches.

TVM's ``relax.transform.DeadCodeElimination``. Functions are kept when they are entry
functions (public ones, with a ``global_symbol``, plus ``entry_functions``; when nothing is
public, every non-``Primitive`` Relax function) or reachable from one through GlobalVar
references (calls, ``call_tir`` kernels, closures). Inside Relax
functions a binding is removed when its variable is never used and its value is pure; impure
calls (``R.call_packed``, ``R.print``, ``R.assert_op``, closures...) always stay, in order.
``match_cast`` bindings are kept (they check and define shapes). Empty blocks are dropped.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..ir.relax import (
    BindingBlock,
    Function,
    If,
    IRModule,
    MatchCast,
    SeqExpr,
    Var,
    VarBinding,
)
from ..ir.relax._base import RelaxExpr
from ..ir.relax.expr_functor import ExprMutator
from ._graph_util import free_relax_vars, global_refs, is_impure_call
from .pass_infra import Pass, PassContext, module_pass

__all__ = ["DeadCodeElimination", "remove_unused_bindings"]


class _Remover(ExprMutator):
    def visit_seq_expr_(self, expr: SeqExpr) -> RelaxExpr:
        body = self.visit_expr(expr.body)
        live: set[Var] = set(free_relax_vars(body)) if not isinstance(body, Var) else {body}
        kept_blocks: list[BindingBlock] = []
        changed = body is not expr.body
        for block in reversed(expr.blocks):
            kept = []
            for binding in reversed(block.bindings):
                value = binding.value
                if isinstance(value, (If, SeqExpr, Function)):
                    value = self.visit_expr(value)
                needed = (
                    binding.var in live
                    or isinstance(binding, MatchCast)
                    or is_impure_call(value)
                    or isinstance(value, If)  # branches may hold effects
                )
                if not needed:
                    changed = True
                    continue
                if value is not binding.value:
                    changed = True
                    binding = VarBinding(binding.var, value, binding.span)
                live.update(free_relax_vars(value) if not isinstance(value, Var) else [value])
                kept.append(binding)
            kept.reverse()
            if kept:
                kept_blocks.append(type(block)(kept, block.span))
        kept_blocks.reverse()
        if not changed:
            return expr
        return SeqExpr(kept_blocks, body, expr.span)

    def visit_if_(self, expr: If) -> RelaxExpr:
        true_branch = self.visit_expr(expr.true_branch)
        false_branch = self.visit_expr(expr.false_branch)
        if true_branch is expr.true_branch and false_branch is expr.false_branch:
            return expr
        return If(expr.cond, true_branch, false_branch, expr.struct_info, expr.span)

    def visit_function_(self, expr: Function) -> RelaxExpr:
        body = self.visit_expr(expr.body)
        if body is expr.body:
            return expr
        return Function(
            expr.params, body, expr.ret_struct_info, expr.is_pure, expr.attrs, expr.span
        )


def remove_unused_bindings(func: Function) -> Function:
    """``func`` without its unused pure bindings (repeated until nothing more goes)."""
    new = _Remover().visit_expr(func)
    assert isinstance(new, Function)
    return new


def DeadCodeElimination(
    entry_functions: Sequence[str] | None = None,
) -> Pass:
    """Remove unused pure bindings and functions unreachable from the entry functions.

    Parameters
    ----------
    entry_functions : sequence of str, optional
        Names kept (with what they reach) besides the public functions.

    Returns
    -------
    Pass
        A module pass.
    """
    entries = list(entry_functions or [])
    for name in entries:
        if not isinstance(name, str):
            raise TypeError(f"DeadCodeElimination: entry_functions must be str, got {name!r}")

    @module_pass(opt_level=0, name="DeadCodeElimination")
    def dead_code(mod: IRModule, ctx: PassContext) -> IRModule:
        missing = [name for name in entries if name not in mod]
        if missing:
            raise ValueError(
                f"DeadCodeElimination: entry function(s) {missing} are not in the module "
                f"(it has {sorted(g.name_hint for g, _ in mod)})"
            )
        result = mod.copy()
        for gvar, func in mod.items():
            if isinstance(func, Function):
                new = remove_unused_bindings(func)
                if new is not func:
                    result.update_func(gvar, new)
        public = {
            g.name_hint
            for g, f in result.items()
            if "global_symbol" in f.attrs and (isinstance(f, Function) or not _any_relax(result))
        }
        if not public:
            # Nothing is exported (a module built by hand): every Relax function is an entry,
            # rather than removing the whole module.
            public = {
                g.name_hint
                for g, f in result.items()
                if isinstance(f, Function) and not f.attrs.get("Primitive")
            }
        roots = set(entries) | public
        reached: set[str] = set()
        pending = list(roots)
        while pending:
            name = pending.pop()
            if name in reached or name not in result:
                continue
            reached.add(name)
            func = result[name]
            if isinstance(func, Function):
                pending.extend(global_refs(func))
        for gvar, _ in list(result.items()):
            if gvar.name_hint not in reached:
                result.remove(gvar)
        return result

    return dead_code  # type: ignore[no-any-return]


def _any_relax(mod: IRModule) -> bool:
    return any(isinstance(f, Function) for _, f in mod.items())
