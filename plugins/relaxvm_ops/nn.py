"""Neural-network ops: layer_norm, rms_norm, batch_norm (inference), conv2d (NCHW/OIHW,
strides, padding, dilation, groups), max_pool2d, avg_pool2d and adaptive_avg_pool2d.

Norms are written as separate TE stages (a sum per statistic, then the elementwise
normalisation) and conv2d as a padding stage plus one reduction over (input channel, kernel
row, kernel column), the shapes default schedules look for.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from relaxvm.ir import IntImm, PrimExpr, cast
from relaxvm.ir import op as sop
from relaxvm.ir.dtype import dtype_int_range, is_float_dtype
from relaxvm.ir.relax import BlockBuilder, Call, RelaxExpr
from relaxvm.ir.tir import intrin as T
from relaxvm.ir.tir import te
from relaxvm.runtime.dtype import DataType

from ._kernel import (
    OpPattern,
    attr,
    call_te,
    legalizes,
    op_name,
    out_tensor_sinfo,
    product,
    shape_of,
    tensor_arg,
)
from .elementwise import cast_to
from .nn_layouts import conv_layouts, in_any_layout, pool_layouts
from .reduction import normalize_axes

__all__: list[str] = []


# ---- normalisation ----------------------------------------------------------------------------
def _reduced_mean(
    values: te.Tensor, shape: Sequence[PrimExpr], axes: Sequence[int], name: str
) -> te.Tensor:
    """``mean(values)`` over ``axes``, kept as extent 1 (a sum stage and a scale stage)."""
    keep = [IntImm("int64", 1) if a in axes else d for a, d in enumerate(shape)]
    count = product([shape[a] for a in axes])

    def sum_body(*idx: Any) -> Any:
        red = {a: te.reduce_axis((0, shape[a]), name=f"k{a}") for a in axes}
        src = [red[a] if a in axes else idx[a] for a in range(len(shape))]
        return te.sum(values[tuple(src)], axis=list(red.values()))

    total = te.compute(keep, sum_body, name=f"{name}_sum")
    return te.compute(keep, lambda *i: total[i] / cast(count, values.dtype), name=f"{name}_mean")


def _at_kept(idx: Sequence[Any], axes: Sequence[int]) -> tuple[Any, ...]:
    return tuple(0 if a in axes else i for a, i in enumerate(idx))


def _param(p: te.Tensor, idx: Sequence[Any], axes: Sequence[int]) -> PrimExpr:
    return p[tuple(idx[a] for a in axes)]


@legalizes("relax.nn.layer_norm")
def legalize_layer_norm(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``(x - mean) * rsqrt(var + eps) * gamma + beta`` over ``axes``."""
    shape = shape_of(tensor_arg(call, 0, "data"))
    tensor_arg(call, 1, "gamma")
    tensor_arg(call, 2, "beta")
    axes = normalize_axes(call, attr(call, "axes", (-1,)), len(shape))
    eps = float(attr(call, "epsilon", 1e-5))
    center, scale = bool(attr(call, "center", True)), bool(attr(call, "scale", True))

    def kernel(x: te.Tensor, gamma: te.Tensor, beta: te.Tensor) -> te.Tensor:
        mean = _reduced_mean(x, shape, axes, "T_layer_norm")
        dev = te.compute(shape, lambda *i: x[i] - mean[_at_kept(i, axes)], name="T_layer_norm_dev")
        sq = te.compute(shape, lambda *i: dev[i] * dev[i], name="T_layer_norm_sq")
        var = _reduced_mean(sq, shape, axes, "T_layer_norm_var")

        def body(*i: Any) -> PrimExpr:
            value = dev[i] * T.rsqrt(var[_at_kept(i, axes)] + sop.const(eps, x.dtype))
            if scale:
                value = value * _param(gamma, i, axes)
            if center:
                value = value + _param(beta, i, axes)
            return value

        return te.compute(shape, body, name="T_layer_norm")

    return call_te(
        bb, kernel, *call.args[:3], primfunc_name_hint="layer_norm",
        op_pattern=OpPattern.OUT_EWISE_FUSABLE, op=op_name(call),
    )  # fmt: skip


@legalizes("relax.nn.rms_norm")
def legalize_rms_norm(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``x * rsqrt(mean(x * x) + eps) * weight`` over ``axes``."""
    shape = shape_of(tensor_arg(call, 0, "data"))
    tensor_arg(call, 1, "weight")
    axes = normalize_axes(call, attr(call, "axes", (-1,)), len(shape))
    eps = float(attr(call, "epsilon", 1e-5))

    def kernel(x: te.Tensor, weight: te.Tensor) -> te.Tensor:
        sq = te.compute(shape, lambda *i: x[i] * x[i], name="T_rms_norm_sq")
        ms = _reduced_mean(sq, shape, axes, "T_rms_norm")

        def body(*i: Any) -> PrimExpr:
            inv = T.rsqrt(ms[_at_kept(i, axes)] + sop.const(eps, x.dtype))
            return x[i] * inv * _param(weight, i, axes)

        return te.compute(shape, body, name="T_rms_norm")

    return call_te(
        bb, kernel, *call.args[:2], primfunc_name_hint="rms_norm",
        op_pattern=OpPattern.OUT_EWISE_FUSABLE, op=op_name(call),
    )  # fmt: skip


@legalizes("relax.nn.batch_norm")
def legalize_batch_norm(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """Inference: ``(x - moving_mean) / sqrt(moving_var + eps) * gamma + beta`` per channel."""
    shape = shape_of(tensor_arg(call, 0, "data"))
    for index, what in enumerate(("gamma", "beta", "moving_mean", "moving_var"), start=1):
        tensor_arg(call, index, what)
    (axis,) = normalize_axes(call, [attr(call, "axis", 1)], len(shape))
    eps = float(attr(call, "epsilon", 1e-5))

    def kernel(x: te.Tensor, *params: te.Tensor) -> te.Tensor:
        gamma, beta, mean, var = params

        def body(*i: Any) -> PrimExpr:
            c = i[axis]
            inv = T.rsqrt(var[c] + sop.const(eps, x.dtype))
            return (x[i] - mean[c]) * inv * gamma[c] + beta[c]

        return te.compute(shape, body, name="T_batch_norm")

    return call_te(
        bb, kernel, *call.args[:5], primfunc_name_hint="batch_norm",
        op_pattern=OpPattern.INJECTIVE, op=op_name(call),
    )  # fmt: skip


# ---- convolution and pooling --------------------------------------------------------------------
def _window(call: Call) -> tuple[tuple[int, int], tuple[int, int], tuple[int, ...]]:
    strides = tuple(attr(call, "strides", (1, 1)))
    dilation = tuple(attr(call, "dilation", (1, 1)))
    padding = tuple(attr(call, "padding", (0, 0, 0, 0)))
    return strides, dilation, padding  # type: ignore[return-value]


def _in_bounds(ih: PrimExpr, iw: PrimExpr, h: PrimExpr, w: PrimExpr) -> PrimExpr:
    return sop.logical_and(
        sop.logical_and(sop.greater_equal(ih, 0), sop.less(ih, h)),
        sop.logical_and(sop.greater_equal(iw, 0), sop.less(iw, w)),
    )


@legalizes("relax.nn.conv2d")
@in_any_layout(conv_layouts)
def legalize_conv2d(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """A zero-padding stage, then ``sum over (rc, ry, rx)`` of ``pad * weight`` per group."""
    d_shape = shape_of(tensor_arg(call, 0, "data"))
    w_shape = shape_of(tensor_arg(call, 1, "weight"))
    out = out_tensor_sinfo(call)
    out_shape, out_dtype = shape_of(out), out.dtype
    assert out_dtype is not None
    (sh, sw), (dh, dw), (top, left, bottom, right) = _window(call)
    groups = int(attr(call, "groups", 1))
    n, c, h, w = d_shape
    o, ci, kh, kw = w_shape
    out_per_group = sop.floordiv(o, groups)

    def kernel(data: te.Tensor, weight: te.Tensor) -> te.Tensor:
        src = data
        if top or left or bottom or right:
            padded = [n, c, h + top + bottom, w + left + right]

            def pad_body(b: Any, ch: Any, y: Any, x: Any) -> PrimExpr:
                ih, iw = sop.sub(y, top), sop.sub(x, left)
                zero = sop.const(0, data.dtype)
                return T.if_then_else(_in_bounds(ih, iw, h, w), data[b, ch, ih, iw], zero)

            src = te.compute(padded, pad_body, name="pad_temp")

        def body(b: Any, oc: Any, y: Any, x: Any) -> Any:
            rc = te.reduce_axis((0, ci), name="rc")
            ry = te.reduce_axis((0, kh), name="ry")
            rx = te.reduce_axis((0, kw), name="rx")
            ic = (
                rc if groups == 1 else sop.add(sop.mul(sop.floordiv(oc, out_per_group), ci), rc.var)
            )
            value = src[b, ic, y * sh + ry * dh, x * sw + rx * dw]
            return te.sum(
                cast_to(value, out_dtype) * cast_to(weight[oc, rc, ry, rx], out_dtype),
                axis=[rc, ry, rx],
            )

        return te.compute(out_shape, body, name="conv2d_nchw")

    return call_te(
        bb, kernel, call.args[0], call.args[1], primfunc_name_hint="conv2d",
        op_pattern=OpPattern.OUT_EWISE_FUSABLE, op=op_name(call),
    )  # fmt: skip


def _lowest(dtype: DataType) -> PrimExpr:
    if is_float_dtype(dtype):
        return sop.const(-math.inf, dtype)
    return sop.const(dtype_int_range(dtype)[0], dtype)


def _pool_setup(call: Call) -> tuple[list[PrimExpr], list[PrimExpr], Any, Any]:
    d_shape = shape_of(tensor_arg(call, 0, "data"))
    out_shape = shape_of(out_tensor_sinfo(call))
    kh, kw = attr(call, "pool_size", (1, 1))
    return d_shape, out_shape, (kh, kw), _window(call)


@legalizes("relax.nn.max_pool2d")
@in_any_layout(pool_layouts)
def legalize_max_pool2d(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """The maximum over each window; padding (and ceil_mode overhang) never wins."""
    d_shape, out_shape, (kh, kw), ((sh, sw), (dh, dw), pads) = _pool_setup(call)
    h, w = d_shape[2], d_shape[3]
    top, left = pads[0], pads[1]

    def kernel(data: te.Tensor) -> te.Tensor:
        def body(b: Any, ch: Any, y: Any, x: Any) -> Any:
            ry = te.reduce_axis((0, kh), name="ry")
            rx = te.reduce_axis((0, kw), name="rx")
            ih = sop.sub(sop.add(y * sh, ry * dh), top)
            iw = sop.sub(sop.add(x * sw, rx * dw), left)
            value = T.if_then_else(
                _in_bounds(ih, iw, h, w), data[b, ch, ih, iw], _lowest(data.dtype)
            )
            return te.max(value, axis=[ry, rx])

        return te.compute(out_shape, body, name="pool_max")

    return call_te(
        bb, kernel, call.args[0], primfunc_name_hint="max_pool2d",
        op_pattern=OpPattern.OUT_EWISE_FUSABLE, op=op_name(call),
    )  # fmt: skip


@legalizes("relax.nn.avg_pool2d")
@in_any_layout(pool_layouts)
def legalize_avg_pool2d(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """The mean over each window.

    With ``count_include_pad`` false (the default, as in TVM's op) the divisor counts only
    elements inside the data; when true it counts elements inside the padded data. Windows
    hanging past the padding in ``ceil_mode`` never count the overhang.
    """
    d_shape, out_shape, (kh, kw), ((sh, sw), (dh, dw), pads) = _pool_setup(call)
    h, w = d_shape[2], d_shape[3]
    top, left, bottom, right = pads
    include_pad = bool(attr(call, "count_include_pad", False))

    def kernel(data: te.Tensor) -> te.Tensor:
        zero = sop.const(0, data.dtype)

        def coords(y: Any, x: Any, ry: Any, rx: Any) -> tuple[PrimExpr, PrimExpr]:
            ih = sop.sub(sop.add(y * sh, ry * dh), top)
            iw = sop.sub(sop.add(x * sw, rx * dw), left)
            return ih, iw

        def sum_body(b: Any, ch: Any, y: Any, x: Any) -> Any:
            ry = te.reduce_axis((0, kh), name="ry")
            rx = te.reduce_axis((0, kw), name="rx")
            ih, iw = coords(y, x, ry, rx)
            value = T.if_then_else(_in_bounds(ih, iw, h, w), data[b, ch, ih, iw], zero)
            return te.sum(value, axis=[ry, rx])

        total = te.compute(out_shape, sum_body, name="pool_sum")

        def count_body(y: Any, x: Any) -> Any:
            ry = te.reduce_axis((0, kh), name="ry")
            rx = te.reduce_axis((0, kw), name="rx")
            ih, iw = coords(y, x, ry, rx)
            if include_pad:
                inside = _in_bounds(
                    sop.add(ih, top), sop.add(iw, left), h + top + bottom, w + left + right
                )
            else:
                inside = _in_bounds(ih, iw, h, w)
            return te.sum(cast(inside, "int64"), axis=[ry, rx])

        count = te.compute(out_shape[2:], count_body, name="pool_count")

        def avg(b: Any, ch: Any, y: Any, x: Any) -> PrimExpr:
            n = sop.max_expr(count[y, x], 1)
            if is_float_dtype(data.dtype):
                return total[b, ch, y, x] / cast(n, data.dtype)
            return sop.floordiv(total[b, ch, y, x], cast(n, data.dtype))

        return te.compute(out_shape, avg, name="pool_avg")

    return call_te(
        bb, kernel, call.args[0], primfunc_name_hint="avg_pool2d",
        op_pattern=OpPattern.OUT_EWISE_FUSABLE, op=op_name(call),
    )  # fmt: skip


@legalizes("relax.nn.adaptive_avg_pool2d")
@in_any_layout(pool_layouts)
def legalize_adaptive_avg_pool2d(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """Output cell ``(i, j)`` averages rows ``[i*H//OH, ceil((i+1)*H/OH))`` and the same for
    columns (windows of varying size, as PyTorch and TVM define them)."""
    d_shape = shape_of(tensor_arg(call, 0, "data"))
    out_shape = shape_of(out_tensor_sinfo(call))
    h, w = d_shape[2], d_shape[3]
    oh, ow = out_shape[2], out_shape[3]

    def start(i: Any, size: PrimExpr, out: PrimExpr) -> PrimExpr:
        return sop.floordiv(sop.mul(i, size), out)

    def end(i: Any, size: PrimExpr, out: PrimExpr) -> PrimExpr:
        return sop.floordiv(sop.add(sop.mul(sop.add(i, 1), size), sop.sub(out, 1)), out)

    def kernel(data: te.Tensor) -> te.Tensor:
        def sum_body(b: Any, ch: Any, y: Any, x: Any) -> Any:
            y0, x0 = start(y, h, oh), start(x, w, ow)
            ry = te.reduce_axis((0, sop.sub(end(y, h, oh), y0)), name="ry")
            rx = te.reduce_axis((0, sop.sub(end(x, w, ow), x0)), name="rx")
            return te.sum(data[b, ch, sop.add(y0, ry.var), sop.add(x0, rx.var)], axis=[ry, rx])

        total = te.compute(out_shape, sum_body, name="adaptive_pool_sum")

        def avg(b: Any, ch: Any, y: Any, x: Any) -> PrimExpr:
            rows = sop.sub(end(y, h, oh), start(y, h, oh))
            cols = sop.sub(end(x, w, ow), start(x, w, ow))
            count = sop.mul(rows, cols)
            if is_float_dtype(data.dtype):
                return total[b, ch, y, x] / cast(count, data.dtype)
            return sop.floordiv(total[b, ch, y, x], cast(count, data.dtype))

        return te.compute(out_shape, avg, name="adaptive_pool_avg")

    return call_te(
        bb, kernel, call.args[0], primfunc_name_hint="adaptive_avg_pool2d",
        op_pattern=OpPattern.OUT_EWISE_FUSABLE, op=op_name(call),
    )  # fmt: skip
