"""ToNonDataflow: dataflow blocks become ordinary binding blocks, dataflow vars ordinary vars.

The lowering passes after it (CallTIRRewrite, memory planning, kill insertion) emit impure
calls, which a dataflow block may not hold, so the dataflow structure is dropped first. The
bindings, their order and their values are unchanged; only the block and variable kinds are.
"""

from __future__ import annotations

from ..ir.relax.block import BindingBlock, Function
from ..ir.relax.expr import DataflowVar, Var
from ..ir.relax.expr_functor import ExprMutator
from ..ir.relax.module import IRModule
from .pass_infra import Pass, PassContext, function_pass

__all__ = ["ToNonDataflow"]


class _DataflowRemover(ExprMutator):
    """Rebuilds every DataflowBlock as a BindingBlock and every DataflowVar as a Var."""

    def visit_var_def(self, var: Var) -> Var:
        if isinstance(var, DataflowVar):
            found = self.var_remap.get(var)
            if found is None:
                found = Var(var.name_hint, var.struct_info, var.span)
                self.var_remap[var] = found
            return found
        return super().visit_var_def(var)

    def visit_binding_block(self, block: BindingBlock) -> BindingBlock:
        self.builder.begin_block(False)
        try:
            for binding in block.bindings:
                self.visit_binding(binding)
        finally:
            new_block = self.builder.end_block()
        if not block.is_dataflow and all(
            a is b for a, b in zip(new_block.bindings, block.bindings, strict=True)
        ):
            return block
        return new_block


def ToNonDataflow() -> Pass:
    """Turn dataflow blocks into binding blocks and dataflow variables into variables.

    Returns
    -------
    Pass
        A function pass; functions without dataflow blocks come back unchanged.

    Examples
    --------
    >>> mod = relaxvm.transform.ToNonDataflow()(mod)  # doctest: +SKIP
    """

    @function_pass(name="ToNonDataflow")
    def transform(func: Function, mod: IRModule, ctx: PassContext) -> Function:
        new = _DataflowRemover(mod).visit_expr(func)
        assert isinstance(new, Function)  # a Function visits to a Function
        return new

    return transform  # type: ignore[no-any-return]
