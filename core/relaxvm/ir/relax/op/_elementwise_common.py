"""Inference helpers shared by the elementwise op modules (:mod:`.elementwise`,
:mod:`.elementwise_math`)."""

from __future__ import annotations

from ....runtime.dtype import DataType, DataTypeCode
from ..expr import Call
from ..struct_info import PrimStructInfo, TensorStructInfo
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


def broadcast_result(
    ctx: InferContext, infos: list[TensorStructInfo], dtype: DataType | None
) -> TensorStructInfo:
    """The broadcast result of ``infos`` with element type ``dtype``."""
    shape = broadcast_shapes(ctx, infos)
    if shape is not None:
        return tensor(shape, dtype, like=infos[0])
    if len(infos) == 2:
        # x op x with a shape variable: the shape is kept exactly.
        first, second = infos
        if first.shape is not None and first.shape is second.shape:
            return same_shape(first, dtype)
    return tensor(None, dtype, broadcast_ndim(infos), like=infos[0])


def binary_operands(call: Call, ctx: InferContext) -> list[TensorStructInfo]:
    """The two operands as tensors (a PrimValue is a 0-d tensor)."""
    infos = []
    for index in range(2):
        sinfo = ctx.arg_sinfo(call, index)
        if isinstance(sinfo, PrimStructInfo):
            # A scalar operand behaves as a 0-d tensor, as in TVM.
            sinfo = TensorStructInfo([], sinfo.dtype)
        if not isinstance(sinfo, TensorStructInfo):
            raise ctx.error(f"operand {index} must be a tensor or a scalar, got {sinfo}")
        infos.append(sinfo)
    return infos
