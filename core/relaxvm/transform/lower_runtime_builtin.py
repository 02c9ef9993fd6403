"""LowerRuntimeBuiltin: generic intrinsics become the VM's builtins.

=============================================  ===============================================
before                                         after
=============================================  ===============================================
``R.memory.alloc_storage(size, dev, scope,``   ``R.vm.alloc_storage(size, dev, R.dtype("uint8"),``
``dtype)``                                     ``scope)``
``R.memory.alloc_tensor(s, off, shape, dt)``   ``R.vm.alloc_tensor(s, off, shape, dt)``
``R.memory.kill_tensor(x)`` / ``kill_storage``  ``R.vm.kill_object(x)``
``R.vm.call_tir_dyn(f, (a, out, shape))``      ``vm.builtin.call_tir_dyn(f, a, out, shape)``
``R.reshape(x, shape)``                        ``vm.builtin.reshape(x, shape)`` (a view)
``R.shape_of(x)``                              ``vm.builtin.shape_of(x)``
``R.tensor_to_shape(x)``                       ``vm.builtin.tensor_to_shape(x)``
``R.to_vdevice(x, dev)``                       ``vm.builtin.to_device(x, dev_type, dev_id)``
``R.make_closure(f, (a, b))``                  ``vm.builtin.make_closure(f, a, b)``
``R.invoke_closure(c, (a, b))``                ``R.call_builtin_with_ctx(vm.builtin.invoke_closure,``
                                               ``(c, a, b))``
``R.null_value()``                             ``vm.builtin.null_value()``
=============================================  ===============================================

"``vm.builtin.x(...)``" is a packed call: a :class:`Call` whose callee is
``ExternFunc("vm.builtin.x")``, with the original result struct info as its ``sinfo_args``.
The argument conventions are those of the builtins in ``plugins/relaxvm_builtins`` (see
``docs/builtins.md``). A ``R.builtin.alloc_tensor`` still present is a :class:`CompileError`:
``LowerAllocTensor`` should have lowered it.
"""

from __future__ import annotations

from ..ir.relax._base import RelaxExpr
from ..ir.relax.block import Function
from ..ir.relax.expr import (
    Call,
    DataTypeImm,
    ExternFunc,
    Op,
    PrimValue,
    Tuple,
    TupleGetItem,
)
from ..ir.relax.module import IRModule
from ..ir.relax.struct_info import ObjectStructInfo, StructInfo, TupleStructInfo
from ..runtime.device import Device
from ._lower_common import VOID, BindingContextMutator, func_name, gvar_name_of
from .pass_infra import Pass, PassContext, function_pass

__all__ = ["LowerRuntimeBuiltin"]

_PASS = "LowerRuntimeBuiltin"

#: Ops lowered to a packed call of the builtin with the same arguments.
_DIRECT = {
    "relax.reshape": "vm.builtin.reshape",
    "relax.shape_of": "vm.builtin.shape_of",
    "relax.tensor_to_shape": "vm.builtin.tensor_to_shape",
    "relax.null_value": "vm.builtin.null_value",
}


def _packed(name: str, args: list[RelaxExpr], sinfo: StructInfo) -> Call:
    return Call(ExternFunc(name), args, None, [sinfo], sinfo)


class _BuiltinLowerer(BindingContextMutator):
    pass_name = _PASS

    def items(self, expr: RelaxExpr, what: str) -> list[RelaxExpr]:
        """The fields of a tuple argument: a literal tuple's fields, or one ``TupleGetItem``
        per field of a tuple-typed value (bound when the new call is normalized)."""
        if isinstance(expr, Tuple):
            return list(expr.fields)
        sinfo = expr.struct_info
        if isinstance(sinfo, TupleStructInfo):
            return [TupleGetItem(expr, index) for index in range(len(sinfo.fields))]
        raise self.error(f"{what} must be a tuple, got {sinfo}")

    def result_sinfo(self, original: Call, call: Call) -> StructInfo:
        sinfo = original.struct_info or call.struct_info
        if sinfo is None:
            sinfo = self.builder.normalize(call).struct_info
        return sinfo if sinfo is not None else ObjectStructInfo()

    def visit_call_(self, expr: Call) -> RelaxExpr:
        call = super().visit_call_(expr)
        if not isinstance(call, Call) or not isinstance(call.op, Op):
            return call
        name = call.op.name
        args = list(call.args)
        if name == "relax.builtin.alloc_tensor":
            raise self.error(
                "R.builtin.alloc_tensor should have been lowered earlier by "
                "StaticPlanBlockMemory or LowerAllocTensor; run LowerAllocTensor before "
                "LowerRuntimeBuiltin"
            )
        if name == "relax.memory.alloc_storage":
            size, device, scope = args[0], args[1], args[2]
            return Call(
                Op.get("relax.vm.alloc_storage"),
                [size, device, DataTypeImm("uint8"), scope],
                None,
                (),
                ObjectStructInfo(),
            )
        if name == "relax.memory.alloc_tensor":
            return Call(
                Op.get("relax.vm.alloc_tensor"), args[:4], None, (), self.result_sinfo(expr, call)
            )
        if name in ("relax.memory.kill_tensor", "relax.memory.kill_storage"):
            return Call(Op.get("relax.vm.kill_object"), args, None, (), VOID)
        if name == "relax.vm.call_tir_dyn":
            fields = self.items(args[1], "the arguments of vm.call_tir_dyn")
            return _packed("vm.builtin.call_tir_dyn", [args[0], *fields], VOID)
        if name in _DIRECT:
            return _packed(_DIRECT[name], args, self.result_sinfo(expr, call))
        if name == "relax.to_vdevice":
            target = (call.attrs or {}).get("dst_vdevice")
            if not isinstance(target, Device):
                raise self.error(f"R.to_vdevice needs a Device dst_vdevice, got {target!r}")
            return _packed(
                "vm.builtin.to_device",
                [args[0], PrimValue(target.device_type), PrimValue(target.device_id)],
                self.result_sinfo(expr, call),
            )
        if name == "relax.make_closure":
            captured = self.items(args[1], "the captured values of R.make_closure")
            return _packed("vm.builtin.make_closure", [args[0], *captured], ObjectStructInfo())
        if name == "relax.invoke_closure":
            call_args = self.items(args[1], "the arguments of R.invoke_closure")
            sinfo = self.result_sinfo(expr, call)
            return Call(
                Op.get("relax.call_builtin_with_ctx"),
                [ExternFunc("vm.builtin.invoke_closure"), Tuple([args[0], *call_args])],
                None,
                [sinfo],
                sinfo,
            )
        return call


def LowerRuntimeBuiltin() -> Pass:
    """Lower memory ops to ``relax.vm.*`` and generic intrinsics (reshape, shape_of,
    tensor_to_shape, to_vdevice, closures, null_value) to calls of ``vm.builtin.*``.

    Returns
    -------
    Pass
        A function pass.

    Raises
    ------
    CompileError
        (when applied) A ``R.builtin.alloc_tensor`` is left (``LowerAllocTensor`` must run
        first), or an op's arguments are not in the form the builtins need.
    """

    @function_pass(name=_PASS)
    def transform(func: Function, mod: IRModule, ctx: PassContext) -> Function:
        new = _BuiltinLowerer(mod, func_name(gvar_name_of(mod, func), func)).visit_expr(func)
        assert isinstance(new, Function)
        return new

    return transform  # type: ignore[no-any-return]


#: TVM's older name for this pass.
VMBuiltinLower = LowerRuntimeBuiltin
