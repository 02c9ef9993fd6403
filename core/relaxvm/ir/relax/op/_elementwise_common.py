"""Inference helpers shared by the elementwise op modules (:mod:`.elementwise`,
:mod:`.elementwise_math`)."""

from __future__ import annotations

from collections.abc import Sequence

from ....runtime.device import Device
from ....runtime.dtype import DataType, DataTypeCode
from ..expr import Call
from ..struct_info import PrimStructInfo, StructInfo, TensorStructInfo
from ._common import broadcast_ndim, broadcast_shapes, dims_text
from .registry import InferContext

_BOOL = DataType("bool")


def is_float(dtype: DataType) -> bool:
    """True for float and bfloat types."""
    return dtype.code in (DataTypeCode.FLOAT, DataTypeCode.BFLOAT)


def require_bool(ctx: InferContext, info: TensorStructInfo, what: str) -> None:
    """An error naming ``what`` unless its dtype is bool (or unknown)."""
    if info.dtype is not None and info.dtype != _BOOL:
        raise ctx.type_error(f"{what} must be bool, got {info.dtype} with shape {dims_text(info)}")


class ScalarOperand(TensorStructInfo):
    """A ``R.Prim`` operand of a binary op, seen as the tensor TVM broadcasts it as.

    TVM's ``InferStructInfoBroadcast`` gives a scalar operand the shape ``[1]`` (so a 0-d
    tensor plus a scalar is a ``(1,)`` tensor), and two scalar operands a scalar result.
    """

    __slots__ = ()


def _has_target(vdevice: Device | None) -> bool:
    """True for a vdevice that names where the tensor lives (a VDevice without a target,
    like no vdevice at all, defers to the other operand)."""
    return vdevice is not None and getattr(vdevice, "target", True) is not None


def binary_vdevice(ctx: InferContext, infos: Sequence[TensorStructInfo]) -> Device | None:
    """The vdevice of a binary op's result, as TVM's ``InferBinaryArithOpOutVDevice``.

    An operand without a (targeted) vdevice takes the other's; two different vdevices are
    an error, since the op would have to run on two devices at once.
    """
    first, second = (None if isinstance(i, ScalarOperand) else i.vdevice for i in infos)
    if not _has_target(first):
        return second
    if not _has_target(second):
        return first
    if first != second:
        raise ctx.type_error(f"operands are on different vdevices: {first!r} and {second!r}")
    return first


def broadcast_result(
    ctx: InferContext, infos: list[TensorStructInfo], dtype: DataType | None
) -> StructInfo:
    """The broadcast result of two operands ``infos`` with element type ``dtype``.

    Two ``R.Prim`` operands (from :func:`binary_operands`) give ``R.Prim(dtype)``, as in TVM.
    When a pair of extents cannot be decided statically (``m`` against ``n + 2``) the result
    has only the broadcast rank, as TVM's ``InferStructInfoBroadcast``.
    """
    if len(infos) == 2 and all(isinstance(info, ScalarOperand) for info in infos):
        if dtype is None:
            raise ctx.error("the operands are scalars of unknown dtype")
        return PrimStructInfo(dtype)
    vdevice = binary_vdevice(ctx, infos)
    shape = broadcast_shapes(ctx, infos)
    if shape is not None:
        return TensorStructInfo(list(shape), dtype, vdevice=vdevice)
    first, second = infos
    if first.shape is not None and first.shape is second.shape:
        # x op x with a shape variable: the shape is kept exactly.
        return TensorStructInfo(first.shape, dtype, ndim=first.ndim, vdevice=vdevice)
    return TensorStructInfo(None, dtype, ndim=broadcast_ndim(infos), vdevice=vdevice)


def binary_dtype(ctx: InferContext, infos: list[TensorStructInfo]) -> DataType | None:
    """The common dtype of two arithmetic operands, as TVM's ``InferBinaryArithOpOutDtype``:
    unknown if either is unknown, else they must be equal (a scalar included)."""
    first, second = (info.dtype for info in infos)
    if first is None or second is None:
        return None
    if first != second:
        shown = " and ".join(
            f"R.Prim {i.dtype}" if isinstance(i, ScalarOperand) else f"{dims_text(i)} {i.dtype}"
            for i in infos
        )
        raise ctx.type_error(f"operands must have the same dtype, got {shown}")
    return first


def binary_operands(call: Call, ctx: InferContext) -> list[TensorStructInfo]:
    """The two operands as tensors; a ``R.Prim`` operand is a :class:`ScalarOperand`.

    A scalar is broadcast as the shape ``[1]``, as TVM does; :func:`broadcast_result` turns
    two scalars into a scalar result. The dtypes must still agree (TVM's
    ``InferBinaryArithOpOutDtype`` requires equal dtypes for scalars too).
    """
    infos: list[TensorStructInfo] = []
    for index in range(2):
        sinfo = ctx.arg_sinfo(call, index)
        if isinstance(sinfo, PrimStructInfo):
            sinfo = ScalarOperand([1], sinfo.dtype)
        if not isinstance(sinfo, TensorStructInfo):
            raise ctx.type_error(f"operand {index} must be a tensor or a scalar, got {sinfo}")
        infos.append(sinfo)
    return infos
