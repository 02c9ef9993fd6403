"""Transposed convolutions (``relax.nn.conv1d_transpose``, ``relax.nn.conv2d_transpose``)
with TVM v0.23's signatures and attribute names: NCW/IOW and NCHW/IOHW layouts only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ....runtime.dtype import DataType
from ...expr import IntImm
from ...op import add, mul, sub
from .._base import RelaxExpr
from ..expr import Call
from ..struct_info import StructInfo
from ._common import dims_text, dtype_attr, make_call, tensor
from .nn_conv import (
    _LAYOUTS,
    _check_channels,
    _check_extents,
    _conv_dtype,
    _groups,
    _padding,
    _require_rank,
    _spatial,
)
from .registry import InferContext, OpError, register_op

__all__ = ["conv1d_transpose", "conv2d_transpose"]


def _check_layout(name: str, param: str, layout: str, expected: str) -> None:
    # Transposed convolutions stay channel-first (the other spatial ops take any permutation).
    if layout != expected:
        raise OpError(f"{name}: only the {expected} {param} is supported, got {layout!r}")


def _rank_of(call: Call) -> int:
    return 2 if str(getattr(call.op, "name", "")).endswith("2d_transpose") else 1


def _infer_conv_transpose(call: Call, ctx: InferContext) -> StructInfo:
    rank = _rank_of(call)
    data = ctx.tensor_arg(call, 0, "data")
    weight = ctx.tensor_arg(call, 1, "weight")
    _require_rank(ctx, data, "data", rank)
    if weight.ndim not in (-1, rank + 2):
        kernel = "IOW" if rank == 1 else "IOHW"
        raise ctx.error(
            f"weight must have rank {rank + 2} ({kernel} layout), got shape {dims_text(weight)}"
        )
    dtype = _conv_dtype(call, ctx, data, weight)
    d, w = data.shape_values, weight.shape_values
    if d is None or w is None:
        return tensor(None, dtype, rank + 2, like=data)
    groups = ctx.attr(call, "groups", 1)
    why = f"weight with shape {dims_text(weight)} (input channels first) expects {w[0]}"
    _check_channels(ctx, d[1], w[0], data, why)
    if isinstance(w[0], IntImm) and w[0].value % groups:
        raise ctx.error(
            f"weight with shape {dims_text(weight)} has {w[0]} input channels, not a multiple "
            f"of groups={groups}"
        )
    strides = ctx.attr(call, "strides", (1,) * rank)
    dilation = ctx.attr(call, "dilation", (1,) * rank)
    output_padding = ctx.attr(call, "output_padding", (0,) * rank)
    pads = ctx.attr(call, "padding", (0,) * (2 * rank))
    extents = []
    for axis in range(rank):
        # (in - 1) * stride - pad_begin - pad_end + dilation * (kernel - 1) + output_padding + 1
        size = mul(sub(d[2 + axis], 1), strides[axis])
        size = add(size, mul(dilation[axis], sub(w[2 + axis], 1)))
        size = add(size, output_padding[axis] + 1 - pads[axis] - pads[rank + axis])
        extents.append(ctx.analyzer.simplify(size))
    _check_extents(ctx, extents, rank, f"padding {list(pads)}", data)
    out_channels = ctx.analyzer.simplify(mul(w[1], groups))
    return tensor([d[0], out_channels, *extents], dtype, like=data)


for _name, _layouts in (
    ("conv1d_transpose", "NCW data, IOW"),
    ("conv2d_transpose", "NCHW data, IOHW"),
):
    register_op(
        f"relax.nn.{_name}",
        num_inputs=2,
        infer=_infer_conv_transpose,
        attrs={
            "strides": "per spatial axis",
            "padding": "(begin..., end...)",
            "output_padding": "extra extent at the end of each spatial axis",
            "dilation": "per spatial axis",
            "groups": "channel groups",
            "out_dtype": "result dtype",
        },
        doc=f"transposed convolution (the gradient of conv w.r.t. its input), {_layouts} weight",
    )


def _conv_transpose(
    name: str,
    rank: int,
    data: RelaxExpr,
    weight: RelaxExpr,
    strides: Any,
    padding: Any,
    output_padding: Any,
    dilation: Any,
    groups: Any,
    layouts: tuple[str, str, str | None],
    out_dtype: Any,
) -> Call:
    data_layout, kernel_layout, out_layout = layouts
    _check_layout(name, "data_layout", data_layout, _LAYOUTS[rank])
    _check_layout(name, "kernel_layout", kernel_layout, "IOW" if rank == 1 else "IOHW")
    _check_layout(name, "out_layout", out_layout or data_layout, _LAYOUTS[rank])
    strides_t = _spatial(name, "strides", strides, rank)
    output_padding_t = _spatial(name, "output_padding", output_padding, rank, minimum=0)
    for out_pad, stride in zip(output_padding_t, strides_t, strict=True):
        if out_pad >= stride:
            raise OpError(
                f"{name}: output_padding must be smaller than strides, got output_padding "
                f"{list(output_padding_t)} and strides {list(strides_t)}"
            )
    attrs = {
        "strides": strides_t,
        "padding": _padding(name, padding, rank),
        "output_padding": output_padding_t,
        "dilation": _spatial(name, "dilation", dilation, rank),
        "groups": _groups(name, groups),
        "out_dtype": dtype_attr(name, out_dtype),
    }
    return make_call(name, [data, weight], attrs)


def conv1d_transpose(
    data: RelaxExpr,
    weight: RelaxExpr,
    strides: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    output_padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
    data_layout: str = "NCW",
    kernel_layout: str = "IOW",
    out_layout: str | None = None,
    out_dtype: str | DataType | None = None,
) -> Call:
    """1-d transposed convolution of NCW ``data`` with an IOW ``weight``.

    The output width is ``(W - 1) * stride - left - right + dilation * (KW - 1) +
    output_padding + 1``; parameters as :func:`conv2d_transpose` with one spatial axis.
    """
    return _conv_transpose(
        "relax.nn.conv1d_transpose", 1, data, weight, strides, padding, output_padding,
        dilation, groups, (data_layout, kernel_layout, out_layout), out_dtype,
    )  # fmt: skip


def conv2d_transpose(
    data: RelaxExpr,
    weight: RelaxExpr,
    strides: int | Sequence[int] = (1, 1),
    padding: int | Sequence[int] = (0, 0),
    output_padding: int | Sequence[int] = (0, 0),
    dilation: int | Sequence[int] = (1, 1),
    groups: int = 1,
    data_layout: str = "NCHW",
    kernel_layout: str = "IOHW",
    out_layout: str | None = None,
    out_dtype: str | DataType | None = None,
) -> Call:
    """2-d transposed convolution of NCHW ``data`` with an IOHW ``weight``.

    Parameters
    ----------
    data, weight : RelaxExpr
        ``(N, C, H, W)`` data and ``(C, O // groups, KH, KW)`` weight.
    strides, dilation : int or sequence of 1 or 2 ints
        The strides and dilation of the convolution this op transposes.
    padding : int or sequence of 1, 2 or 4 ints
        ``(top, left, bottom, right)`` removed from the full output.
    output_padding : int or sequence of 1 or 2 ints
        Extent added at the bottom/right; each entry is smaller than its stride.
    groups : int
        Channel groups.
    data_layout, kernel_layout, out_layout : str
        Only ``"NCHW"``, ``"IOHW"`` and ``"NCHW"`` (or None).
    out_dtype : str or DataType, optional
        The result dtype; by default the operands' dtype.

    Returns
    -------
    Call
        A ``relax.nn.conv2d_transpose`` call of shape ``(N, O, out_h, out_w)`` with
        ``out = (in - 1) * stride - pad_begin - pad_end + dilation * (k - 1) +
        output_padding + 1``.
    """
    return _conv_transpose(
        "relax.nn.conv2d_transpose", 2, data, weight, strides, padding, output_padding,
        dilation, groups, (data_layout, kernel_layout, out_layout), out_dtype,
    )  # fmt: skip
