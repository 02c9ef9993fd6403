"""Structural ops: calls into TIR and packed functions, shape/tensor conversion, printing,
assertions, closures and device transfer. Their result types come mostly from
``sinfo_args`` (what the caller declares) rather than from computation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ....runtime.device import Device
from ....runtime.dtype import DataType, DataTypeCode
from ...expr import IntImm
from .._base import RelaxExpr
from ..expr import Call, ExternFunc, GlobalVar, ShapeExpr, Tuple
from ..struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from ._common import dims_text, make_call
from .registry import InferContext, OpError, register_op

_VOID = TupleStructInfo([])


def _declared(call: Call, ctx: InferContext) -> StructInfo:
    """The single struct info argument that declares the result."""
    if len(call.sinfo_args) != 1:
        raise ctx.error(
            f"needs exactly one struct info argument for the result, got {len(call.sinfo_args)}"
        )
    return call.sinfo_args[0]


def _infer_dps(call: Call, ctx: InferContext) -> StructInfo:
    """call_tir / call_tir_inplace / call_dps_packed: the declared outputs, tensors only."""
    out = _declared(call, ctx)
    fields = out.fields if isinstance(out, TupleStructInfo) else (out,)
    for index, field in enumerate(fields):
        if not isinstance(field, TensorStructInfo):
            raise ctx.type_error(f"output {index} must be a tensor, got {field}")
    args = ctx.arg_sinfo(call, 1)
    if not isinstance(args, TupleStructInfo):
        raise ctx.error(f"the arguments must be passed as a tuple, got {args}")
    if len(call.args) == 3 and not isinstance(ctx.arg_sinfo(call, 2), ShapeStructInfo):
        raise ctx.type_error(f"tir_vars must be a shape, got {ctx.arg_sinfo(call, 2)}")
    if ctx.op_name.endswith("call_tir_inplace"):
        indices = ctx.attr(call, "inplace_indices", ())
        if len(indices) != len(fields):
            raise ctx.error(
                f"inplace_indices {list(indices)} must name one argument (or -1) per output, "
                f"and there are {len(fields)} outputs"
            )
        for out_index, arg_index in enumerate(indices):
            if arg_index != -1 and not 0 <= arg_index < len(args.fields):
                raise ctx.error(
                    f"inplace_indices[{out_index}] = {arg_index} is not an argument index "
                    f"(there are {len(args.fields)} arguments)"
                )
    return out


def _infer_call_pure_packed(call: Call, ctx: InferContext) -> StructInfo:
    if not isinstance(call.args[0], ExternFunc):
        raise ctx.error(f"the callee must be an ExternFunc, got {type(call.args[0]).__name__}")
    return _declared(call, ctx)


def _infer_shape_of(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "x")
    values = info.shape_values
    if values is not None:
        return ShapeStructInfo(values)
    return ShapeStructInfo(ndim=info.ndim)


def _infer_tensor_to_shape(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "x")
    if info.ndim not in (-1, 1):
        raise ctx.error(f"x must be a 1-d tensor, got shape {dims_text(info)}")
    if info.dtype is not None and info.dtype.code not in (DataTypeCode.INT, DataTypeCode.UINT):
        raise ctx.type_error(f"x must have an integer dtype, got {info.dtype}")
    values = info.shape_values
    if values is not None and isinstance(values[0], IntImm):
        # A static length gives the rank of the shape; its values are only known at run time.
        return ShapeStructInfo(ndim=values[0].value)
    return ShapeStructInfo(ndim=-1)


def _infer_void(call: Call, ctx: InferContext) -> StructInfo:
    if ctx.op_name == "relax.assert_op":
        cond = ctx.arg_sinfo(call, 0)
        dtype: DataType | None = None
        if isinstance(cond, PrimStructInfo) or (
            isinstance(cond, TensorStructInfo) and cond.ndim in (0, -1)
        ):
            dtype = cond.dtype
        else:
            raise ctx.error(f"the condition must be a bool scalar, got {cond}")
        if dtype is not None and dtype != DataType("bool"):
            raise ctx.type_error(f"the condition must be bool, got {dtype}")
    return _VOID


def _infer_null_value(call: Call, ctx: InferContext) -> StructInfo:
    return ObjectStructInfo()


def _infer_make_closure(call: Call, ctx: InferContext) -> StructInfo:
    func = ctx.arg_sinfo(call, 0)
    bound = ctx.arg_sinfo(call, 1)
    if not isinstance(func, FuncStructInfo):
        raise ctx.error(f"the function must be callable, got {func}")
    if not isinstance(bound, TupleStructInfo):
        raise ctx.type_error(f"the captured values must be a tuple, got {bound}")
    if func.params is None:
        return func
    if len(bound.fields) > len(func.params):
        raise ctx.error(
            f"captures {len(bound.fields)} values but the function has only "
            f"{len(func.params)} parameters"
        )
    return FuncStructInfo(func.params[len(bound.fields) :], func.ret, func.purity)


def _infer_invoke_closure(call: Call, ctx: InferContext) -> StructInfo:
    closure = ctx.arg_sinfo(call, 0)
    if not isinstance(closure, (FuncStructInfo, ObjectStructInfo)):
        raise ctx.error(f"the closure must be callable, got {closure}")
    if not isinstance(ctx.arg_sinfo(call, 1), TupleStructInfo):
        raise ctx.type_error(f"the arguments must be a tuple, got {ctx.arg_sinfo(call, 1)}")
    return _declared(call, ctx)


def _infer_to_vdevice(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "data")
    return TensorStructInfo(
        info.shape, info.dtype, ndim=info.ndim, vdevice=ctx.attr(call, "dst_vdevice")
    )


_DPS_ATTRS = {"inplace_indices": "for call_tir_inplace: the argument each output overwrites"}
register_op("relax.call_tir", num_inputs=(2, 3), infer=_infer_dps, doc="call a PrimFunc (DPS)")
register_op(
    "relax.call_tir_inplace",
    num_inputs=(2, 3),
    infer=_infer_dps,
    attrs=_DPS_ATTRS,
    doc="call a PrimFunc that writes some outputs into its inputs",
)
register_op("relax.call_dps_packed", num_inputs=2, infer=_infer_dps, doc="call a packed func (DPS)")
register_op(
    "relax.call_pure_packed",
    num_inputs=(1, None),
    infer=_infer_call_pure_packed,
    doc="call a packed function known to be pure",
)
register_op("relax.shape_of", num_inputs=1, infer=_infer_shape_of, doc="a tensor's shape")
register_op(
    "relax.tensor_to_shape",
    num_inputs=1,
    infer=_infer_tensor_to_shape,
    doc="a 1-d int tensor as a shape",
)
register_op(
    "relax.print",
    num_inputs=(0, None),
    infer=_infer_void,
    purity=False,
    attrs={"format": "format string"},
    doc="print values",
)
register_op(
    "relax.assert_op",
    num_inputs=(1, None),
    infer=_infer_void,
    purity=False,
    attrs={"format": "message format"},
    doc="fail at run time when the condition is false",
)
register_op("relax.null_value", num_inputs=0, infer=_infer_null_value, doc="a null object")
register_op(
    "relax.make_closure", num_inputs=2, infer=_infer_make_closure, doc="bind leading params"
)
register_op(
    "relax.invoke_closure",
    num_inputs=2,
    infer=_infer_invoke_closure,
    purity=False,
    doc="call a closure",
)
register_op(
    "relax.invoke_pure_closure",
    num_inputs=2,
    infer=_infer_invoke_closure,
    doc="call a closure known to be pure",
)
register_op(
    "relax.to_vdevice",
    num_inputs=1,
    infer=_infer_to_vdevice,
    attrs={"dst_vdevice": "the target Device"},
    doc="copy to another device",
)


def _out_sinfo(name: str, out_sinfo: Any) -> list[StructInfo]:
    if isinstance(out_sinfo, StructInfo):
        return [out_sinfo]
    if isinstance(out_sinfo, Sequence) and all(isinstance(s, StructInfo) for s in out_sinfo):
        return [out_sinfo[0] if len(out_sinfo) == 1 else TupleStructInfo(list(out_sinfo))]
    raise OpError(f"{name}: out_sinfo must be a StructInfo or a list of them, got {out_sinfo!r}")


def _as_tuple(args: RelaxExpr | Sequence[RelaxExpr]) -> RelaxExpr:
    if isinstance(args, RelaxExpr):
        # A single argument (TVM's ``args=x``) becomes ``(x,)``; a tuple value stays as it is.
        sinfo = args.struct_info
        if isinstance(args, Tuple) or sinfo is None or isinstance(sinfo, TupleStructInfo):
            return args
        return Tuple([args])
    return Tuple(list(args))


def _as_tir_vars(tir_vars: Any) -> RelaxExpr | None:
    # TVM accepts a list of PrimExprs for ``tir_vars`` and makes it a shape value.
    if tir_vars is None or isinstance(tir_vars, RelaxExpr):
        return tir_vars
    return ShapeExpr(list(tir_vars))


def call_tir(
    gvar: GlobalVar,
    args: RelaxExpr | Sequence[RelaxExpr],
    out_sinfo: Any,
    tir_vars: RelaxExpr | Sequence[Any] | None = None,
) -> Call:
    """Call PrimFunc ``gvar`` in destination-passing style; ``out_sinfo`` declares outputs."""
    name = "relax.call_tir"
    tir_vars = _as_tir_vars(tir_vars)
    call_args = [gvar, _as_tuple(args)] + ([] if tir_vars is None else [tir_vars])
    return make_call(name, call_args, None, _out_sinfo(name, out_sinfo))


def call_tir_inplace(
    gvar: GlobalVar,
    args: RelaxExpr | Sequence[RelaxExpr],
    inplace_indices: int | Sequence[int],
    out_sinfo: Any,
    tir_vars: RelaxExpr | Sequence[Any] | None = None,
) -> Call:
    """Like :func:`call_tir`, but output ``i`` is written into argument ``inplace_indices[i]``
    (-1: a fresh tensor)."""
    name = "relax.call_tir_inplace"
    indices = (inplace_indices,) if isinstance(inplace_indices, int) else tuple(inplace_indices)
    tir_vars = _as_tir_vars(tir_vars)
    call_args = [gvar, _as_tuple(args)] + ([] if tir_vars is None else [tir_vars])
    return make_call(name, call_args, {"inplace_indices": indices}, _out_sinfo(name, out_sinfo))


def call_dps_packed(
    func: str | RelaxExpr, args: RelaxExpr | Sequence[RelaxExpr], out_sinfo: Any
) -> Call:
    """Call packed function ``func`` in destination-passing style."""
    name = "relax.call_dps_packed"
    callee = ExternFunc(func) if isinstance(func, str) else func
    return make_call(name, [callee, _as_tuple(args)], None, _out_sinfo(name, out_sinfo))


def call_pure_packed(func: str | RelaxExpr, *args: RelaxExpr, sinfo_args: Any) -> Call:
    """Call a packed function that the caller promises is pure; ``sinfo_args`` is the result."""
    name = "relax.call_pure_packed"
    callee = ExternFunc(func) if isinstance(func, str) else func
    return make_call(name, [callee, *args], None, _out_sinfo(name, sinfo_args))


def call_packed(func: str, *args: RelaxExpr, sinfo_args: Any = ()) -> Call:
    """``R.call_packed``: a call whose callee is the :class:`ExternFunc` itself, not an op.

    :func:`~relaxvm.ir.relax.op.infer_struct_info` gives such a call its declared struct info.
    """
    infos = [] if sinfo_args in ((), []) else _out_sinfo("call_packed", sinfo_args)
    for index, arg in enumerate(args):
        if not isinstance(arg, RelaxExpr):
            raise OpError(f"call_packed: argument {index} must be a Relax expression")
    return Call(ExternFunc(func), list(args), None, infos)


def shape_of(expr: RelaxExpr) -> Call:
    """The shape of tensor ``expr`` as a shape value."""
    return make_call("relax.shape_of", [expr])


def tensor_to_shape(expr: RelaxExpr) -> Call:
    """A 1-d integer tensor's values as a shape value."""
    return make_call("relax.tensor_to_shape", [expr])


def print(*values: RelaxExpr, format: str = "") -> Call:
    """Print ``values`` at run time (impure)."""
    return make_call("relax.print", list(values), {"format": format})


def assert_op(
    condition: RelaxExpr, format_args: Sequence[RelaxExpr] = (), format: str = ""
) -> Call:
    """Raise at run time unless ``condition`` holds (impure)."""
    return make_call("relax.assert_op", [condition, *format_args], {"format": format})


def null_value() -> Call:
    """A null object value."""
    return make_call("relax.null_value", [])


def make_closure(func: RelaxExpr, args: RelaxExpr | Sequence[RelaxExpr]) -> Call:
    """A closure of ``func`` with its leading parameters bound to ``args``."""
    return make_call("relax.make_closure", [func, _as_tuple(args)])


def invoke_closure(
    closure: RelaxExpr, args: RelaxExpr | Sequence[RelaxExpr], sinfo_args: Any
) -> Call:
    """Call ``closure`` with ``args``; ``sinfo_args`` declares the result."""
    name = "relax.invoke_closure"
    return make_call(name, [closure, _as_tuple(args)], None, _out_sinfo(name, sinfo_args))


def invoke_pure_closure(
    closure: RelaxExpr, args: RelaxExpr | Sequence[RelaxExpr], sinfo_args: Any
) -> Call:
    """Like :func:`invoke_closure`, but the caller promises the call is pure."""
    name = "relax.invoke_pure_closure"
    return make_call(name, [closure, _as_tuple(args)], None, _out_sinfo(name, sinfo_args))


def to_vdevice(data: RelaxExpr, dst_vdevice: Device) -> Call:
    """Copy ``data`` to device ``dst_vdevice``."""
    if not isinstance(dst_vdevice, Device):
        raise OpError(f"relax.to_vdevice: dst_vdevice must be a Device, got {dst_vdevice!r}")
    return make_call("relax.to_vdevice", [data], {"dst_vdevice": dst_vdevice})


__all__ = [
    "assert_op",
    "call_dps_packed",
    "call_packed",
    "call_pure_packed",
    "call_tir",
    "call_tir_inplace",
    "invoke_closure",
    "invoke_pure_closure",
    "make_closure",
    "null_value",
    "print",
    "shape_of",
    "tensor_to_shape",
    "to_vdevice",
]
