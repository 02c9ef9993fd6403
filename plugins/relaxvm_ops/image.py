"""``relax.image.resize2d`` (NCHW; nearest_neighbor and linear) as one TE compute.

Each output coordinate maps to a float32 input coordinate by the coordinate transformation
mode; nearest_neighbor rounds it (``rounding_method``) and clamps it into the image, linear
blends the four clamped neighbours as TVM's topi does (``a * (1 - t) + b * t``).
"""

from __future__ import annotations

from typing import Any

from relaxvm.ir import PrimExpr, cast
from relaxvm.ir import op as sop
from relaxvm.ir.dtype import is_float_dtype
from relaxvm.ir.relax import BlockBuilder, Call, RelaxExpr
from relaxvm.ir.tir import intrin as T
from relaxvm.ir.tir import te

from ._kernel import (
    LegalizationError,
    OpPattern,
    attr,
    call_te,
    legalizes,
    op_name,
    out_tensor_sinfo,
    shape_of,
    tensor_arg,
)

__all__: list[str] = []

_F32 = "float32"


def _f32(value: Any) -> PrimExpr:
    return cast(value, _F32) if isinstance(value, PrimExpr) else sop.const(float(value), _F32)


def _source_coord(out: Any, in_size: PrimExpr, out_size: PrimExpr, mode: str) -> PrimExpr:
    """The input coordinate of output index ``out`` along one axis."""
    o = _f32(out)
    scale = _f32(in_size) / _f32(out_size)
    if mode == "asymmetric":
        return o * scale
    if mode == "align_corners":
        span = _f32(sop.sub(in_size, 1)) / _f32(sop.max_expr(sop.sub(out_size, 1), 1))
        return T.if_then_else(sop.greater(out_size, 1), o * span, _f32(0.0))
    half = (o + _f32(0.5)) * scale - _f32(0.5)
    if mode == "pytorch_half_pixel":
        return T.if_then_else(sop.greater(out_size, 1), half, _f32(0.0))
    return half


def _nearest(coord: PrimExpr, rounding: str) -> PrimExpr:
    if rounding == "round":
        return T.round(coord)
    if rounding in ("", "round_prefer_floor"):
        return T.ceil(coord - _f32(0.5))
    if rounding == "round_prefer_ceil":
        return T.floor(coord + _f32(0.5))
    if rounding == "floor":
        return T.floor(coord + _f32(1e-5))
    return T.ceil(coord - _f32(1e-5))


def _clamp(index: PrimExpr, size: PrimExpr) -> PrimExpr:
    return sop.max_expr(sop.min_expr(index, sop.sub(size, 1)), 0)


@legalizes("relax.image.resize2d")
def legalize_resize2d(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """Nearest or bilinear sampling of NCHW data at the mapped coordinates."""
    d_shape = shape_of(tensor_arg(call, 0, "data"))
    out = out_tensor_sinfo(call)
    out_shape, out_dtype = shape_of(out), out.dtype
    if out_dtype is None:
        raise LegalizationError(f"{op_name(call)}: the result dtype is unknown")
    method = attr(call, "method", "linear")
    mode = attr(call, "coordinate_transformation_mode", "half_pixel")
    rounding = attr(call, "rounding_method", "round")
    h, w = d_shape[2], d_shape[3]
    oh, ow = out_shape[2], out_shape[3]
    data_sinfo = tensor_arg(call, 0, "data")
    if method == "linear" and data_sinfo.dtype is not None and not is_float_dtype(data_sinfo.dtype):
        raise LegalizationError(
            f"{op_name(call)}: method 'linear' needs float data, got {data_sinfo.dtype}"
        )

    def kernel(data: te.Tensor, *_: Any) -> te.Tensor:
        def nearest_body(b: Any, c: Any, y: Any, x: Any) -> PrimExpr:
            iy = cast(_nearest(_source_coord(y, h, oh, mode), rounding), "int64")
            ix = cast(_nearest(_source_coord(x, w, ow, mode), rounding), "int64")
            return cast(data[b, c, _clamp(iy, h), _clamp(ix, w)], out_dtype)

        def linear_body(b: Any, c: Any, y: Any, x: Any) -> PrimExpr:
            fy, fx = _source_coord(y, h, oh, mode), _source_coord(x, w, ow, mode)
            y0, x0 = T.floor(fy), T.floor(fx)
            ty, tx = cast(fy - y0, data.dtype), cast(fx - x0, data.dtype)
            iy, ix = cast(y0, "int64"), cast(x0, "int64")
            one = sop.const(1, data.dtype)

            def pixel(dy: int, dx: int) -> PrimExpr:
                return data[b, c, _clamp(sop.add(iy, dy), h), _clamp(sop.add(ix, dx), w)]

            top = pixel(0, 0) * (one - tx) + pixel(0, 1) * tx
            bottom = pixel(1, 0) * (one - tx) + pixel(1, 1) * tx
            return cast(top * (one - ty) + bottom * ty, out_dtype)

        body = nearest_body if method == "nearest_neighbor" else linear_body
        return te.compute(out_shape, body, name="resize")

    return call_te(
        bb, kernel, call.args[0], primfunc_name_hint="resize2d",
        op_pattern=OpPattern.INJECTIVE, op=op_name(call),
    )  # fmt: skip
