"""The kernel every elementwise legalization builds: operands read under numpy
broadcasting (:func:`broadcast_load`), checked at run time where inference could not prove
their extents agree (:func:`checked_broadcast`), and the result cast to the call's dtype
(:func:`cast_to`). The ops themselves are in :mod:`.elementwise`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from relaxvm.ir import FloatImm, IntImm, PrimExpr, cast, select, structural_equal
from relaxvm.ir import op as sop
from relaxvm.ir.dtype import is_bool_dtype
from relaxvm.ir.relax import BlockBuilder, Call, RelaxExpr, TensorStructInfo
from relaxvm.ir.tir import te
from relaxvm.runtime.dtype import DataType

from ._kernel import (
    LegalizationError,
    OpPattern,
    call_te,
    is_one,
    op_name,
    out_tensor_sinfo,
    shape_of,
    tensor_arg,
)

__all__ = [
    "broadcast_load",
    "broadcast_out_shape",
    "broadcast_pattern",
    "cast_to",
    "checked_broadcast",
    "elementwise_kernel",
    "is_prim",
    "kernel_broadcast_shape",
    "same_type",
]

Operand = Any  # a te.Tensor or a scalar PrimExpr (from a PrimValue operand)


def cast_to(value: PrimExpr, dtype: DataType) -> PrimExpr:
    """``value`` as ``dtype``; to bool means ``!= 0`` (as numpy's astype)."""
    if value.dtype == dtype:
        return value
    if is_bool_dtype(dtype):
        if value.dtype.is_float8:
            # float8 has no comparisons: test its (exact) float32 value instead.
            value = cast(value, "float32")
        return sop.not_equal(value, 0)
    return cast(value, dtype)


def broadcast_load(operand: Operand, out_shape: Sequence[PrimExpr], idx: Sequence[Any]) -> PrimExpr:
    """``operand`` read at output index ``idx`` under numpy broadcasting.

    Trailing dimensions line up; an input extent of constant 1 reads index 0. A symbolic input
    extent that is not the output's own expression may still be 1 at run time, so it reads
    ``0 if extent == 1 else i``.
    """
    if not isinstance(operand, te.Tensor):
        return operand if isinstance(operand, PrimExpr) else sop.convert(operand)
    offset = len(out_shape) - operand.ndim
    indices: list[Any] = []
    for axis, dim in enumerate(operand.shape):
        out_dim = out_shape[offset + axis]
        i = idx[offset + axis]
        if is_one(dim) and not is_one(out_dim):
            indices.append(0)
        elif isinstance(dim, IntImm) or structural_equal(dim, out_dim):
            indices.append(i)
        else:
            indices.append(select(sop.equal(dim, 1), IntImm(i.dtype, 0), i))
    return operand[tuple(indices)]


def checked_broadcast(
    bb: BlockBuilder, arg: RelaxExpr, out_shape: Sequence[PrimExpr], op: str
) -> RelaxExpr:
    """``arg``, or ``vm.builtin.check_broadcast(arg, out_shape)`` when one of its extents is
    neither 1 nor (structurally) the result's own, say ``b`` against ``a``, or ``3`` against a
    ``broadcast_to`` target ``n``: inference then assumed the two agree (or that the operand's
    is 1 at run time), which :func:`broadcast_load` relies on, so it is checked at run time."""
    from relaxvm.ir.relax import ShapeExpr, StringImm
    from relaxvm.ir.relax.op import call_pure_packed

    values = getattr(arg.struct_info, "shape_values", None)
    if values is None or is_prim(arg):
        return arg
    offset = len(out_shape) - len(values)
    unproven = [
        dim
        for axis, dim in enumerate(values)
        if not is_one(dim) and not structural_equal(dim, out_shape[offset + axis])
    ]
    if not unproven:
        return arg
    check = call_pure_packed(
        "vm.builtin.check_broadcast",
        arg,
        ShapeExpr(list(out_shape)),
        StringImm(op),
        sinfo_args=arg.struct_info,
    )
    return bb.emit(check)


def elementwise_kernel(
    bb: BlockBuilder,
    call: Call,
    name: str,
    fn: Callable[..., PrimExpr],
    args: Sequence[RelaxExpr],
    pattern: OpPattern,
) -> Call:
    """The kernel of ``call``: ``fn`` of ``args`` (tensors read under broadcasting, scalars
    as they are) at each output index, cast to the call's dtype, named ``T_{name}``.

    Parameters
    ----------
    bb : BlockBuilder
        Where run-time broadcast checks are emitted.
    call : Call
        The elementwise call; its struct info gives the result's shape and dtype.
    name : str
        The kernel's name hint.
    fn : Callable[..., PrimExpr]
        One output element from one element of each operand.
    args : Sequence[RelaxExpr]
        The operands ``fn`` takes (a prefix of ``call.args``).
    pattern : OpPattern
        The kernel's fusion pattern.
    """
    for index in range(len(args)):
        if not is_prim(call.args[index]):
            tensor_arg(call, index, f"{index}")
    shape = broadcast_out_shape(call)
    sinfo = call.struct_info
    assert (
        isinstance(sinfo, TensorStructInfo) and sinfo.dtype is not None
    )  # broadcast_out_shape checked
    dtype = sinfo.dtype
    args = [checked_broadcast(bb, arg, shape, op_name(call)) for arg in args]

    def kernel(*operands: Operand) -> te.Tensor:
        def body(*idx: Any) -> PrimExpr:
            return fn(*(broadcast_load(o, shape, idx) for o in operands))

        return te.compute(shape, lambda *idx: cast_to(body(*idx), dtype), name=f"T_{name}")

    return call_te(bb, kernel, *args, primfunc_name_hint=name, op_pattern=pattern, op=op_name(call))


def broadcast_out_shape(call: Call) -> list[PrimExpr]:
    """The result's extents. Inference leaves them unknown (rank only) when two operand
    extents cannot be decided statically, ``n`` against ``4``, as TVM's; the kernel then
    takes topi's broadcast of the operand shapes (a static extent wins, two symbols give
    their max), and :func:`checked_broadcast` checks the operands at run time."""
    sinfo = call.struct_info
    operands = [getattr(a.struct_info, "shape_values", None) for a in call.args]
    if (
        isinstance(sinfo, TensorStructInfo)
        and sinfo.shape_values is None
        and sinfo.ndim != -1
        and sinfo.dtype is not None
        and all(v is not None or is_prim(a) for v, a in zip(operands, call.args, strict=True))
    ):
        return kernel_broadcast_shape(op_name(call), [list(v) for v in operands if v is not None])
    return shape_of(out_tensor_sinfo(call))


def kernel_broadcast_shape(op: str, shapes: Sequence[Sequence[PrimExpr]]) -> list[PrimExpr]:
    """The extents a broadcasting kernel computes, as topi's broadcast: trailing axes line
    up, 1 gives way, equal extents stay, a literal wins over a symbol (the only value the
    call can succeed with) and two symbols give their ``max``. Two different literals are a
    LegalizationError (inference reports them first)."""
    ndim = max((len(shape) for shape in shapes), default=0)
    out: list[PrimExpr] = []
    for position in range(ndim, 0, -1):
        dims = [shape[-position] for shape in shapes if len(shape) >= position]
        result = dims[0]
        for dim in dims[1:]:
            if is_one(dim) or structural_equal(dim, result):
                continue
            if is_one(result):
                result = dim
            elif isinstance(result, IntImm) and isinstance(dim, IntImm):
                raise LegalizationError(f"{op}: extents {result} and {dim} do not broadcast")
            elif isinstance(dim, IntImm) or not isinstance(result, IntImm):
                result = dim if isinstance(dim, IntImm) else sop.max_expr(result, dim)
        out.append(result)
    return out


def is_prim(arg: RelaxExpr) -> bool:
    """Whether ``arg`` is a scalar (``R.Prim``) operand rather than a tensor."""
    from relaxvm.ir.relax.struct_info import PrimStructInfo

    return isinstance(arg.struct_info, PrimStructInfo)


def broadcast_pattern(call: Call) -> OpPattern:
    """ElemWise when every tensor operand has the result's shape, else Broadcast."""
    out_shape = broadcast_out_shape(call)
    for arg in call.args:
        sinfo = arg.struct_info
        if is_prim(arg):
            continue
        values = getattr(sinfo, "shape_values", None)
        if values is None or len(values) != len(out_shape):
            return OpPattern.BROADCAST
        if not all(structural_equal(a, b) for a, b in zip(values, out_shape, strict=True)):
            return OpPattern.BROADCAST
    return OpPattern.ELEMWISE


def same_type(a: PrimExpr, b: PrimExpr) -> tuple[PrimExpr, PrimExpr]:
    """``a`` and ``b``, a literal cast to the other operand's dtype when they differ."""
    # A literal operand takes the other operand's type. Two values of different types only
    # reach here for a comparison (TVM allows mixed dtypes there): the TIR operators then
    # promote them as TVM's BinaryOpMatchTypes does (int32 < float32 compares as float32).
    if a.dtype != b.dtype:
        if isinstance(a, (IntImm, FloatImm)):
            return cast_to(a, b.dtype), b
        if isinstance(b, (IntImm, FloatImm)):
            return a, cast_to(b, a.dtype)
    return a, b
