"""Channel-wise normalizations (``relax.nn.group_norm``, ``relax.nn.instance_norm``).

Signatures, attributes and checks follow TVM's ``relax.op.nn``: statistics are taken over
``axes`` (and, for group_norm, over the channels of one group), and ``gamma``/``beta`` are
1-d with one entry per channel. :mod:`.nn` re-exports the builders.
"""

from __future__ import annotations

from collections.abc import Sequence

from ....runtime.dtype import DataTypeCode
from ...expr import IntImm
from .._base import RelaxExpr
from ..expr import Call
from ..struct_info import StructInfo
from ._common import (
    as_int,
    as_int_tuple,
    dims_text,
    make_call,
    normalize_axes,
    normalize_axis,
    prove_equal,
    prove_not_equal,
    same_shape,
)
from .registry import InferContext, OpError, register_op


def _infer_channel_norm(call: Call, ctx: InferContext) -> StructInfo:
    data = ctx.tensor_arg(call, 0, "data")
    params = [ctx.tensor_arg(call, 1, "gamma"), ctx.tensor_arg(call, 2, "beta")]
    if data.dtype is not None and data.dtype.code not in (DataTypeCode.FLOAT, DataTypeCode.BFLOAT):
        raise ctx.type_error(f"data must have a float dtype, got {data.dtype}")
    channels = None
    if data.ndim != -1:
        channel_axis = normalize_axis(
            ctx, ctx.attr(call, "channel_axis"), data.ndim, "channel_axis"
        )
        axes = normalize_axes(ctx, ctx.attr(call, "axes", ()), data.ndim)
        if channel_axis in axes:
            raise ctx.error(
                f"channel_axis {channel_axis} must not be one of the normalized axes {axes}"
            )
        if data.shape_values is not None:
            channels = data.shape_values[channel_axis]
    num_groups = ctx.attr(call, "num_groups")
    if num_groups is not None and isinstance(channels, IntImm) and channels.value % num_groups:
        raise ctx.error(
            f"the {channels} channels of data with shape {dims_text(data)} do not split into "
            f"num_groups={num_groups} groups"
        )
    for name, param in zip(("gamma", "beta"), params, strict=True):
        if data.dtype is not None and param.dtype is not None and param.dtype != data.dtype:
            raise ctx.error(f"{name} must have data's dtype {data.dtype}, got {param.dtype}")
        if param.ndim not in (-1, 1):
            raise ctx.error(f"{name} must be a 1-d tensor, got shape {dims_text(param)}")
        values = param.shape_values
        if channels is None or values is None:
            continue
        if not prove_equal(ctx, channels, values[0]) and prove_not_equal(ctx, channels, values[0]):
            raise ctx.error(
                f"{name} with shape {dims_text(param)} must have one entry per channel: data "
                f"with shape {dims_text(data)} has {channels}"
            )
    return same_shape(data, data.dtype)


_ATTRS = {
    "channel_axis": "the channel axis",
    "axes": "the normalized axes besides the channels",
    "epsilon": "variance floor",
    "center": "add beta",
    "scale": "multiply by gamma",
}
register_op(
    "relax.nn.group_norm",
    num_inputs=3,
    infer=_infer_channel_norm,
    attrs={"num_groups": "channel groups", **_ATTRS},
    doc="group normalization",
)
register_op(
    "relax.nn.instance_norm",
    num_inputs=3,
    infer=_infer_channel_norm,
    attrs=_ATTRS,
    doc="instance normalization",
)


def _norm_attrs(
    name: str,
    channel_axis: int,
    axes: int | Sequence[int],
    epsilon: float,
    center: bool,
    scale: bool,
) -> dict[str, object]:
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)):
        raise OpError(f"{name}: epsilon must be a number, got {epsilon!r}")
    return {
        "channel_axis": as_int(name, "channel_axis", channel_axis),
        "axes": as_int_tuple(name, "axes", axes),
        "epsilon": float(epsilon),
        "center": bool(center),
        "scale": bool(scale),
    }


def group_norm(
    data: RelaxExpr,
    gamma: RelaxExpr,
    beta: RelaxExpr,
    num_groups: int,
    channel_axis: int,
    axes: int | Sequence[int],
    epsilon: float = 1e-5,
    center: bool = True,
    scale: bool = True,
) -> Call:
    """Group normalization: split the channels into ``num_groups`` groups and normalize each
    group over its channels and ``axes``.

    Parameters
    ----------
    data : RelaxExpr
        A float tensor.
    gamma, beta : RelaxExpr
        1-d scale and shift, one entry per channel.
    num_groups : int
        The number of groups; it must divide the channel extent.
    channel_axis : int
        The channel axis of ``data``.
    axes : int or sequence of int
        The other axes the statistics run over (not ``channel_axis``).
    epsilon : float
        Added to the variance before the square root.
    center, scale : bool
        Whether to add ``beta`` and multiply by ``gamma``.

    Returns
    -------
    Call
        ``(x - mean) / sqrt(var + epsilon) * gamma[c] + beta[c]``, shaped like ``data``.
    """
    name = "relax.nn.group_norm"
    groups = as_int(name, "num_groups", num_groups)
    if groups < 1:
        raise OpError(f"{name}: num_groups must be >= 1, got {groups}")
    attrs = {"num_groups": groups, **_norm_attrs(name, channel_axis, axes, epsilon, center, scale)}
    return make_call(name, [data, gamma, beta], attrs)


def instance_norm(
    data: RelaxExpr,
    gamma: RelaxExpr,
    beta: RelaxExpr,
    channel_axis: int,
    axes: int | Sequence[int],
    epsilon: float = 1e-5,
    center: bool = True,
    scale: bool = True,
) -> Call:
    """Instance normalization: normalize every channel of every instance over ``axes``.

    Parameters
    ----------
    data : RelaxExpr
        A float tensor.
    gamma, beta : RelaxExpr
        1-d scale and shift, one entry per channel.
    channel_axis : int
        The channel axis of ``data``.
    axes : int or sequence of int
        The axes the statistics run over (not ``channel_axis``).
    epsilon : float
        Added to the variance before the square root.
    center, scale : bool
        Whether to add ``beta`` and multiply by ``gamma``.

    Returns
    -------
    Call
        ``(x - mean) / sqrt(var + epsilon) * gamma[c] + beta[c]``, shaped like ``data``.
    """
    name = "relax.nn.instance_norm"
    attrs = _norm_attrs(name, channel_axis, axes, epsilon, center, scale)
    return make_call(name, [data, gamma, beta], attrs)


__all__ = ["group_norm", "instance_norm"]
