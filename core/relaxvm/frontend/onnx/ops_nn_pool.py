"""ONNX converters: MaxPool, AveragePool, LpPool, GlobalAveragePool, GlobalMaxPool, GlobalLpPool.

``ceil_mode``: ONNX (like onnxruntime and PyTorch) drops a last window that would start in
the end padding; Relax's pools keep it, so such an output row is sliced away here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...ir.relax import op
from ._context import Context, Node
from ._registry import converter
from .ops_nn import scalar
from .ops_nn_conv import check_auto_pad, ints_attr, spatial_rank, static_dim, window_pads
from .ops_nn_pool_argmax import max_pool_with_indices

Window = tuple[int, list[int], list[int], list[int], list[int]]


def _pool_window(ctx: Context, node: Node, x: Any) -> Window:
    n = spatial_rank(ctx, node, x)
    kernel = ints_attr(node, "kernel_shape", n, 1)
    if node.attr("kernel_shape", None) is None:
        raise node.unsupported("kernel_shape is required")
    strides = ints_attr(node, "strides", n, 1)
    dilations = ints_attr(node, "dilations", n, 1)
    pads = window_pads(ctx, node, x, kernel, strides, dilations)
    return n, kernel, strides, dilations, pads


def _ceil_trim(
    ctx: Context,
    node: Node,
    x: Any,
    out: Any,
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    pads: Sequence[int],
) -> Any:
    """Drop ceil_mode's last window where it would start inside the end padding."""
    n = len(kernel)
    dims = ctx.shape(x)
    axes, ends = [], []
    for axis in range(n):
        size = None if dims is None else static_dim(ctx, dims[2 + axis])
        stride = strides[axis]
        if size is None:
            if stride == 1:
                continue  # ceil and floor agree with stride 1
            raise node.unsupported(f"ceil_mode=1 needs a static spatial dim {axis}")
        span = (kernel[axis] - 1) * dilations[axis] + 1
        padded = size + pads[axis] + pads[n + axis]
        relax_out = (padded - span + stride - 1) // stride + 1
        onnx_out = relax_out
        if (onnx_out - 1) * stride >= size + pads[axis]:
            onnx_out -= 1
        if onnx_out != relax_out:
            axes.append(2 + axis)
            ends.append(onnx_out)
    if not axes:
        return out
    return op.strided_slice(ctx.emit(out), axes, [0] * len(axes), ends)


def _check_pool(node: Node) -> str | None:
    reason = check_auto_pad(node)
    if reason:
        return reason
    if node.op_type == "MaxPool" and node.attr("storage_order", 0) not in (0, 1):
        return f"storage_order={node.attr('storage_order')} is not 0 or 1"
    return None


def _pool_call(
    ctx: Context,
    node: Node,
    kind: str,
    x: Any,
    window: Window,
    ceil_mode: bool,
    include_pad: bool,
) -> Any:
    n, kernel, strides, dilations, pads = window
    if kind == "max":
        fns: dict[int, Any] = {1: op.nn.max_pool1d, 2: op.nn.max_pool2d, 3: op.nn.max_pool3d}
        out = fns[n](x, kernel, strides, pads, dilations, ceil_mode)
    else:
        averages: dict[int, Any] = {1: op.nn.avg_pool1d, 2: op.nn.avg_pool2d, 3: op.nn.avg_pool3d}
        out = averages[n](x, kernel, strides, pads, dilations, ceil_mode, include_pad)
    if ceil_mode:
        out = _ceil_trim(ctx, node, x, out, kernel, strides, dilations, pads)
    return out


@converter("MaxPool", since=1, check=_check_pool)
def max_pool(ctx: Context, node: Node) -> Any:
    """1-/2-/3-d; pads, strides, dilations, ceil_mode, auto_pad; Indices with static shapes."""
    x = node.input(0)
    window = _pool_window(ctx, node, x)
    ceil_mode = bool(node.attr("ceil_mode", 0))
    if len(node.output_names) > 1 and node.output_names[1]:
        _, kernel, strides, dilations, pads = window
        sizes = _out_sizes(ctx, node, x, kernel, strides, dilations, pads, ceil_mode)
        return max_pool_with_indices(ctx, node, x, kernel, strides, dilations, pads, sizes)
    return _pool_call(ctx, node, "max", x, window, ceil_mode, False)


def _out_sizes(
    ctx: Context,
    node: Node,
    x: Any,
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    pads: Sequence[int],
    ceil_mode: bool,
) -> list[int]:
    """Static output extents (ceil_mode's window starting in the end padding dropped)."""
    shape = ctx.static_shape(x)
    if shape is None:
        raise node.unsupported("the Indices output needs a static input shape")
    n = len(kernel)
    sizes = []
    for a in range(n):
        span = (kernel[a] - 1) * dilations[a] + 1
        room = shape[2 + a] + pads[a] + pads[n + a] - span
        out = (room + (strides[a] - 1 if ceil_mode else 0)) // strides[a] + 1
        if ceil_mode and (out - 1) * strides[a] >= shape[2 + a] + pads[a]:
            out -= 1
        sizes.append(out)
    return sizes


@converter("AveragePool", since=1, check=_check_pool)
def average_pool(ctx: Context, node: Node) -> Any:
    """1-/2-/3-d; pads, strides, dilations, ceil_mode, count_include_pad, auto_pad."""
    x = node.input(0)
    window = _pool_window(ctx, node, x)
    ceil_mode = bool(node.attr("ceil_mode", 0))
    include_pad = bool(node.attr("count_include_pad", 0))
    return _pool_call(ctx, node, "avg", x, window, ceil_mode, include_pad)


def _check_lp_pool(node: Node) -> str | None:
    reason = check_auto_pad(node)
    if reason:
        return reason
    if node.attr("ceil_mode", 0):
        return "ceil_mode=1 is not supported"
    return None


@converter("LpPool", since=1, check=_check_lp_pool)
def lp_pool(ctx: Context, node: Node) -> Any:
    """(sum over the window of |x|^p)^(1/p); pads, strides, dilations, auto_pad; no ceil_mode."""
    x = node.input(0)
    dtype = ctx.dtype(x) or "float32"
    p = float(node.attr("p", 2))
    window = _pool_window(ctx, node, x)
    size = 1
    for k in window[1]:
        size *= k
    powered = ctx.emit(_power(op.abs(x), p, dtype))
    # The padded mean times the window size is the window sum (no ceil overhang here).
    mean = ctx.emit(_pool_call(ctx, node, "avg", powered, window, False, True))
    total = ctx.emit(op.multiply(mean, scalar(size, dtype)))
    return _power(total, 1.0 / p, dtype)


def _power(x: Any, p: float, dtype: str) -> Any:
    if p == 1.0:
        return x
    if p == 2.0:
        return op.multiply(x, x)
    if p == 0.5:
        return op.sqrt(x)
    return op.power(x, scalar(p, dtype))


def _spatial_axes(ctx: Context, node: Node) -> list[int]:
    rank = ctx.require_ndim(node, node.input(0), "input X")
    if rank < 3:
        raise node.unsupported(f"input X has rank {rank}; a global pool needs N, C and spatial")
    return list(range(2, rank))


@converter("GlobalAveragePool", since=1)
def global_average_pool(ctx: Context, node: Node) -> Any:
    """Mean over all spatial axes, kept as extent-1 axes."""
    return op.mean(node.input(0), _spatial_axes(ctx, node), keepdims=True)


@converter("GlobalMaxPool", since=1)
def global_max_pool(ctx: Context, node: Node) -> Any:
    """Max over all spatial axes, kept as extent-1 axes."""
    return op.max(node.input(0), _spatial_axes(ctx, node), keepdims=True)


@converter("GlobalLpPool", since=2)
def global_lp_pool(ctx: Context, node: Node) -> Any:
    """(sum over all spatial axes of |x|^p)^(1/p), kept as extent-1 axes."""
    x = node.input(0)
    dtype = ctx.dtype(x) or "float32"
    p = float(node.attr("p", 2))
    powered = ctx.emit(_power(op.abs(x), p, dtype))
    total = ctx.emit(op.sum(powered, _spatial_axes(ctx, node), keepdims=True))
    return _power(total, 1.0 / p, dtype)
