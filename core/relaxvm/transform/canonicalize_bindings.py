"""``CanonicalizeBindings``: collapse trivial rebindings and no-op ``match_cast`` s.

TVM's ``relax.transform.CanonicalizeBindings``:

* ``y = x`` (a variable bound to another variable) is removed and later uses of ``y`` read
  ``x``, when ``x``'s StructInfo is at least as precise as ``y``'s;
* a dataflow block output ``gv = lv`` whose ``lv`` is a dataflow variable defined in the
  same block is folded into the definition: ``lv``'s binding now defines ``gv``;
* ``y = R.match_cast(x, S)`` whose ``S`` provably holds already (``x``'s StructInfo is ``S``
  or more precise, and ``S`` defines no new symbolic variable) becomes ``y = x`` and goes;
* ``t[i]`` of a variable bound to a literal tuple reads the field directly.
"""

from __future__ import annotations

from ..ir.expr_functor import free_vars as prim_free_vars
from ..ir.relax import (
    BindingBlock,
    DataflowBlock,
    DataflowVar,
    Function,
    IRModule,
    MatchCast,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..ir.relax._base import RelaxExpr
from ..ir.relax.expr_functor import ExprMutator
from ..ir.relax.struct_info import ShapeStructInfo, StructInfo, TensorStructInfo
from ..ir.relax.subtype import BaseCheckResult, struct_info_base_check
from ._graph_util import map_relax_functions
from .pass_infra import Pass, PassContext, module_pass

__all__ = ["CanonicalizeBindings"]


def _sinfo_vars(sinfo: StructInfo | None) -> set[object]:
    found: set[object] = set()
    values = None
    if isinstance(sinfo, TensorStructInfo):
        values = sinfo.shape_values
    elif isinstance(sinfo, ShapeStructInfo):
        values = getattr(sinfo, "values", None)
    for value in values or ():
        found.update(prim_free_vars(value))
    return found


def _at_least_as_precise(value: StructInfo | None, target: StructInfo | None) -> bool:
    if target is None:
        return True
    if value is None:
        return False
    return struct_info_base_check(target, value) == BaseCheckResult.PASS


def _same_sinfo(a: StructInfo | None, b: StructInfo | None) -> bool:
    # Promoting `lv` to `gv` gives later uses gv's annotation: only when nothing is lost.
    return _at_least_as_precise(a, b) and _at_least_as_precise(b, a)


class _Canonicalizer(ExprMutator):
    def __init__(self) -> None:
        super().__init__()
        self.tuples: dict[Var, Tuple] = {}
        self.defined_sym: set[object] = set()

    def visit_function_(self, expr: Function) -> RelaxExpr:
        for param in expr.params:
            self.defined_sym |= _sinfo_vars(param.struct_info)
        return super().visit_function_(expr)

    def visit_binding_block(self, block: BindingBlock) -> BindingBlock:
        if isinstance(block, DataflowBlock):
            block = self._promote_outputs(block)
        return super().visit_binding_block(block)

    def _promote_outputs(self, block: DataflowBlock) -> DataflowBlock:
        """Fold ``gv = lv`` into ``lv``'s own definition in the same block."""
        definitions = {b.var: i for i, b in enumerate(block.bindings) if isinstance(b, VarBinding)}
        promoted: dict[Var, Var] = {}
        drop: set[int] = set()
        for index, binding in enumerate(block.bindings):
            value = binding.value
            if (
                isinstance(binding, VarBinding)
                and not isinstance(binding.var, DataflowVar)
                and isinstance(value, DataflowVar)
                and value in definitions
                and value not in promoted
                and _same_sinfo(value.struct_info, binding.var.struct_info)
            ):
                promoted[value] = binding.var
                drop.add(index)
        if not promoted:
            return block
        new = []
        for index, binding in enumerate(block.bindings):
            if index in drop:
                continue
            if binding.var in promoted:
                binding = VarBinding(promoted[binding.var], binding.value, binding.span)
            new.append(binding)
        self.var_remap.update(promoted)
        return DataflowBlock(new, block.span)

    def visit_var_binding(self, binding: VarBinding) -> None:
        value = self.visit_expr(binding.value)
        if isinstance(value, TupleGetItem) and isinstance(value.tuple_value, Var):
            literal = self.tuples.get(value.tuple_value)
            if literal is not None:
                value = literal.fields[value.index]
        if isinstance(value, Var) and self._replaceable(binding.var, value):
            self.var_remap[binding.var] = value
            return
        if isinstance(value, Tuple):
            self.tuples[binding.var] = value
        if value is not binding.value:
            binding = VarBinding(binding.var, value, binding.span)
        super().visit_var_binding(binding)

    def visit_match_cast(self, binding: MatchCast) -> None:
        value = self.visit_expr(binding.value)
        new_sym = _sinfo_vars(binding.struct_info) - self.defined_sym
        if (
            isinstance(value, Var)
            and not new_sym
            and _at_least_as_precise(value.struct_info, binding.struct_info)
            and self._replaceable(binding.var, value)
        ):
            self.var_remap[binding.var] = value
            return
        self.defined_sym |= new_sym
        super().visit_match_cast(binding)

    @staticmethod
    def _replaceable(var: Var, value: Var) -> bool:
        # A dataflow variable may not stand for a variable used after its block.
        if isinstance(value, DataflowVar) and not isinstance(var, DataflowVar):
            return False
        return _at_least_as_precise(value.struct_info, var.struct_info)


def CanonicalizeBindings() -> Pass:
    """Remove trivial rebindings and match_casts that cannot fail.

    Returns
    -------
    Pass
        A module pass over every Relax function.
    """

    @module_pass(opt_level=0, name="CanonicalizeBindings")
    def canonicalize(mod: IRModule, ctx: PassContext) -> IRModule:
        def rewrite(_gvar: object, func: Function) -> Function:
            new = _Canonicalizer().visit_expr(func)
            assert isinstance(new, Function)
            return new

        return map_relax_functions(mod, rewrite)

    return canonicalize  # type: ignore[no-any-return]
