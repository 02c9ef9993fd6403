"""ONNX converters: Conv and ConvTranspose, plus the window-attribute helpers the pools share.

ONNX spells padding ``[x1_begin, x2_begin, ..., x1_end, x2_end]``, which is also the order
Relax's conv/pool ops take, so pads pass through; ``auto_pad`` is resolved here into explicit
pads (from static spatial dims, or from the kernel alone where the stride is 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...ir import tir
from ...ir.relax import op
from ._context import Context, Node
from ._registry import converter

AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def auto_pad(node: Node) -> str:
    """The ``auto_pad`` attribute as text."""
    return _text(node.attr("auto_pad", "NOTSET"))


def check_auto_pad(node: Node) -> str | None:
    """A reason when ``auto_pad`` has a value outside the spec's four."""
    mode = auto_pad(node)
    if mode not in AUTO_PADS:
        return f"auto_pad={mode!r} is not one of {', '.join(AUTO_PADS)}"
    return None


def spatial_rank(ctx: Context, node: Node, x: Any, ranks: Sequence[int] = (1, 2, 3)) -> int:
    """The number of spatial axes of NC... ``x``; refused outside ``ranks``."""
    rank = ctx.require_ndim(node, x, "input X")
    if rank - 2 not in ranks:
        allowed = "/".join(f"{r}-d" for r in ranks)
        raise node.unsupported(f"input X has rank {rank}; only {allowed} spatial inputs are")
    return rank - 2


def ints_attr(node: Node, name: str, count: int, default: int) -> list[int]:
    """An int-list attribute with ``count`` entries (``default`` each when absent)."""
    value = node.attr(name, None)
    if value is None:
        return [default] * count
    values = [int(v) for v in value]
    if len(values) != count:
        raise node.unsupported(f"attribute {name} has {len(values)} entries, expected {count}")
    return values


def static_dim(ctx: Context, dim: Any) -> int | None:
    """A dim as an int when it is constant."""
    dim = ctx.simplify(dim)
    return int(dim.value) if isinstance(dim, tir.IntImm) else None


def window_pads(
    ctx: Context,
    node: Node,
    x: Any,
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    ceil_mode: bool = False,
) -> list[int]:
    """Explicit ``[begins..., ends...]`` pads for a conv/pool window from pads or auto_pad."""
    n = len(kernel)
    mode = auto_pad(node)
    if mode == "NOTSET":
        pads = ints_attr(node, "pads", 2 * n, 0)
        if any(p < 0 for p in pads):
            raise node.unsupported(f"negative pads {pads}")
        return pads
    if mode == "VALID":
        return [0] * (2 * n)
    dims = ctx.shape(x)
    begins, ends = [], []
    for axis in range(n):
        span = (kernel[axis] - 1) * dilations[axis] + 1
        if strides[axis] == 1:
            total = span - 1  # out = in whatever the input extent
        else:
            size = None if dims is None else static_dim(ctx, dims[2 + axis])
            if size is None:
                raise node.unsupported(
                    f"auto_pad={mode} with stride {strides[axis]} needs a static spatial dim {axis}"
                )
            out = -(-size // strides[axis])
            total = max(0, (out - 1) * strides[axis] + span - size)
        small = total // 2
        begins.append(small if mode == "SAME_UPPER" else total - small)
        ends.append(total - begins[-1])
    return begins + ends


def kernel_shape(ctx: Context, node: Node, weight: Any, n: int) -> list[int]:
    """``kernel_shape``, else the static spatial extents of the weight."""
    if node.attr("kernel_shape", None) is not None:
        return ints_attr(node, "kernel_shape", n, 1)
    shape = ctx.static_shape(weight)
    if shape is None or len(shape) != n + 2:
        raise node.unsupported("kernel_shape is absent and the weight's shape is not static")
    return shape[2:]


def add_channel_bias(ctx: Context, out: Any, bias: Any, n: int) -> Any:
    """``out + bias`` with a per-channel ``bias`` of shape (C,)."""
    if bias is None:
        return out
    return op.add(out, op.reshape(bias, [1, -1] + [1] * n))


# ---- Conv -------------------------------------------------------------------------------------
def _check_conv(node: Node) -> str | None:
    return check_auto_pad(node)


@converter("Conv", since=1, check=_check_conv)
def conv(ctx: Context, node: Node) -> Any:
    """1-/2-/3-d; strides, dilations, pads, group, all auto_pad modes, optional bias."""
    x, weight = node.input(0), node.input(1)
    n = spatial_rank(ctx, node, x)
    kernel = kernel_shape(ctx, node, weight, n)
    strides = ints_attr(node, "strides", n, 1)
    dilations = ints_attr(node, "dilations", n, 1)
    pads = window_pads(ctx, node, x, kernel, strides, dilations)
    groups = int(node.attr("group", 1))
    fn: Any = {1: op.nn.conv1d, 2: op.nn.conv2d, 3: op.nn.conv3d}[n]
    out = fn(x, weight, strides=strides, padding=pads, dilation=dilations, groups=groups)
    return add_channel_bias(ctx, out, node.optional_input(2), n)


# ---- ConvTranspose ----------------------------------------------------------------------------
def _check_conv_transpose(node: Node) -> str | None:
    return check_auto_pad(node)


@converter("ConvTranspose", since=1, check=_check_conv_transpose)
def conv_transpose(ctx: Context, node: Node) -> Any:
    """1-/2-/3-d; strides, dilations, pads, group, output_padding, output_shape, auto_pad."""
    x, weight = node.input(0), node.input(1)
    n = spatial_rank(ctx, node, x)
    kernel = kernel_shape(ctx, node, weight, n)
    strides = ints_attr(node, "strides", n, 1)
    dilations = ints_attr(node, "dilations", n, 1)
    out_pad = ints_attr(node, "output_padding", n, 0)
    groups = int(node.attr("group", 1))
    mode = auto_pad(node)
    output_shape = node.attr("output_shape", None)
    explicit = node.attr("pads", None)
    if output_shape is not None or (explicit is None and mode in ("SAME_UPPER", "SAME_LOWER")):
        pads = _transpose_pads(ctx, node, x, kernel, strides, dilations, out_pad, output_shape)
    elif mode == "VALID" or explicit is None:
        pads = [0] * (2 * n)
    else:
        pads = ints_attr(node, "pads", 2 * n, 0)
    # Output = full[begin : full_len - end + output_padding]; past full_len the transposed
    # convolution contributes nothing. Fold output_padding into the end crop, and realize
    # negative crops (output larger than the full result) as zero padding afterwards.
    begins = pads[:n]
    ends = [pads[n + a] - out_pad[a] for a in range(n)]
    crop = [max(b, 0) for b in begins] + [max(e, 0) for e in ends]
    fn: Any = {1: op.nn.conv1d_transpose, 2: op.nn.conv2d_transpose, 3: op.nn.conv3d_transpose}[n]
    out = fn(x, weight, strides=strides, padding=crop, dilation=dilations, groups=groups)
    extra = [(max(-begins[a], 0), max(-ends[a], 0)) for a in range(n)]
    if any(b or e for b, e in extra):
        out = op.nn.pad(ctx.emit(out), [0, 0, 0, 0] + [w for pair in extra for w in pair])
    return add_channel_bias(ctx, out, node.optional_input(2), n)


def _transpose_pads(
    ctx: Context,
    node: Node,
    x: Any,
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    out_pad: Sequence[int],
    output_shape: Any,
) -> list[int]:
    # The spec's rule: total = stride * (in - 1) + output_padding + span - out, split with the
    # odd unit at the end for SAME_UPPER and at the beginning otherwise.
    n = len(kernel)
    dims = ctx.shape(x)
    mode = auto_pad(node)
    wanted = [int(v) for v in output_shape] if output_shape is not None else None
    if wanted is not None and len(wanted) == n + 2:
        wanted = wanted[2:]
    if wanted is not None and len(wanted) != n:
        raise node.unsupported(f"output_shape {list(output_shape)} has the wrong length")
    begins, ends = [], []
    for axis in range(n):
        size = None if dims is None else static_dim(ctx, dims[2 + axis])
        if size is None:
            raise node.unsupported(f"output_shape/auto_pad need a static spatial dim {axis}")
        out = wanted[axis] if wanted is not None else size * strides[axis]
        span = (kernel[axis] - 1) * dilations[axis] + 1
        total = strides[axis] * (size - 1) + out_pad[axis] + span - out
        small = total // 2
        begin = small if mode == "SAME_UPPER" else total - small
        begins.append(begin)
        ends.append(total - begin)
    return begins + ends
