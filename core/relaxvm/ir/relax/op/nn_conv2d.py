"""2-d convolution and pooling (``relax.nn.conv2d``, ``max_pool2d``, ``avg_pool2d``,
``adaptive_avg_pool2d``): NCHW data and OIHW kernels, or any layout :mod:`.nn_layout` accepts
(``NHWC``, ``NCHW4c``, ``OIHW4i4o``...). The builders are part of :mod:`.nn`'s namespace, as
in TVM's ``relax.op.nn``; 1-d and 3-d are in :mod:`.nn_conv` and :mod:`.nn_conv3d`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ....runtime.dtype import DataType
from ...expr import IntImm, PrimExpr
from ...op import add, floordiv, mul, sub
from .._base import RelaxExpr
from ..expr import Call
from ..struct_info import StructInfo
from ._common import (
    as_int,
    as_int_tuple,
    dims_text,
    dtype_attr,
    make_call,
    prove_equal,
    prove_not_equal,
    tensor,
    unify_dtypes,
)
from .nn_conv import _infer_adaptive_pool  # the rank-general rule of every adaptive pool
from .nn_layout import (
    check_ndim,
    conv_layout_attrs,
    conv_perms,
    from_canonical,
    layout_ndim,
    pool_layout_attrs,
    pool_perms,
    to_canonical,
)
from .registry import InferContext, OpError, register_op

__all__ = ["adaptive_avg_pool2d", "avg_pool2d", "conv2d", "max_pool2d"]


def _conv_out(
    size: PrimExpr, kernel: PrimExpr, pad: int, stride: int, dilation: int, ceil_mode: bool = False
) -> PrimExpr:
    """Output extent ``(size + pad - dilation * (kernel - 1) - 1 [+ stride - 1]) // stride + 1``."""
    numer = sub(sub(add(size, pad), mul(dilation, sub(kernel, 1))), 1)
    if ceil_mode:
        numer = add(numer, stride - 1)
    return add(floordiv(numer, stride), 1)


def _padding4(name: str, padding: Any) -> tuple[int, int, int, int]:
    """Padding as (top, left, bottom, right) from 1, 2 or 4 ints (TVM's convention)."""
    pads = as_int_tuple(name, "padding", padding)
    if len(pads) == 1:
        return (pads[0],) * 4  # type: ignore[return-value]
    if len(pads) == 2:
        return (pads[0], pads[1], pads[0], pads[1])
    if len(pads) == 4:
        return pads  # type: ignore[return-value]
    raise OpError(f"{name}: padding must have 1, 2 or 4 entries, got {list(pads)}")


def _pair(name: str, param: str, value: Any) -> tuple[int, int]:
    values = as_int_tuple(name, param, value, 2)
    if len(values) == 1:
        values = values * 2
    if len(values) != 2:
        raise OpError(f"{name}: {param} must have 1 or 2 entries, got {list(values)}")
    if any(v < 1 for v in values) and param != "output_size":
        raise OpError(f"{name}: {param} entries must be >= 1, got {list(values)}")
    return values  # type: ignore[return-value]


def _infer_conv2d(call: Call, ctx: InferContext) -> StructInfo:
    data = ctx.tensor_arg(call, 0, "data")
    weight = ctx.tensor_arg(call, 1, "weight")
    d_perm, w_perm, out_perm = conv_perms(call, ctx, 2)
    check_ndim(ctx, data, "data", d_perm, "NCHW")
    check_ndim(ctx, weight, "weight", w_perm, "OIHW")
    out_dtype = ctx.attr(call, "out_dtype")
    dtype = DataType(out_dtype) if out_dtype else unify_dtypes(ctx, [data, weight])
    d, w = data.shape_values, weight.shape_values
    if d is None or w is None:
        return tensor(None, dtype, layout_ndim(out_perm, "NCHW"), like=data)
    d, w = tuple(to_canonical(d, d_perm)), tuple(to_canonical(w, w_perm))
    groups = ctx.attr(call, "groups", 1)
    expected_in = ctx.analyzer.simplify(mul(w[1], groups))
    if not prove_equal(ctx, d[1], expected_in) and prove_not_equal(ctx, d[1], expected_in):
        raise ctx.error(
            f"data with shape {dims_text(data)} has {d[1]} input channels but weight with shape "
            f"{dims_text(weight)} expects {w[1]} x groups={groups} = {expected_in}"
        )
    if isinstance(w[0], IntImm) and w[0].value % groups:
        raise ctx.error(
            f"weight with shape {dims_text(weight)} has {w[0]} output channels, not a multiple "
            f"of groups={groups}"
        )
    top, left, bottom, right = ctx.attr(call, "padding", (0, 0, 0, 0))
    sh, sw = ctx.attr(call, "strides", (1, 1))
    dh, dw = ctx.attr(call, "dilation", (1, 1))
    out_h = ctx.analyzer.simplify(_conv_out(d[2], w[2], top + bottom, sh, dh))
    out_w = ctx.analyzer.simplify(_conv_out(d[3], w[3], left + right, sw, dw))
    for extent, axis in ((out_h, "height"), (out_w, "width")):
        if isinstance(extent, IntImm) and extent.value < 1:
            raise ctx.error(
                f"the kernel with shape {dims_text(weight)} does not fit data with shape "
                f"{dims_text(data)}: the output {axis} would be {extent}"
            )
    return tensor(from_canonical([d[0], w[0], out_h, out_w], out_perm), dtype, like=data)


def _infer_pool2d(call: Call, ctx: InferContext) -> StructInfo:
    data = ctx.tensor_arg(call, 0, "data")
    d_perm, out_perm = pool_perms(call, ctx, 2)
    check_ndim(ctx, data, "data", d_perm, "NCHW")
    d = data.shape_values
    if d is None:
        return tensor(None, data.dtype, layout_ndim(out_perm, "NCHW"), like=data)
    d = tuple(to_canonical(d, d_perm))
    kh, kw = ctx.attr(call, "pool_size", (1, 1))
    sh, sw = ctx.attr(call, "strides", (1, 1))
    dh, dw = ctx.attr(call, "dilation", (1, 1))
    top, left, bottom, right = ctx.attr(call, "padding", (0, 0, 0, 0))
    ceil_mode = ctx.attr(call, "ceil_mode", False)
    out_h = ctx.analyzer.simplify(_conv_out(d[2], IntImm(kh), top + bottom, sh, dh, ceil_mode))
    out_w = ctx.analyzer.simplify(_conv_out(d[3], IntImm(kw), left + right, sw, dw, ceil_mode))
    for extent, axis in ((out_h, "height"), (out_w, "width")):
        if isinstance(extent, IntImm) and extent.value < 1:
            raise ctx.error(
                f"pool_size ({kh}, {kw}) does not fit data with shape {dims_text(data)}: the "
                f"output {axis} would be {extent}"
            )
    return tensor(from_canonical([d[0], d[1], out_h, out_w], out_perm), data.dtype, like=data)


_SPATIAL_ATTRS = {
    "strides": "(h, w)",
    "padding": "(top, left, bottom, right)",
    "dilation": "(h, w)",
}
_POOL_LAYOUT_ATTRS = {
    "layout": "data axes (a permutation of NCHW; stored when not NCHW)",
    "out_layout": "result axes (default: layout; stored when not NCHW)",
}
register_op(
    "relax.nn.conv2d",
    num_inputs=2,
    infer=_infer_conv2d,
    attrs={
        **_SPATIAL_ATTRS,
        "groups": "channel groups",
        "out_dtype": "result dtype",
        "data_layout": "data axes (a permutation of NCHW; stored when not NCHW)",
        "kernel_layout": "weight axes (a permutation of OIHW; stored when not OIHW)",
        "out_layout": "result axes (default: data_layout; stored when not NCHW)",
    },
    doc="2-d convolution (NCHW data and OIHW weight, or permutations of those axes)",
)
for _name in ("max_pool2d", "avg_pool2d"):
    register_op(
        f"relax.nn.{_name}",
        num_inputs=1,
        infer=_infer_pool2d,
        attrs={
            **_SPATIAL_ATTRS,
            "pool_size": "(h, w)",
            "ceil_mode": "round the output up",
            "count_include_pad": "average over the padded window (avg_pool2d)",
            **_POOL_LAYOUT_ATTRS,
        },
        doc=f"2-d {_name[:3]} pooling (NCHW, or a permutation of those axes)",
    )
register_op(
    "relax.nn.adaptive_avg_pool2d",
    num_inputs=1,
    infer=_infer_adaptive_pool,
    attrs={"output_size": "(h, w); None keeps the input size", **_POOL_LAYOUT_ATTRS},
    doc="adaptive average pooling",
)


def conv2d(
    data: RelaxExpr,
    weight: RelaxExpr,
    strides: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
    data_layout: str = "NCHW",
    kernel_layout: str = "OIHW",
    out_layout: str | None = None,
    out_dtype: str | DataType | None = None,
) -> Call:
    """2-d convolution of ``data`` with ``weight``: NCHW and OIHW, or any permutation of
    those axes (``data_layout="NHWC"``, ``kernel_layout="HWIO"``); the result is in
    ``out_layout`` (default: ``data_layout``)."""
    name = "relax.nn.conv2d"
    layouts = conv_layout_attrs(name, 2, data_layout, kernel_layout, out_layout)
    groups = as_int(name, "groups", groups)
    if groups < 1:
        raise OpError(f"{name}: groups must be >= 1, got {groups}")
    attrs = {
        "strides": _pair(name, "strides", strides),
        "padding": _padding4(name, padding),
        "dilation": _pair(name, "dilation", dilation),
        "groups": groups,
        "out_dtype": dtype_attr(name, out_dtype),
        **layouts,
    }
    return make_call(name, [data, weight], attrs)


def _pool(
    name: str,
    data: RelaxExpr,
    pool_size: Any,
    strides: Any,
    padding: Any,
    dilation: Any,
    ceil_mode: bool,
    count_include_pad: bool,
    layout: str,
    out_layout: str | None,
) -> Call:
    layouts = pool_layout_attrs(name, 2, layout, out_layout)
    attrs = {
        "pool_size": _pair(name, "pool_size", pool_size),
        "strides": _pair(name, "strides", strides),
        "padding": _padding4(name, padding),
        "dilation": _pair(name, "dilation", dilation),
        "ceil_mode": bool(ceil_mode),
        "count_include_pad": bool(count_include_pad),
        **layouts,
    }
    return make_call(name, [data], attrs)


def max_pool2d(
    data: RelaxExpr,
    pool_size: int | Sequence[int] = 1,
    strides: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    ceil_mode: bool = False,
    count_include_pad: bool = False,
    layout: str = "NCHW",
    out_layout: str | None = None,
) -> Call:
    """2-d max pooling over NCHW ``data`` (``count_include_pad`` is recorded, as in TVM, and
    has no effect on a maximum)."""
    return _pool(
        "relax.nn.max_pool2d", data, pool_size, strides, padding, dilation, ceil_mode,
        count_include_pad, layout, out_layout,
    )  # fmt: skip


def avg_pool2d(
    data: RelaxExpr,
    pool_size: int | Sequence[int] = 1,
    strides: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    ceil_mode: bool = False,
    count_include_pad: bool = False,
    layout: str = "NCHW",
    out_layout: str | None = None,
) -> Call:
    """2-d average pooling over NCHW ``data``; with ``count_include_pad`` the divisor counts
    the padding inside the window too (never the ``ceil_mode`` overhang)."""
    return _pool(
        "relax.nn.avg_pool2d", data, pool_size, strides, padding, dilation, ceil_mode,
        count_include_pad, layout, out_layout,
    )  # fmt: skip


def adaptive_avg_pool2d(
    data: RelaxExpr,
    output_size: int | Sequence[int] | None = None,
    layout: str = "NCHW",
    out_layout: str | None = None,
) -> Call:
    """Average pooling to a fixed ``output_size`` (the input size when None); NCHW ``data``
    or a permutation of those axes (``layout``), the result in ``out_layout`` (default:
    ``layout``)."""
    name = "relax.nn.adaptive_avg_pool2d"
    layouts = pool_layout_attrs(name, 2, layout, out_layout)
    size = None if output_size is None else _pair(name, "output_size", output_size)
    if size is not None and any(v < 1 for v in size):
        raise OpError(f"{name}: output_size entries must be >= 1, got {list(size)}")
    return make_call(name, [data], {"output_size": size, **layouts})
