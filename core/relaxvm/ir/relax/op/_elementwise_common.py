"""Inference helpers shared by the elementwise op modules (:mod:`.elementwise`,
:mod:`.elementwise_math`)."""

from __future__ import annotations

from ....runtime.dtype import DataType, DataTypeCode
from ..expr import Call
from ..struct_info import PrimStructInfo, StructInfo, TensorStructInfo
from ._common import broadcast_ndim, broadcast_shapes, dims_text, same_shape, tensor
from .registry import InferContext

_BOOL = DataType("bool")


def is_float(dtype: DataType) -> bool:
    """True for float and bfloat types."""
    return dtype.code in (DataTypeCode.FLOAT, DataTypeCode.BFLOAT)


def require_bool(ctx: InferContext, info: TensorStructInfo, what: str) -> None:
    """An error naming ``what`` unless its dtype is bool (or unknown)."""
    if info.dtype is not None and info.dtype != _BOOL:
        raise ctx.error(f"{what} must be bool, got {info.dtype} with shape {dims_text(info)}")


class ScalarOperand(TensorStructInfo):
    """A ``R.Prim`` operand of a binary op, seen as the tensor TVM broadcasts it as.

    TVM's ``InferStructInfoBroadcast`` gives a scalar operand the shape ``[1]`` (so a 0-d
    tensor plus a scalar is a ``(1,)`` tensor), and two scalar operands a scalar result.
    """

    __slots__ = ()


def broadcast_result(
    ctx: InferContext, infos: list[TensorStructInfo], dtype: DataType | None
) -> StructInfo:
    """The broadcast result of ``infos`` with element type ``dtype``.

    Two ``R.Prim`` operands (from :func:`binary_operands`) give ``R.Prim(dtype)``, as in TVM.
    """
    if len(infos) == 2 and all(isinstance(info, ScalarOperand) for info in infos):
        if dtype is None:
            raise ctx.error("the operands are scalars of unknown dtype")
        return PrimStructInfo(dtype)
    # The vdevice comes from a tensor operand: a scalar has none.
    like = next((i for i in infos if not isinstance(i, ScalarOperand)), infos[0])
    shape = broadcast_shapes(ctx, infos)
    if shape is not None:
        return tensor(shape, dtype, like=like)
    if len(infos) == 2:
        # x op x with a shape variable: the shape is kept exactly.
        first, second = infos
        if first.shape is not None and first.shape is second.shape:
            return same_shape(first, dtype)
    return tensor(None, dtype, broadcast_ndim(infos), like=like)


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
        raise ctx.error(f"operands must have the same dtype, got {shown}")
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
            raise ctx.error(f"operand {index} must be a tensor or a scalar, got {sinfo}")
        infos.append(sinfo)
    return infos
