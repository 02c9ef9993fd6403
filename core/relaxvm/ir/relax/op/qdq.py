"""Quantize / dequantize ops: ``quantize`` and ``dequantize`` (TVM v0.23 ``relax.quantize``).

``quantize(data, scale, zero_point)`` is ``clip(round(data / scale) + zero_point)`` in the range
of an integer ``out_dtype`` (rounding half to even, as TVM's ``round``); for a float8
``out_dtype`` (``float8_e4m3fn``, ``float8_e5m2``) it is ``clip(data / scale + zero_point)`` to
the type's finite range, then rounded to the nearest float8 (no integer rounding first, as in
TVM). ``dequantize`` is ``(data - zero_point) * scale``. ``scale`` and ``zero_point`` are scalars
(one value for the whole tensor) or 1-D tensors with one value per index of ``data``'s ``axis``
(per-channel).

Inference: the result has ``data``'s shape and the ``out_dtype``. Errors: a non-float data
for quantize (float8 counts as quantized, not float); for dequantize a data that is neither
an integer, a float8 nor float16/float32 (TVM's list); an unsupported ``out_dtype``; a
non-float scale; a zero point that is neither an integer nor float16 (TVM allows int8 and
float16); an axis out of range; a scale or zero point of rank > 1 or whose extent is provably
different from ``data``'s extent along ``axis``. A wrong dtype is an ``OpTypeError`` (a
``TypeError``, as TVM), a wrong rank, extent or axis an ``OpError``.
"""

from __future__ import annotations

from ....runtime.dtype import DataType
from .._base import RelaxExpr
from ..expr import Call
from ..struct_info import StructInfo, TensorStructInfo
from ._common import as_int, dtype_attr, make_call, normalize_axis, prove_not_equal, same_shape
from .registry import InferContext, OpError, register_op

__all__ = ["FLOAT8_QUANTIZED_DTYPES", "QUANTIZED_DTYPES", "dequantize", "quantize"]

#: The integer dtypes ``quantize`` produces and ``dequantize`` reads.
QUANTIZED_DTYPES = ("int8", "uint8", "int16", "uint16", "int32")
#: The float8 dtypes ``quantize`` produces and ``dequantize`` reads (as TVM v0.23).
FLOAT8_QUANTIZED_DTYPES = ("float8_e4m3fn", "float8_e5m2")
_FLOAT_DTYPES = ("float16", "float32")


def _is_float(dtype: DataType | None) -> bool:
    """float16/32/64 or bfloat16; not float8 (a quantized type here, as in TVM)."""
    if dtype is None:
        return True
    return not dtype.is_float8 and str(dtype).startswith(("float", "bfloat"))


def _is_int(dtype: DataType | None) -> bool:
    return dtype is None or str(dtype).startswith(("int", "uint"))


def _is_zero_point(dtype: DataType | None) -> bool:
    # TVM allows int8 and float16 zero points; every integer type is accepted here too,
    # since the kernels compute the shift exactly for all of them.
    return _is_int(dtype) or str(dtype) == "float16"


def _is_dequantizable(dtype: DataType | None) -> bool:
    return dtype is None or _is_int(dtype) or dtype.is_float8 or str(dtype) in _FLOAT_DTYPES


def _float8_hint(dtype: DataType | None) -> str:
    if dtype is not None and dtype.is_float8:
        return " (float8 is a quantized type: dequantize it or astype it to float32 first)"
    return ""


def _check_param(
    ctx: InferContext, info: TensorStructInfo, data: TensorStructInfo, axis: int | None, what: str
) -> None:
    if info.ndim == -1 or info.ndim == 0:
        return
    if info.ndim != 1:
        raise ctx.error(f"{what} must be a scalar or a 1-D tensor, got rank {info.ndim}")
    values, data_values = info.shape_values, data.shape_values
    if axis is None or values is None or data_values is None:
        return
    if prove_not_equal(ctx, values[0], data_values[axis]):
        raise ctx.error(
            f"{what} has {values[0]} values but data has extent {data_values[axis]} along "
            f"axis {axis}"
        )


def _infer_qdq(call: Call, ctx: InferContext) -> StructInfo:
    quantize = ctx.op_name == "relax.quantize"
    data = ctx.tensor_arg(call, 0, "data")
    scale = ctx.tensor_arg(call, 1, "scale")
    zero_point = ctx.tensor_arg(call, 2, "zero_point")
    out_dtype = ctx.attr(call, "out_dtype")
    allowed = QUANTIZED_DTYPES + FLOAT8_QUANTIZED_DTYPES if quantize else _FLOAT_DTYPES
    if str(out_dtype) not in allowed:
        raise ctx.type_error(f"out_dtype must be one of {', '.join(allowed)}, got {out_dtype!r}")
    if quantize and not _is_float(data.dtype):
        raise ctx.type_error(
            f"data must have a float dtype, got {data.dtype}{_float8_hint(data.dtype)}"
        )
    if not quantize and not _is_dequantizable(data.dtype):
        raise ctx.type_error(
            "data must have an integer, float8 (float8_e4m3fn, float8_e5m2), float16 or "
            f"float32 dtype, got {data.dtype}"
        )
    if not _is_float(scale.dtype):
        raise ctx.type_error(
            f"scale must have a float dtype, got {scale.dtype}{_float8_hint(scale.dtype)}"
        )
    if not _is_zero_point(zero_point.dtype):
        raise ctx.type_error(
            f"zero_point must have an integer or float16 dtype, got {zero_point.dtype}"
        )
    axis: int | None = None
    if data.ndim != -1:
        if data.ndim == 0:
            # A 0-d tensor has no axis to index the scale by: only the default axis is allowed.
            if ctx.attr(call, "axis", -1) not in (-1, 0):
                raise ctx.error("axis must be -1 for a 0-d data tensor")
        else:
            axis = normalize_axis(ctx, ctx.attr(call, "axis", -1), data.ndim)
    _check_param(ctx, scale, data, axis, "scale")
    _check_param(ctx, zero_point, data, axis, "zero_point")
    return same_shape(data, out_dtype)


_ATTRS = {
    "axis": "the axis of data that a 1-D scale / zero_point runs along",
    "out_dtype": "the result dtype",
}
register_op(
    "relax.quantize",
    num_inputs=3,
    infer=_infer_qdq,
    attrs=_ATTRS,
    doc="clip(round(data / scale) + zero_point) in out_dtype's range (round half to even; "
    "float8: no integer rounding, clip to the finite range, then round to nearest even)",
)
register_op(
    "relax.dequantize",
    num_inputs=3,
    infer=_infer_qdq,
    attrs=_ATTRS,
    doc="(data - zero_point) * scale",
)


def _attrs(name: str, axis: int, out_dtype: str) -> dict[str, object]:
    dtype = dtype_attr(name, out_dtype)
    if dtype is None:
        raise OpError(f"{name}: out_dtype must be given, got {out_dtype!r}")
    return {"axis": as_int(name, "axis", axis), "out_dtype": dtype}


def quantize(
    data: RelaxExpr,
    scale: RelaxExpr,
    zero_point: RelaxExpr,
    axis: int = -1,
    out_dtype: str = "int8",
) -> Call:
    """Quantize floats: ``clip(round(data / scale) + zero_point, min, max)`` in ``out_dtype``.

    Parameters
    ----------
    data : RelaxExpr
        The float tensor to quantize.
    scale : RelaxExpr
        A float scalar, or a 1-D tensor with one scale per index along ``axis``.
    zero_point : RelaxExpr
        An integer or float16 scalar, or a 1-D tensor with one zero point per index along
        ``axis``.
    axis : int
        The axis of ``data`` that a 1-D ``scale`` / ``zero_point`` runs along.
    out_dtype : str
        One of ``int8``, ``uint8``, ``int16``, ``uint16``, ``int32``, ``float8_e4m3fn``,
        ``float8_e5m2``.

    Returns
    -------
    Call
        A tensor of ``data``'s shape and ``out_dtype``. Integer types: rounding is half to
        even; values outside ``out_dtype``'s range (infinities included) saturate; a NaN gives
        an unspecified value, as in TVM. Float8 types: ``data / scale + zero_point`` (in
        float32) is clipped to the finite range (+-448 for e4m3fn, +-57344 for e5m2, so
        infinities saturate too) and rounded to the nearest float8, ties to even; a NaN stays
        NaN.
    """
    name = "relax.quantize"
    return make_call(name, [data, scale, zero_point], _attrs(name, axis, out_dtype))


def dequantize(
    data: RelaxExpr,
    scale: RelaxExpr,
    zero_point: RelaxExpr,
    axis: int = -1,
    out_dtype: str = "float32",
) -> Call:
    """Dequantize: ``(data - zero_point) * scale`` in ``out_dtype``.

    Parameters
    ----------
    data : RelaxExpr
        The tensor to dequantize: an integer, float8 (``float8_e4m3fn``, ``float8_e5m2``),
        float16 or float32 tensor (integers subtract in int64, the others in float32).
    scale : RelaxExpr
        A float scalar, or a 1-D tensor with one scale per index along ``axis``.
    zero_point : RelaxExpr
        An integer or float16 scalar, or a 1-D tensor with one zero point per index along
        ``axis`` (a float16 zero point makes integer data subtract in float32).
    axis : int
        The axis of ``data`` that a 1-D ``scale`` / ``zero_point`` runs along.
    out_dtype : str
        ``float32`` or ``float16`` (computed in float32, then saturated to float16's range).

    Returns
    -------
    Call
        A tensor of ``data``'s shape and ``out_dtype``.
    """
    name = "relax.dequantize"
    return make_call(name, [data, scale, zero_point], _attrs(name, axis, out_dtype))
