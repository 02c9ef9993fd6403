"""Legalizations of ``quantize`` and ``dequantize``: one elementwise TE kernel each.

quantize: ``q = round(float32(data) / float32(scale))`` (half to even, float32 as TVM computes
it), then ``q + zero_point`` clipped to ``out_dtype``'s range and cast. The addition and the
clip run in float64, where every int32 bound and every sum is exact (in float32, int32's
maximum rounds up to 2**31 and the cast would overflow).

quantize to float8 (``float8_e4m3fn``, ``float8_e5m2``), as TVM: no integer rounding;
``float32(data) / float32(scale) + float32(zero_point)`` is clipped to the type's finite range
(NaN stays NaN: the clip is numpy's max/min) and cast, which rounds to the nearest float8,
ties to even (see :mod:`relaxvm.runtime.float8`).

dequantize: ``float32(int64(data) - int64(zero_point)) * float32(scale)`` (int64, so int32
data minus its zero point cannot wrap), saturated to float16's finite range when
``out_dtype`` is float16. Float data (float8, float16, float32) or a float16 zero point
subtracts in float32 instead.

A 1-D ``scale`` / ``zero_point`` is read at the output index along ``axis``; a 0-d one at ``()``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relaxvm.ir import FloatImm, PrimExpr, cast
from relaxvm.ir import op as sop
from relaxvm.ir.dtype import is_int_dtype
from relaxvm.ir.relax import BlockBuilder, Call, RelaxExpr
from relaxvm.ir.tir import intrin as T
from relaxvm.ir.tir import te
from relaxvm.runtime.dtype import DataType
from relaxvm.runtime.float8 import float8_format

from ._kernel import (
    OpPattern,
    attr,
    call_te,
    legalizes,
    op_name,
    out_dtype,
    out_tensor_sinfo,
    shape_of,
    tensor_arg,
)

__all__ = ["legalize_dequantize", "legalize_quantize"]

_F16_MAX = float(np.finfo(np.float16).max)


def _param(param: te.Tensor, idx: tuple[Any, ...], axis: int) -> PrimExpr:
    return param[()] if param.ndim == 0 else param[(idx[axis],)]


def _axis(call: Call, ndim: int) -> int:
    axis = int(attr(call, "axis", -1))
    return axis + ndim if axis < 0 else axis


def _f64(value: float) -> PrimExpr:
    return FloatImm("float64", value)


@legalizes("relax.quantize")
def legalize_quantize(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``clip(round(data / scale) + zero_point)`` in the range of ``out_dtype``."""
    for index, what in enumerate(("data", "scale", "zero_point")):
        tensor_arg(call, index, what)
    shape, dtype = shape_of(out_tensor_sinfo(call)), out_dtype(call)
    axis = _axis(call, len(shape))
    if dtype.is_float8:
        return _quantize_float8(bb, call, shape, dtype, axis)
    info = np.iinfo(dtype.numpy_dtype())
    lo, hi = _f64(float(info.min)), _f64(float(info.max))

    def kernel(data: te.Tensor, scale: te.Tensor, zero_point: te.Tensor) -> te.Tensor:
        def body(*idx: Any) -> PrimExpr:
            scaled = sop.true_div(
                cast(data[idx], "float32"), cast(_param(scale, idx, axis), "float32")
            )
            value = sop.add(
                cast(T.round(scaled), "float64"), cast(_param(zero_point, idx, axis), "float64")
            )
            return cast(sop.min_expr(sop.max_expr(value, lo), hi), dtype)

        return te.compute(shape, body, name="T_quantize")

    return call_te(
        bb,
        kernel,
        *call.args,
        primfunc_name_hint="quantize",
        op_pattern=OpPattern.ELEMWISE,
        op=op_name(call),
    )


def _quantize_float8(
    bb: BlockBuilder, call: Call, shape: Any, dtype: DataType, axis: int
) -> RelaxExpr:
    bound = float8_format(dtype).max_value
    lo, hi = FloatImm("float32", -bound), FloatImm("float32", bound)

    def kernel(data: te.Tensor, scale: te.Tensor, zero_point: te.Tensor) -> te.Tensor:
        def body(*idx: Any) -> PrimExpr:
            scaled = sop.true_div(
                cast(data[idx], "float32"), cast(_param(scale, idx, axis), "float32")
            )
            value = sop.add(scaled, cast(_param(zero_point, idx, axis), "float32"))
            return cast(sop.min_expr(sop.max_expr(value, lo), hi), dtype)

        return te.compute(shape, body, name="T_quantize")

    return call_te(
        bb,
        kernel,
        *call.args,
        primfunc_name_hint="quantize",
        op_pattern=OpPattern.ELEMWISE,
        op=op_name(call),
    )


@legalizes("relax.dequantize")
def legalize_dequantize(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``(data - zero_point) * scale`` in ``out_dtype`` (float16 saturates)."""
    for index, what in enumerate(("data", "scale", "zero_point")):
        tensor_arg(call, index, what)
    shape, dtype = shape_of(out_tensor_sinfo(call)), out_dtype(call)
    axis = _axis(call, len(shape))
    # Integers subtract exactly in int64; float data (float8 included) or a float16 zero
    # point subtracts in float32, as TVM.
    data_dtype = tensor_arg(call, 0, "data").dtype
    zp_dtype = tensor_arg(call, 2, "zero_point").dtype
    exact = all(d is not None and is_int_dtype(d) for d in (data_dtype, zp_dtype))
    sub_type = "int64" if exact else "float32"

    def kernel(data: te.Tensor, scale: te.Tensor, zero_point: te.Tensor) -> te.Tensor:
        def body(*idx: Any) -> PrimExpr:
            shifted = sop.sub(
                cast(data[idx], sub_type), cast(_param(zero_point, idx, axis), sub_type)
            )
            value = sop.mul(cast(shifted, "float32"), cast(_param(scale, idx, axis), "float32"))
            if str(dtype) == "float32":
                return value
            bound = FloatImm("float32", _F16_MAX)
            return cast(sop.min_expr(sop.max_expr(value, sop.neg(bound)), bound), dtype)

        return te.compute(shape, body, name="T_dequantize")

    return call_te(
        bb,
        kernel,
        *call.args,
        primfunc_name_hint="dequantize",
        op_pattern=OpPattern.ELEMWISE,
        op=op_name(call),
    )
