"""``Normalize``: put every Relax function in A-normal form with StructInfo filled in.

TVM's ``relax.transform.Normalize``. IR built by hand (``Call(op, [Call(...)])``) may nest
calls inside calls and leave ``struct_info`` unset; every later pass expects each call's
arguments to be leaves (variables, constants, shapes...) and every expression to carry its
StructInfo. This pass binds nested non-leaf expressions to fresh variables just before the
binding that uses them, infers missing StructInfo, gives binding variables without an
annotation the StructInfo of their value, and wraps non-``SeqExpr`` function bodies and
``If`` branches in ``SeqExpr`` s.
"""

from __future__ import annotations

from ..ir.relax import Function, IRModule, MatchCast, SeqExpr, Var, VarBinding
from ..ir.relax._base import RelaxExpr
from ..ir.relax.expr_functor import ExprMutator
from ._graph_util import map_relax_functions
from .pass_infra import Pass, PassContext, module_pass

__all__ = ["Normalize", "NormalizeMutator"]


class NormalizeMutator(ExprMutator):
    """An :class:`ExprMutator` that normalizes every binding, even unchanged ones."""

    def visit_var_binding(self, binding: VarBinding) -> None:
        value = self.builder.normalize(self.visit_expr(binding.value))
        var = self.visit_var_def(binding.var)
        sinfo = value.struct_info
        if var.struct_info is None and sinfo is not None:
            var = self.with_struct_info(var, sinfo)
        if value is binding.value and var is binding.var:
            self.builder.emit_normalized(binding)
        else:
            self.builder.emit_normalized(VarBinding(var, value, binding.span))

    def visit_match_cast(self, binding: MatchCast) -> None:
        value = self.visit_expr(binding.value)
        normalized = self.builder.normalize(value)
        if normalized is not binding.value:
            super().visit_match_cast(MatchCast(binding.var, normalized, binding.struct_info))
        else:
            super().visit_match_cast(binding)

    def visit_function_(self, expr: Function) -> RelaxExpr:
        new = super().visit_function_(expr)
        assert isinstance(new, Function)
        if not isinstance(new.body, SeqExpr):
            # A leaf body still becomes a SeqExpr with no blocks, TVM's normal form.
            new = Function(
                new.params,
                SeqExpr([], new.body),
                new.ret_struct_info,
                new.is_pure,
                new.attrs,
                new.span,
            )
        return new

    def visit_var_def(self, var: Var) -> Var:
        return self.var_remap.get(var, var)


def Normalize() -> Pass:
    """Normalize every Relax function to A-normal form and fill in missing StructInfo.

    Returns
    -------
    Pass
        A module pass; PrimFuncs are left as they are.

    Examples
    --------
    >>> mod = Normalize()(mod)  # doctest: +SKIP
    """

    @module_pass(opt_level=0, name="Normalize")
    def normalize(mod: IRModule, ctx: PassContext) -> IRModule:
        def rewrite(_gvar: object, func: Function) -> Function:
            new = NormalizeMutator(mod).visit_expr(func)
            assert isinstance(new, Function)
            return new

        return map_relax_functions(mod, rewrite)

    return normalize  # type: ignore[no-any-return]
