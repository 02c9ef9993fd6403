"""ONNX converters: normalizations (BatchNormalization, InstanceNormalization,
LayerNormalization, GroupNormalization, LpNormalization, MeanVarianceNormalization, LRN)."""

from __future__ import annotations

from typing import Any

from ...ir import tir
from ...ir.relax import op
from ._context import Context, Node
from ._registry import converter
from .ops_nn import float_dtype, normal_axis, scalar

#: ONNX TensorProto element type codes of the stash types LayerNormalization allows.
_STASH_TYPES = {1: "float32", 10: "float16", 11: "float64", 16: "bfloat16"}


def _extra_outputs(node: Node, first: int) -> bool:
    return any(name for name in node.output_names[first:])


# ---- BatchNormalization -----------------------------------------------------------------------
def _check_batch_norm(node: Node) -> str | None:
    if node.attr("training_mode", 0):
        return "training_mode=1 is not supported; inference only"
    if node.opset < 7 and node.attr("is_test", 0) == 0:
        return "is_test=0 (training mode) is not supported; inference only"
    if node.opset < 9 and node.attr("spatial", 1) == 0:
        return "spatial=0 (per-element statistics) is not supported"
    if _extra_outputs(node, 1):
        return "the running/saved mean and variance outputs exist only in training mode"
    return None


@converter("BatchNormalization", since=1, check=_check_batch_norm)
def batch_norm(ctx: Context, node: Node) -> Any:
    """Inference with the given mean/var; training_mode=1 and the extra outputs refused."""
    x = node.input(0)
    ctx.require_ndim(node, x, "input X")
    eps = float(node.attr("epsilon", 1e-5))
    scale, bias, mean, var = (node.input(i) for i in range(1, 5))
    return op.nn.batch_norm(x, scale, bias, mean, var, axis=1, epsilon=eps)


# ---- InstanceNormalization --------------------------------------------------------------------
@converter("InstanceNormalization", since=1)
def instance_norm(ctx: Context, node: Node) -> Any:
    """Per instance and channel over the spatial axes, with scale and bias per channel."""
    x = node.input(0)
    rank = ctx.require_ndim(node, x, "input")
    if rank < 3:
        raise node.unsupported(f"input has rank {rank}; it needs N, C and spatial axes")
    eps = float(node.attr("epsilon", 1e-5))
    return op.nn.instance_norm(
        x, node.input(1), node.input(2), channel_axis=1, axes=list(range(2, rank)), epsilon=eps
    )


# ---- LayerNormalization -----------------------------------------------------------------------
def _check_layer_norm(node: Node) -> str | None:
    stash = int(node.attr("stash_type", 1))
    if stash not in _STASH_TYPES:
        return f"stash_type={stash} is not a float type"
    return None


@converter("LayerNormalization", since=17, check=_check_layer_norm)
def layer_norm(ctx: Context, node: Node) -> Any:
    """Over axes [axis, rank); scale/bias broadcast; Mean and InvStdDev outputs computed."""
    x = node.input(0)
    rank = ctx.require_ndim(node, x, "input X")
    dtype = float_dtype(ctx, node, x, "input X")
    axis = normal_axis(node, int(node.attr("axis", -1)), rank)
    axes = list(range(axis, rank))
    eps = float(node.attr("epsilon", 1e-5))
    scale, bias = node.input(1), node.optional_input(2)
    stash = _STASH_TYPES[int(node.attr("stash_type", 1))]
    static = ctx.static_shape(x)
    norm_shape = None if static is None else static[axis:]
    fits = (
        norm_shape is not None
        and ctx.static_shape(scale) == norm_shape
        and (bias is None or ctx.static_shape(bias) == norm_shape)
        and stash == dtype
    )
    if fits and not _extra_outputs(node, 1):
        beta = bias if bias is not None else op.zeros_like(scale)
        return op.nn.layer_norm(x, scale, beta, axes, eps, center=bias is not None)
    # The general form: statistics in the stash type, broadcast scale/bias.
    xs = ctx.emit(op.astype(x, stash)) if stash != dtype else x
    mean = ctx.emit(op.mean(xs, axes, keepdims=True))
    diff = ctx.emit(op.subtract(xs, mean))
    var = ctx.emit(op.mean(op.multiply(diff, diff), axes, keepdims=True))
    inv_std = ctx.emit(op.rsqrt(op.add(var, scalar(eps, stash))))
    normed = ctx.emit(op.multiply(diff, inv_std))
    if stash != dtype:
        normed = ctx.emit(op.astype(normed, dtype))
    y = op.multiply(normed, scale)
    if bias is not None:
        y = op.add(ctx.emit(y), bias)
    return [y, mean, inv_std][: max(1, len(node.output_names))]


# ---- GroupNormalization -----------------------------------------------------------------------
def _check_group_norm(node: Node) -> str | None:
    if node.opset >= 21 and int(node.attr("stash_type", 1)) != 1:
        return f"stash_type={node.attr('stash_type')} is not supported (only 1, float32)"
    return None


@converter("GroupNormalization", since=18, check=_check_group_norm)
def group_norm(ctx: Context, node: Node) -> Any:
    """num_groups groups; opset-18 per-group and opset-21 per-channel scale/bias."""
    x, scale, bias = node.input(0), node.input(1), node.input(2)
    rank = ctx.require_ndim(node, x, "input X")
    if rank < 3:
        raise node.unsupported(f"input X has rank {rank}; it needs N, C and spatial axes")
    groups = int(node.attr("num_groups"))
    eps = float(node.attr("epsilon", 1e-5))
    if node.opset < 21:
        # Opset 18: scale and bias have one entry per group; repeat them per channel.
        dims = ctx.shape(x)
        channels = None if dims is None else ctx.simplify(dims[1])
        if not isinstance(channels, tir.IntImm):
            raise node.unsupported("opset-18 per-group scale/bias need a static channel count")
        per = int(channels.value) // groups
        if per * groups != int(channels.value):
            raise node.unsupported(f"num_groups={groups} does not divide {channels} channels")
        scale, bias = (
            ctx.emit(op.reshape(op.broadcast_to(op.reshape(v, [groups, 1]), [groups, per]), [-1]))
            for v in (scale, bias)
        )
    return op.nn.group_norm(x, scale, bias, groups, 1, list(range(2, rank)), eps)


# ---- LpNormalization --------------------------------------------------------------------------
def _check_lp_norm(node: Node) -> str | None:
    p = int(node.attr("p", 2))
    if p not in (1, 2):
        return f"p={p} is not 1 or 2"
    return None


@converter("LpNormalization", since=1, check=_check_lp_norm)
def lp_norm(ctx: Context, node: Node) -> Any:
    """x / ||x||_p along axis (default -1), p 1 or 2; 0 where the norm is 0."""
    x = node.input(0)
    rank = ctx.require_ndim(node, x, "input")
    axis = normal_axis(node, int(node.attr("axis", -1)), rank)
    if int(node.attr("p", 2)) == 1:
        norm = op.sum(op.abs(x), [axis], keepdims=True)
    else:
        norm = op.sqrt(op.sum(op.multiply(x, x), [axis], keepdims=True))
    bound = ctx.emit(norm)
    zero = scalar(0, float_dtype(ctx, node, x))
    # The spec's reference gives 0, not 0/0 = NaN, for an all-zero slice.
    return op.where(op.equal(bound, zero), zero, op.divide(x, bound))


# ---- MeanVarianceNormalization ----------------------------------------------------------------
@converter("MeanVarianceNormalization", since=9)
def mean_variance_norm(ctx: Context, node: Node) -> Any:
    """(x - mean) / (sqrt(E[x^2] - mean^2) + 1e-9) over axes (default [0, 2, 3])."""
    x = node.input(0)
    rank = ctx.require_ndim(node, x, "input")
    dtype = float_dtype(ctx, node, x)
    axes = [normal_axis(node, int(a), rank, "axes entry") for a in node.attr("axes", [0, 2, 3])]
    mean = ctx.emit(op.mean(x, axes, keepdims=True))
    mean_sq = ctx.emit(op.mean(op.multiply(x, x), axes, keepdims=True))
    var = op.subtract(mean_sq, op.multiply(mean, mean))
    std = ctx.emit(op.sqrt(ctx.emit(var)))
    return op.divide(op.subtract(x, mean), op.add(std, scalar(1e-9, dtype)))


# ---- LRN --------------------------------------------------------------------------------------
@converter("LRN", since=1)
def lrn(ctx: Context, node: Node) -> Any:
    """Across-channel local response normalization (size, alpha, beta, bias)."""
    x = node.input(0)
    dtype = float_dtype(ctx, node, x)
    dims = ctx.shape(x)
    if dims is None or len(dims) < 2:
        raise node.unsupported("input needs a known shape of rank >= 2")
    size = int(node.attr("size"))
    alpha = float(node.attr("alpha", 1e-4))
    beta = float(node.attr("beta", 0.75))
    bias = float(node.attr("bias", 1.0))
    before, after = (size - 1) // 2, size // 2
    rest: Any = tir.IntImm("int64", 1)
    for d in dims[2:]:
        rest = rest * d
    # The channel-window sum of squares as a 3-d average pool (counting padding, so the
    # divisor is always `size`) over an (N, 1, C, rest, 1) view.
    squared = ctx.emit(op.multiply(x, x))
    view = ctx.emit(op.reshape(squared, [dims[0], 1, dims[1], ctx.simplify(rest), 1]))
    pooled = op.nn.avg_pool3d(
        view, [size, 1, 1], [1, 1, 1], [before, 0, 0, after, 0, 0], count_include_pad=True
    )
    window_mean = ctx.emit(op.reshape(ctx.emit(pooled), dims))
    # bias + alpha / size * sum == bias + alpha * mean
    base = op.add(scalar(bias, dtype), op.multiply(window_mean, scalar(alpha, dtype)))
    denom = ctx.emit(op.power(ctx.emit(base), scalar(beta, dtype)))
    return op.divide(x, denom)
