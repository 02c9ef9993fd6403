"""``relax.image.resize2d`` (NCHW; nearest_neighbor, linear and cubic) as one TE compute.

Each output coordinate maps to a float32 input coordinate by the coordinate transformation
mode; nearest_neighbor rounds it (``rounding_method``) and clamps it into the image, linear
blends the four clamped neighbours as TVM's topi does (``a * (1 - t) + b * t``), cubic weighs
the 4 x 4 clamped neighbours with Keys' kernel. ``tf_crop_and_resize`` replaces positions
that fall outside the image by ``extrapolation_value``.
"""

from __future__ import annotations

from typing import Any

from relaxvm.ir import PrimExpr, cast, select
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
from .nn_layouts import LayoutSpec, in_any_layout

__all__: list[str] = []

_F32 = "float32"


def _f32(value: Any) -> PrimExpr:
    return cast(value, _F32) if isinstance(value, PrimExpr) else sop.const(float(value), _F32)


def _source_coord(
    out: Any,
    in_size: PrimExpr,
    out_size: PrimExpr,
    mode: str,
    roi: tuple[float, float] = (0.0, 0.0),
) -> PrimExpr:
    """The input coordinate of output index ``out`` along one axis (``roi``: the axis's
    start and end fractions, for tf_crop_and_resize)."""
    o = _f32(out)
    scale = _f32(in_size) / _f32(out_size)
    if mode == "asymmetric":
        return o * scale
    if mode == "tf_half_pixel_for_nn":
        return (o + _f32(0.5)) * scale
    if mode == "tf_crop_and_resize":
        start, end = _f32(roi[0]), _f32(roi[1])
        last = _f32(sop.sub(in_size, 1))
        step = (end - start) * last / _f32(sop.max_expr(sop.sub(out_size, 1), 1))
        middle = _f32(0.5) * (start + end) * last
        return T.if_then_else(sop.greater(out_size, 1), start * last + o * step, middle)
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


def _cubic_weights(t: PrimExpr, alpha: float, dtype: Any) -> list[PrimExpr]:
    """Keys' cubic convolution weights of the neighbours at offsets -1, 0, 1, 2 from
    ``floor(coord)``, for the fraction ``t = coord - floor(coord)``."""
    a = sop.const(alpha, dtype)
    one, two = sop.const(1.0, dtype), sop.const(2.0, dtype)

    def near(d: PrimExpr) -> PrimExpr:  # |d| <= 1
        return ((a + two) * d - (a + sop.const(3.0, dtype))) * d * d + one

    def far(d: PrimExpr) -> PrimExpr:  # 1 < |d| < 2
        return ((a * d - sop.const(5.0, dtype) * a) * d + sop.const(8.0, dtype) * a) * d - (
            sop.const(4.0, dtype) * a
        )

    return [far(t + one), near(t), near(one - t), far(two - t)]


def _outside(coord: PrimExpr, size: PrimExpr) -> PrimExpr:
    return sop.logical_or(sop.less(coord, _f32(0.0)), sop.greater(coord, _f32(sop.sub(size, 1))))


@legalizes("relax.image.resize2d")
@in_any_layout(lambda call: LayoutSpec((("layout", "NCHW"), None), out_attr="layout"))
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
    roi = attr(call, "roi", (0.0, 0.0, 0.0, 0.0))
    alpha, exclude = float(attr(call, "cubic_alpha", -0.75)), int(attr(call, "cubic_exclude", 0))
    extrapolation = float(attr(call, "extrapolation_value", 0.0))
    h, w = d_shape[2], d_shape[3]
    oh, ow = out_shape[2], out_shape[3]
    data_sinfo = tensor_arg(call, 0, "data")
    blends = method in ("linear", "cubic")
    if blends and data_sinfo.dtype is not None and not is_float_dtype(data_sinfo.dtype):
        raise LegalizationError(
            f"{op_name(call)}: method '{method}' needs float data, got {data_sinfo.dtype}"
        )

    def coords(y: Any, x: Any) -> tuple[PrimExpr, PrimExpr]:
        return (
            _source_coord(y, h, oh, mode, (roi[0], roi[2])),
            _source_coord(x, w, ow, mode, (roi[1], roi[3])),
        )

    def kernel(data: te.Tensor, *_: Any) -> te.Tensor:
        def nearest_body(b: Any, c: Any, y: Any, x: Any) -> PrimExpr:
            fy, fx = coords(y, x)
            iy = cast(_nearest(fy, rounding), "int64")
            ix = cast(_nearest(fx, rounding), "int64")
            return cast(data[b, c, _clamp(iy, h), _clamp(ix, w)], out_dtype)

        def cubic_body(b: Any, c: Any, y: Any, x: Any) -> PrimExpr:
            fy, fx = coords(y, x)
            y0, x0 = T.floor(fy), T.floor(fx)
            wy = _cubic_weights(cast(fy - y0, data.dtype), alpha, data.dtype)
            wx = _cubic_weights(cast(fx - x0, data.dtype), alpha, data.dtype)
            iy, ix = cast(y0, "int64"), cast(x0, "int64")
            zero = sop.const(0.0, data.dtype)
            if exclude:
                # Outside neighbours weigh nothing; the others are renormalised.
                def inside(index: PrimExpr, size: PrimExpr) -> PrimExpr:
                    return sop.logical_and(sop.greater_equal(index, 0), sop.less(index, size))

                wy = [select(inside(sop.add(iy, k - 1), h), wk, zero) for k, wk in enumerate(wy)]
                wx = [select(inside(sop.add(ix, k - 1), w), wk, zero) for k, wk in enumerate(wx)]
                total_y, total_x = wy[0] + wy[1] + wy[2] + wy[3], wx[0] + wx[1] + wx[2] + wx[3]
                wy = [wk / total_y for wk in wy]
                wx = [wk / total_x for wk in wx]
            total: PrimExpr = zero
            for dy in range(4):
                row: PrimExpr = zero
                for dx in range(4):
                    pixel = data[
                        b, c, _clamp(sop.add(iy, dy - 1), h), _clamp(sop.add(ix, dx - 1), w)
                    ]
                    row = row + wx[dx] * pixel
                total = total + wy[dy] * row
            return cast(total, out_dtype)

        def linear_body(b: Any, c: Any, y: Any, x: Any) -> PrimExpr:
            fy, fx = coords(y, x)
            y0, x0 = T.floor(fy), T.floor(fx)
            ty, tx = cast(fy - y0, data.dtype), cast(fx - x0, data.dtype)
            iy, ix = cast(y0, "int64"), cast(x0, "int64")
            one = sop.const(1, data.dtype)

            def pixel(dy: int, dx: int) -> PrimExpr:
                return data[b, c, _clamp(sop.add(iy, dy), h), _clamp(sop.add(ix, dx), w)]

            top = pixel(0, 0) * (one - tx) + pixel(0, 1) * tx
            bottom = pixel(1, 0) * (one - tx) + pixel(1, 1) * tx
            return cast(top * (one - ty) + bottom * ty, out_dtype)

        bodies = {"nearest_neighbor": nearest_body, "linear": linear_body, "cubic": cubic_body}
        body = bodies[method]
        if mode == "tf_crop_and_resize":
            inner = body

            def body(b: Any, c: Any, y: Any, x: Any) -> PrimExpr:
                fy, fx = coords(y, x)
                outside = sop.logical_or(_outside(fy, h), _outside(fx, w))
                return select(outside, sop.const(extrapolation, out_dtype), inner(b, c, y, x))

        return te.compute(out_shape, body, name="resize")

    return call_te(
        bb, kernel, call.args[0], primfunc_name_hint="resize2d",
        op_pattern=OpPattern.INJECTIVE, op=op_name(call),
    )  # fmt: skip
