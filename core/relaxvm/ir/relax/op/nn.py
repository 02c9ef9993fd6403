"""Neural-network ops (``relax.nn.*``): activations, softmax, normalizations, conv2d and
2-d pooling. Spatial ops take NCHW data and OIHW kernels, or any layout :mod:`.nn_layout`
accepts (``NHWC``, ``NCHW4c``, ``OIHW4i4o``...)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ....runtime.dtype import DataType, DataTypeCode
from ...expr import IntImm, PrimExpr
from ...op import add, floordiv, mul, sub
from .._base import RelaxExpr
from ..expr import Call
from ..struct_info import StructInfo, TensorStructInfo
from ._common import (
    as_axes,
    as_int,
    as_int_tuple,
    dims_text,
    dtype_attr,
    make_call,
    normalize_axes,
    normalize_axis,
    prove_equal,
    prove_not_equal,
    same_shape,
    tensor,
    unify_dtypes,
)
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

ACTIVATIONS = ("relu", "gelu", "silu")


def _require_float(ctx: InferContext, info: TensorStructInfo, what: str) -> None:
    if info.dtype is not None and info.dtype.code not in (DataTypeCode.FLOAT, DataTypeCode.BFLOAT):
        raise ctx.type_error(f"{what} must have a float dtype, got {info.dtype}")


def _infer_activation(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "data")
    if not ctx.op_name.endswith("relu"):
        _require_float(ctx, info, "data")
    return same_shape(info, info.dtype)


def _infer_softmax(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "data")
    _require_float(ctx, info, "data")
    if info.ndim != -1:
        if info.ndim == 0:
            raise ctx.error("data must have rank >= 1, got a 0-d tensor")
        normalize_axis(ctx, ctx.attr(call, "axis", -1), info.ndim)
    return same_shape(info, info.dtype)


def _check_param(
    ctx: InferContext, data: TensorStructInfo, param: TensorStructInfo, axes: list[int], what: str
) -> None:
    """A scale/shift parameter must have the extents of ``data`` at ``axes``."""
    if param.ndim not in (-1, len(axes)):
        raise ctx.error(
            f"{what} must have rank {len(axes)} (the normalized axes {axes} of data with shape "
            f"{dims_text(data)}), got shape {dims_text(param)}"
        )
    values, param_values = data.shape_values, param.shape_values
    if values is None or param_values is None:
        return
    for position, axis in enumerate(axes):
        a, b = values[axis], param_values[position]
        if not prove_equal(ctx, a, b) and prove_not_equal(ctx, a, b):
            raise ctx.error(
                f"{what} with shape {dims_text(param)} does not match data with shape "
                f"{dims_text(data)} at axis {axis}: {b} vs {a}"
            )


def _infer_norm(
    call: Call, ctx: InferContext, names: Sequence[str], default_axes: Any
) -> StructInfo:
    data = ctx.tensor_arg(call, 0, "data")
    params = [ctx.tensor_arg(call, i + 1, name) for i, name in enumerate(names)]
    _require_float(ctx, data, "data")
    dtype = unify_dtypes(ctx, [data, *params], "data and " + " and ".join(names))
    if data.ndim != -1:
        axes = ctx.attr(call, "axes", default_axes)
        normalized = normalize_axes(ctx, axes, data.ndim)
        for name, param in zip(names, params, strict=False):
            _check_param(ctx, data, param, normalized, name)
    return same_shape(data, dtype)


def _infer_layer_norm(call: Call, ctx: InferContext) -> StructInfo:
    return _infer_norm(call, ctx, ("gamma", "beta"), (-1,))


def _infer_rms_norm(call: Call, ctx: InferContext) -> StructInfo:
    return _infer_norm(call, ctx, ("weight",), (-1,))


def _infer_batch_norm(call: Call, ctx: InferContext) -> StructInfo:
    data = ctx.tensor_arg(call, 0, "data")
    names = ("gamma", "beta", "moving_mean", "moving_var")
    params = [ctx.tensor_arg(call, i + 1, name) for i, name in enumerate(names)]
    _require_float(ctx, data, "data")
    dtype = unify_dtypes(ctx, [data, *params], "data and its parameters")
    if data.ndim != -1:
        axis = normalize_axis(ctx, ctx.attr(call, "axis", 1), data.ndim)
        for name, param in zip(names, params, strict=False):
            _check_param(ctx, data, param, [axis], name)
    return same_shape(data, dtype)


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


def _infer_adaptive_pool(call: Call, ctx: InferContext) -> StructInfo:
    data = ctx.tensor_arg(call, 0, "data")
    d_perm, out_perm = pool_perms(call, ctx, 2)
    check_ndim(ctx, data, "data", d_perm, "NCHW")
    output_size = ctx.attr(call, "output_size")
    d = data.shape_values
    if d is None:
        return tensor(None, data.dtype, layout_ndim(out_perm, "NCHW"), like=data)
    d = tuple(to_canonical(d, d_perm))
    size = d[2:] if output_size is None else [IntImm(output_size[0]), IntImm(output_size[1])]
    return tensor(from_canonical([d[0], d[1], *size], out_perm), data.dtype, like=data)


for _name in ACTIVATIONS:
    register_op(f"relax.nn.{_name}", num_inputs=1, infer=_infer_activation, doc=_name)
for _name in ("softmax", "log_softmax"):
    register_op(
        f"relax.nn.{_name}",
        num_inputs=1,
        infer=_infer_softmax,
        attrs={"axis": "the normalized axis"},
        doc=_name,
    )
register_op(
    "relax.nn.layer_norm",
    num_inputs=3,
    infer=_infer_layer_norm,
    attrs={
        "axes": "normalized axes",
        "epsilon": "variance floor",
        "center": "use beta",
        "scale": "use gamma",
    },
    doc="layer normalization",
)
register_op(
    "relax.nn.rms_norm",
    num_inputs=2,
    infer=_infer_rms_norm,
    attrs={"axes": "normalized axes", "epsilon": "floor"},
    doc="RMS normalization",
)
register_op(
    "relax.nn.batch_norm",
    num_inputs=5,
    infer=_infer_batch_norm,
    attrs={"axis": "channel axis", "epsilon": "variance floor"},
    doc="inference-mode batch normalization; returns only the normalized tensor",
)
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


def relu(data: RelaxExpr) -> Call:
    """``max(data, 0)``."""
    return make_call("relax.nn.relu", [data])


def gelu(data: RelaxExpr) -> Call:
    """Gaussian error linear unit (float tensors)."""
    return make_call("relax.nn.gelu", [data])


def silu(data: RelaxExpr) -> Call:
    """``data * sigmoid(data)`` (float tensors)."""
    return make_call("relax.nn.silu", [data])


def softmax(data: RelaxExpr, axis: int = -1) -> Call:
    """Softmax along ``axis``."""
    return make_call("relax.nn.softmax", [data], {"axis": as_int("relax.nn.softmax", "axis", axis)})


def log_softmax(data: RelaxExpr, axis: int = -1) -> Call:
    """Logarithm of the softmax along ``axis``."""
    name = "relax.nn.log_softmax"
    return make_call(name, [data], {"axis": as_int(name, "axis", axis)})


def layer_norm(
    data: RelaxExpr,
    gamma: RelaxExpr,
    beta: RelaxExpr,
    axes: int | Sequence[int],
    epsilon: float = 1e-5,
    center: bool = True,
    scale: bool = True,
) -> Call:
    """Normalize over ``axes``, then scale by ``gamma`` and shift by ``beta``."""
    name = "relax.nn.layer_norm"
    attrs = {
        "axes": as_axes(name, axes),
        "epsilon": float(epsilon),
        "center": center,
        "scale": scale,
    }
    return make_call(name, [data, gamma, beta], attrs)


def rms_norm(
    data: RelaxExpr, weight: RelaxExpr, axes: int | Sequence[int] = -1, epsilon: float = 1e-5
) -> Call:
    """``data / sqrt(mean(data**2, axes) + epsilon) * weight``."""
    name = "relax.nn.rms_norm"
    return make_call(name, [data, weight], {"axes": as_axes(name, axes), "epsilon": float(epsilon)})


def batch_norm(
    data: RelaxExpr,
    gamma: RelaxExpr,
    beta: RelaxExpr,
    moving_mean: RelaxExpr,
    moving_var: RelaxExpr,
    axis: int = 1,
    epsilon: float = 1e-5,
) -> Call:
    """Inference-mode batch norm with the moving statistics.

    TVM's op returns a 3-tuple (normalized, new mean, new var) for training; ours returns
    only the normalized tensor, which is all an inference graph uses.
    """
    name = "relax.nn.batch_norm"
    attrs = {"axis": as_int(name, "axis", axis), "epsilon": float(epsilon)}
    return make_call(name, [data, gamma, beta, moving_mean, moving_var], attrs)


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


# The parameterised activations, dropout, pad and the channel norms live in their own modules
# (size); their
# builders are part of this namespace, as in TVM's relax.op.nn.
from .nn_attention import *  # noqa: E402, F403
from .nn_attention import __all__ as _attention_all  # noqa: E402
from .nn_conv import *  # noqa: E402, F403
from .nn_conv import __all__ as _conv_all  # noqa: E402
from .nn_conv3d import *  # noqa: E402, F403
from .nn_conv3d import __all__ as _conv3d_all  # noqa: E402
from .nn_conv_transpose import *  # noqa: E402, F403
from .nn_conv_transpose import __all__ as _conv_transpose_all  # noqa: E402
from .nn_extra import *  # noqa: E402, F403
from .nn_extra import __all__ as _extra_all  # noqa: E402
from .nn_loss import *  # noqa: E402, F403
from .nn_loss import __all__ as _loss_all  # noqa: E402
from .nn_norm import *  # noqa: E402, F403
from .nn_norm import __all__ as _norm_all  # noqa: E402

__all__ = [
    *_attention_all,
    *_conv_all,
    *_conv_transpose_all,
    *_conv3d_all,
    *_extra_all,
    *_loss_all,
    *_norm_all,
    "adaptive_avg_pool2d",
    "avg_pool2d",
    "batch_norm",
    "conv2d",
    "gelu",
    "layer_norm",
    "log_softmax",
    "max_pool2d",
    "relu",
    "rms_norm",
    "silu",
    "softmax",
]
