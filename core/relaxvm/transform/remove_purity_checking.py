"""RemovePurityChecking: mark pure functions ``relax.force_pure`` and unwrap purity overrides.

After this pass the lowering passes may put impure calls (allocation, ``call_packed``, kills)
into functions declared pure: the attribute tells the well-formedness check to trust the
declaration. ``R.call_pure_packed(f, *args)`` (and ``R.call_inplace_packed``, whose callee returns
the arguments it overwrote) becomes the plain packed call ``f(*args)``
(a :class:`Call` whose callee is the :class:`ExternFunc`), and ``R.invoke_pure_closure`` becomes
``R.invoke_closure``; both keep the declared result struct info.
"""

from __future__ import annotations

from ..ir.relax._base import RelaxExpr
from ..ir.relax.block import Function
from ..ir.relax.expr import Call, ExternFunc, Op
from ..ir.relax.expr_functor import ExprMutator
from ..ir.relax.module import IRModule
from ._lower_common import is_op
from .pass_infra import Pass, PassContext, function_pass

__all__ = ["FORCE_PURE", "RemovePurityChecking"]

#: The function attribute that makes the purity check accept impure calls in a pure function.
FORCE_PURE = "relax.force_pure"


class _PurityUnwrapper(ExprMutator):
    def visit_function_(self, expr: Function) -> RelaxExpr:
        new = super().visit_function_(expr)
        assert isinstance(new, Function)  # a Function visits to a Function
        if new.is_pure and new.attrs.get(FORCE_PURE) is not True:
            new = new.with_attr(FORCE_PURE, True)
        return new

    def visit_call_(self, expr: Call) -> RelaxExpr:
        call = super().visit_call_(expr)
        assert isinstance(call, Call)  # calls visit to calls here
        if is_op(call, "relax.call_pure_packed") or is_op(call, "relax.call_inplace_packed"):
            callee = call.args[0]
            if not isinstance(callee, ExternFunc):
                # Inference already rejects this; kept as a guard for hand-built IR.
                return call
            return Call(callee, call.args[1:], None, call.sinfo_args, None, call.span)
        if is_op(call, "relax.invoke_pure_closure"):
            return Call(
                Op.get("relax.invoke_closure"),
                call.args,
                call.attrs,
                call.sinfo_args,
                None,
                call.span,
            )
        return call


def RemovePurityChecking() -> Pass:
    """Set ``relax.force_pure`` on pure functions (nested ones too) and unwrap
    ``call_pure_packed`` / ``invoke_pure_closure`` into ``call_packed`` / ``invoke_closure``.

    Returns
    -------
    Pass
        A function pass.
    """

    @function_pass(name="RemovePurityChecking")
    def transform(func: Function, mod: IRModule, ctx: PassContext) -> Function:
        new = _PurityUnwrapper(mod).visit_expr(func)
        assert isinstance(new, Function)
        return new

    return transform  # type: ignore[no-any-return]
