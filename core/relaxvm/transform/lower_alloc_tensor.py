"""LowerAllocTensor: give every remaining ``R.builtin.alloc_tensor`` its own storage.

``StaticPlanBlockMemory`` plans what it can; the rest (tensors that escape, tensors of
unbounded symbolic size, allocations inside branches) become::

    storage = R.memory.alloc_storage(R.shape([nbytes]), R.prim_value(dev), R.str(scope),
                                     R.dtype("uint8"))
    alloc = R.memory.alloc_tensor(storage, R.prim_value(0), shape, R.dtype(dtype))

where ``nbytes = prod(shape) * bytes(dtype)`` is a shape expression, possibly symbolic
(``VMShapeLower`` computes it at run time from the shape heap).
"""

from __future__ import annotations

from ..ir.relax._base import RelaxExpr
from ..ir.relax.block import Function
from ..ir.relax.expr import Call, DataTypeImm, Op, PrimValue, ShapeExpr, StringImm
from ..ir.relax.module import IRModule
from ..ir.relax.struct_info import ObjectStructInfo, ShapeStructInfo
from ._lower_common import (
    BindingContextMutator,
    compile_error,
    func_name,
    gvar_name_of,
    is_op,
    tensor_nbytes,
)
from .pass_infra import Pass, PassContext, function_pass

__all__ = ["LowerAllocTensor"]

_PASS = "LowerAllocTensor"


class _AllocLowerer(BindingContextMutator):
    pass_name = _PASS

    def visit_call_(self, expr: Call) -> RelaxExpr:
        call = super().visit_call_(expr)
        if not is_op(call, "relax.builtin.alloc_tensor"):
            return call
        assert isinstance(call, Call)
        shape, dtype = call.args[0], call.args[1]
        device = call.args[2] if len(call.args) > 2 else PrimValue(0)
        scope = call.args[3] if len(call.args) > 3 else StringImm("global")
        if not isinstance(dtype, DataTypeImm):
            raise self.error("dtype must be a DataTypeImm")
        sinfo = shape.struct_info
        values = shape.values if isinstance(shape, ShapeExpr) else None
        if values is None and isinstance(sinfo, ShapeStructInfo):
            values = sinfo.values
        if values is None:
            raise compile_error(
                _PASS,
                self.function,
                self.binding,
                f"cannot size the allocation: the shape {sinfo} has unknown extents",
            )
        nbytes = tensor_nbytes(tuple(values), dtype.value)
        storage = self.builder.emit(
            Call(
                Op.get("relax.memory.alloc_storage"),
                [ShapeExpr([nbytes]), device, scope, DataTypeImm("uint8")],
                None,
                (),
                ObjectStructInfo(),
            ),
            "storage",
        )
        return Call(Op.get("relax.memory.alloc_tensor"), [storage, PrimValue(0), shape, dtype])


def LowerAllocTensor() -> Pass:
    """Lower each remaining ``R.builtin.alloc_tensor`` into ``R.memory.alloc_storage`` plus
    ``R.memory.alloc_tensor`` with a (possibly symbolic) byte size.

    Returns
    -------
    Pass
        A function pass.

    Raises
    ------
    CompileError
        (when applied) An allocation whose shape has unknown extents.
    """

    @function_pass(name=_PASS)
    def transform(func: Function, mod: IRModule, ctx: PassContext) -> Function:
        new = _AllocLowerer(mod, func_name(gvar_name_of(mod, func), func)).visit_expr(func)
        assert isinstance(new, Function)
        return new

    return transform  # type: ignore[no-any-return]
