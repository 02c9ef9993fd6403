"""CallTIRRewrite: make destination passing explicit.

``R.call_tir(f, (a, b), out_sinfo)`` means "allocate the outputs, then run ``f`` writing into
them". This pass spells that out, so memory planning can see and reuse the allocations::

    alloc = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0),
                                   R.str("global"))
    _ = f(a, b, alloc)          # a direct call of the PrimFunc (or ExternFunc)
    y = alloc                   # the call's value (a tuple of outputs for several)

* ``R.call_tir_inplace``: an output whose ``inplace_indices`` entry is ``i >= 0`` *is* argument
  ``i`` (no allocation, not appended); ``-1`` outputs are allocated and appended.
* ``R.call_dps_packed(f, args)``: the same with the :class:`ExternFunc` called directly.
* ``tir_vars`` (a shape of symbolic values the kernel takes as trailing scalars): the call
  becomes ``R.vm.call_tir_dyn(f, (a, b, alloc, R.shape([n, ...])))``.

Every output needs a known shape (symbolic extents are fine): the allocation is sized from it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..ir.relax._base import RelaxExpr
from ..ir.relax.block import Function
from ..ir.relax.expr import (
    Call,
    DataTypeImm,
    ExternFunc,
    GlobalVar,
    Op,
    PrimValue,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
)
from ..ir.relax.module import IRModule
from ..ir.relax.struct_info import TensorStructInfo, TupleStructInfo
from ._lower_common import (
    VOID,
    BindingContextMutator,
    func_name,
    gvar_name_of,
    is_op,
)
from .pass_infra import Pass, PassContext, function_pass

__all__ = ["CallTIRRewrite"]

_PASS = "CallTIRRewrite"
_DPS_OPS = ("relax.call_tir", "relax.call_tir_inplace", "relax.call_dps_packed")


class _CallTIRRewriter(BindingContextMutator):
    pass_name = _PASS

    def visit_call_(self, expr: Call) -> RelaxExpr:
        call = super().visit_call_(expr)
        if not isinstance(call, Call) or not any(is_op(call, name) for name in _DPS_OPS):
            return call
        assert isinstance(call.op, Op)
        return self._rewrite(call, call.op.name)

    # ---- the rewrite ------------------------------------------------------------------------
    def _output_infos(self, call: Call, op_name: str) -> tuple[list[TensorStructInfo], bool]:
        """The declared outputs and whether they form a tuple."""
        if len(call.sinfo_args) != 1:
            raise self.error(f"{op_name} must declare its outputs in exactly one sinfo_args entry")
        declared = call.sinfo_args[0]
        fields = declared.fields if isinstance(declared, TupleStructInfo) else (declared,)
        infos: list[TensorStructInfo] = []
        for index, field in enumerate(fields):
            if not isinstance(field, TensorStructInfo):
                raise self.error(f"{op_name} output {index} must be a tensor, got {field}")
            infos.append(field)
        return infos, isinstance(declared, TupleStructInfo)

    def _arguments(self, packed: RelaxExpr, op_name: str) -> list[RelaxExpr]:
        """The input arguments as a list (a tuple-typed variable is unpacked field by field)."""
        if isinstance(packed, Tuple):
            return list(packed.fields)
        sinfo = packed.struct_info
        if not isinstance(sinfo, TupleStructInfo):
            raise self.error(f"{op_name} arguments must be a tuple, got {sinfo}")
        return [TupleGetItem(packed, index) for index in range(len(sinfo.fields))]

    def _allocate(self, info: TensorStructInfo, index: int, op_name: str) -> Var:
        values = info.shape_values
        if values is None:
            raise self.error(
                f"{op_name} output {index} has no known shape ({info}); destination-passing "
                "calls need output shapes (symbolic extents are fine) to allocate them"
            )
        if info.dtype is None:
            raise self.error(f"{op_name} output {index} has no known dtype ({info})")
        alloc = Call(
            Op.get("relax.builtin.alloc_tensor"),
            [ShapeExpr(list(values)), DataTypeImm(info.dtype), PrimValue(0), StringImm("global")],
        )
        return self.builder.emit(alloc, "alloc")

    def _rewrite(self, call: Call, op_name: str) -> RelaxExpr:
        infos, is_tuple = self._output_infos(call, op_name)
        callee = call.args[0]
        if not isinstance(callee, (GlobalVar, ExternFunc)):
            raise self.error(
                f"{op_name} callee must be a GlobalVar or ExternFunc, got {type(callee).__name__}"
            )
        inputs = self._arguments(call.args[1], op_name)
        indices: Sequence[int] = [-1] * len(infos)
        if op_name == "relax.call_tir_inplace":
            indices = list((call.attrs or {}).get("inplace_indices", ()))
            if len(indices) != len(infos):
                raise self.error(
                    f"inplace_indices {list(indices)} must have one entry per output "
                    f"({len(infos)} outputs)"
                )
        outputs: list[RelaxExpr] = []
        fresh: list[RelaxExpr] = []
        for index, (info, arg_index) in enumerate(zip(infos, indices, strict=True)):
            if arg_index == -1:
                alloc = self._allocate(info, index, op_name)
                outputs.append(alloc)
                fresh.append(alloc)
            elif 0 <= arg_index < len(inputs):
                outputs.append(inputs[arg_index])
            else:
                raise self.error(
                    f"inplace_indices[{index}] = {arg_index} is not an argument index "
                    f"(there are {len(inputs)} arguments)"
                )
        args = inputs + fresh
        if len(call.args) > 2:
            tir_vars = call.args[2]
            kernel_call = Call(Op.get("relax.vm.call_tir_dyn"), [callee, Tuple([*args, tir_vars])])
        elif isinstance(callee, ExternFunc):
            kernel_call = Call(callee, args, None, [VOID])
        else:
            # A PrimFunc returns nothing; its GlobalVar's opaque signature would say Object.
            kernel_call = Call(callee, args, None, (), VOID)
        self.builder.emit(kernel_call, "_")
        if is_tuple:
            return Tuple(outputs)
        return outputs[0]


def CallTIRRewrite() -> Pass:
    """Rewrite ``call_tir`` / ``call_tir_inplace`` / ``call_dps_packed`` into explicit output
    allocations (``R.builtin.alloc_tensor``) and a direct call with the outputs appended.

    Returns
    -------
    Pass
        A function pass.

    Raises
    ------
    CompileError
        (when applied) An output without a known shape or dtype, a non-tensor output, or
        ``inplace_indices`` that do not fit; the message names the function and binding.
    """

    @function_pass(name=_PASS)
    def transform(func: Function, mod: IRModule, ctx: PassContext) -> Function:
        rewriter = _CallTIRRewriter(mod, func_name(gvar_name_of(mod, func), func))
        new = rewriter.visit_expr(func)
        assert isinstance(new, Function)
        return new

    return transform  # type: ignore[no-any-return]
