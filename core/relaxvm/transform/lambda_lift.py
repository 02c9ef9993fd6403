"""``LambdaLift``: lift local functions to module-level functions.

TVM's ``relax.transform.LambdaLift``. A binding ``f = R.function(...)`` inside a function
``outer`` becomes a private module function ``outer_f``:

* without free variables, every use of ``f`` reads the GlobalVar ``outer_f`` (so ``f(x)`` is a
  direct call) and the binding goes;
* with free variables ``c0, c1...`` (a closure), ``outer_f`` takes them as its leading
  parameters, the binding becomes ``f = R.make_closure(outer_f, (c0, c1...))`` and calls
  ``f(x)`` become ``R.invoke_closure(f, (x,), sinfo_args=ret)``;
* a local function calling itself (recursion) calls ``outer_f`` directly inside the lifted
  body, passing its captured parameters along.

Local functions nested in local functions are lifted first, named after their enclosing
lifted function (``outer_f_g``).
"""

from __future__ import annotations

from ..ir.relax import (
    Call,
    FuncStructInfo,
    Function,
    GlobalVar,
    IRModule,
    Tuple,
    Var,
    VarBinding,
)
from ..ir.relax._base import RelaxExpr
from ..ir.relax.expr_functor import ExprMutator
from ..ir.relax.op import invoke_closure, make_closure
from ._graph_util import free_relax_vars
from .pass_infra import Pass, PassContext, module_pass

__all__ = ["LambdaLift"]


class _Lifter(ExprMutator):
    def __init__(self, mod: IRModule) -> None:
        super().__init__(mod)
        self.outer = ""
        self.direct: dict[Var, GlobalVar] = {}
        self.closures: dict[Var, FuncStructInfo] = {}

    def visit_var_(self, var: Var) -> RelaxExpr:
        if var in self.direct:
            return self.direct[var]
        return super().visit_var_(var)

    def visit_call_(self, expr: Call) -> RelaxExpr:
        new = super().visit_call_(expr)
        if isinstance(new, Call) and isinstance(expr.op, Var) and expr.op in self.closures:
            sinfo = self.closures[expr.op]
            return invoke_closure(new.op, Tuple(list(new.args)), [sinfo.ret])
        return new

    def visit_var_binding(self, binding: VarBinding) -> None:
        if isinstance(binding.value, Function):
            self._lift(binding.var, binding.value)
            return
        super().visit_var_binding(binding)

    def _unique(self, name: str) -> str:
        candidate, suffix = name, 1
        while candidate in self.builder._mod:
            candidate, suffix = f"{name}{suffix}", suffix + 1
        return candidate

    def _lift(self, var: Var, func: Function) -> None:
        name = self._unique(f"{self.outer}_{var.name_hint}")
        saved = self.outer
        self.outer = name
        try:
            inner = self.visit_expr(func)  # lifts local functions nested inside first
        finally:
            self.outer = saved
        assert isinstance(inner, Function)
        captured = [v for v in free_relax_vars(inner) if v is not var]
        cparams = [Var(v.name_hint, v.struct_info) for v in captured]
        params = [*cparams, *inner.params]
        signature = FuncStructInfo(
            [p.struct_info for p in params],  # type: ignore[misc]
            inner.ret_struct_info,
            inner.is_pure,
        )
        gvar = GlobalVar(name, signature)
        body = _LiftedBody(self.builder._mod, var, gvar, dict(zip(captured, cparams, strict=True)))
        lifted_body = body.visit_with_new_scope(inner.body)
        attrs = {k: v for k, v in inner.attrs.items() if k != "global_symbol"}
        lifted = Function(params, lifted_body, inner.ret_struct_info, inner.is_pure, attrs)
        self.builder._mod.add(gvar, lifted)
        for key, value in body.builder._mod.items():
            if key.name_hint not in self.builder._mod:
                self.builder._mod.add(key, value)
        if not captured:
            self.direct[var] = gvar
            return
        self.closures[var] = FuncStructInfo(
            [p.struct_info for p in inner.params],  # type: ignore[misc]
            inner.ret_struct_info,
            inner.is_pure,
        )
        values = [self.visit_expr(v) for v in captured]
        closure = self.builder.normalize(make_closure(gvar, Tuple(values)))
        self.builder.emit_normalized(VarBinding(var, closure))


class _LiftedBody(ExprMutator):
    """The lifted body: captured variables read the new parameters, and calls of the local
    function itself call the lifted GlobalVar with the captured parameters in front."""

    def __init__(
        self, mod: IRModule, self_var: Var, gvar: GlobalVar, captured: dict[Var, Var]
    ) -> None:
        super().__init__(mod)
        self.self_var, self.gvar = self_var, gvar
        self.var_remap.update(captured)
        self.cparams = list(captured.values())

    def visit_call_(self, expr: Call) -> RelaxExpr:
        if expr.op is self.self_var:
            args = [self.visit_expr(a) for a in expr.args]
            return Call(self.gvar, [*self.cparams, *args], expr.attrs, expr.sinfo_args)
        return super().visit_call_(expr)

    def visit_var_(self, var: Var) -> RelaxExpr:
        if var is self.self_var and not self.cparams:
            return self.gvar
        return super().visit_var_(var)


def LambdaLift() -> Pass:
    """Lift local functions and closures to module-level private functions.

    Returns
    -------
    Pass
        A module pass.
    """

    @module_pass(opt_level=0, name="LambdaLift")
    def lambda_lift(mod: IRModule, ctx: PassContext) -> IRModule:
        lifter = _Lifter(mod)
        for gvar, func in mod.items():
            if not isinstance(func, Function):
                continue
            lifter.outer = gvar.name_hint
            new = lifter.visit_expr(func)
            if new is not func:
                lifter.builder.update_func(gvar, new)
        return lifter.builder.get()

    return lambda_lift  # type: ignore[no-any-return]
