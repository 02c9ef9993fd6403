"""ComputePrimValue: prepare ``R.prim_value(expr)`` of symbolic expressions for the VM.

TVM turns each symbolic prim value into a call of a generated ``compute_symbolic_expr``
PrimFunc that returns the value. relaxvm computes integer and boolean expressions of symbolic
variables on the host instead: ``VMShapeLower`` evaluates them with its shape functions into
the int64 shape heap and reads them back with ``vm.builtin.make_prim_value``. What is left for
this pass is what the heap cannot do:

* an expression that simplifies to a constant (``n - n + 4``) becomes that constant, so no
  heap slot or shape function is spent on it;
* other expressions are simplified (``n * 2 + n`` -> ``n * 3``), so equal values share one slot;
* a floating-point expression of symbolic variables cannot be held in the int64 heap: it is a
  :class:`~relaxvm.errors.CompileError` naming the function and binding.
"""

from __future__ import annotations

from ..ir._scalar import is_float_dtype
from ..ir.arith import Analyzer
from ..ir.expr import FloatImm, IntImm
from ..ir.expr_functor import free_vars
from ..ir.relax._base import RelaxExpr
from ..ir.relax.block import Function
from ..ir.relax.expr import PrimValue
from ..ir.relax.module import IRModule
from ._lower_common import BindingContextMutator, compile_error, func_name, gvar_name_of
from .pass_infra import Pass, PassContext, function_pass

__all__ = ["ComputePrimValue"]

_PASS = "ComputePrimValue"


class _PrimValueComputer(BindingContextMutator):
    pass_name = _PASS

    def __init__(self, mod: IRModule, function: str) -> None:
        super().__init__(mod, function)
        self.analyzer = Analyzer()

    def visit_leaf_(self, expr: RelaxExpr) -> RelaxExpr:
        if not isinstance(expr, PrimValue):
            return expr
        value = expr.value
        if isinstance(value, (IntImm, FloatImm)) or not free_vars(value):
            return expr
        if is_float_dtype(value.dtype):
            raise compile_error(
                _PASS,
                self.function,
                self.binding,
                f"the prim value {value} is a {value.dtype} expression of symbolic variables; "
                "only integer and boolean symbolic prim values can be computed at run time",
            )
        simplified = self.analyzer.simplify(value)
        if simplified.dtype != value.dtype:
            return expr
        if simplified is value or str(simplified) == str(value):
            return expr
        return PrimValue(simplified, expr.span)


def ComputePrimValue() -> Pass:
    """Simplify symbolic ``R.prim_value`` expressions (folding constants) so ``VMShapeLower``
    can compute them on the host; reject floating-point symbolic prim values.

    Returns
    -------
    Pass
        A function pass.

    Raises
    ------
    CompileError
        (when applied) A floating-point prim value that depends on symbolic variables.
    """

    @function_pass(name=_PASS)
    def transform(func: Function, mod: IRModule, ctx: PassContext) -> Function:
        new = _PrimValueComputer(mod, func_name(gvar_name_of(mod, func), func)).visit_expr(func)
        assert isinstance(new, Function)
        return new

    return transform  # type: ignore[no-any-return]
