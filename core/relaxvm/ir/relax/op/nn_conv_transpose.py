"""Transposed convolutions (``relax.nn.conv1d_transpose``, ``relax.nn.conv2d_transpose``)
with TVM v0.23's signatures and attribute names: NCW/IOW and NCHW/IOHW canonical layouts, or
any layout :mod:`.nn_layout` accepts (permuted or packed)."""

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
    _spatial,
)
from .nn_layout import (
    check_ndim,
    from_canonical,
    layout_attrs,
    layout_ndim,
    layout_perm,
    to_canonical,
)
from .registry import InferContext, OpError, register_op

__all__ = ["conv1d_transpose", "conv2d_transpose", "conv3d_transpose"]


def _rank_of(call: Call) -> int:
    name = str(getattr(call.op, "name", ""))
    return next(r for r in (1, 2, 3) if name.endswith(f"{r}d_transpose"))


def _kernel_layout(rank: int) -> str:
    """The canonical weight layout of a transposed convolution: input channels first."""
    return "IO" + _LAYOUTS[rank][2:]


def _perms(call: Call, ctx: InferContext, rank: int) -> tuple[Any, Any, Any]:
    op = str(getattr(call.op, "name", call.op))
    canonical, kernel = _LAYOUTS[rank], _kernel_layout(rank)
    data_layout = ctx.attr(call, "data_layout", canonical)
    return (
        layout_perm(op, "data_layout", data_layout, canonical),
        layout_perm(op, "kernel_layout", ctx.attr(call, "kernel_layout", kernel), kernel),
        layout_perm(op, "out_layout", ctx.attr(call, "out_layout", data_layout), canonical),
    )


def _infer_conv_transpose(call: Call, ctx: InferContext) -> StructInfo:
    rank = _rank_of(call)
    data = ctx.tensor_arg(call, 0, "data")
    weight = ctx.tensor_arg(call, 1, "weight")
    d_perm, w_perm, out_perm = _perms(call, ctx, rank)
    check_ndim(ctx, data, "data", d_perm, _LAYOUTS[rank])
    check_ndim(ctx, weight, "weight", w_perm, _kernel_layout(rank))
    dtype = _conv_dtype(call, ctx, data, weight)
    d, w = data.shape_values, weight.shape_values
    if d is None or w is None:
        return tensor(None, dtype, layout_ndim(out_perm, _LAYOUTS[rank]), like=data)
    d, w = tuple(to_canonical(d, d_perm)), tuple(to_canonical(w, w_perm))
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
    return tensor(from_canonical([d[0], out_channels, *extents], out_perm), dtype, like=data)


for _name, _layouts in (
    ("conv1d_transpose", "NCW data, IOW"),
    ("conv2d_transpose", "NCHW data, IOHW"),
    ("conv3d_transpose", "NCDHW data, IODHW"),
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
            "data_layout": "data axes (a permutation of the channel-first layout)",
            "kernel_layout": "weight axes (a permutation of IO + the spatial axes)",
            "out_layout": "result axes (default: data_layout)",
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
    stored = layout_attrs(
        name,
        {
            "data_layout": (data_layout, _LAYOUTS[rank]),
            "kernel_layout": (kernel_layout, _kernel_layout(rank)),
            "out_layout": (data_layout if out_layout is None else out_layout, _LAYOUTS[rank]),
        },
    )
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
        **stored,
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
        Permutations of ``"NCHW"``, ``"IOHW"`` and ``"NCHW"`` (``out_layout`` None: the data
        layout).
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


def conv3d_transpose(
    data: RelaxExpr,
    weight: RelaxExpr,
    strides: int | Sequence[int] = (1, 1, 1),
    padding: int | Sequence[int] = (0, 0, 0),
    output_padding: int | Sequence[int] = (0, 0, 0),
    dilation: int | Sequence[int] = (1, 1, 1),
    groups: int = 1,
    data_layout: str = "NCDHW",
    kernel_layout: str = "IODHW",
    out_layout: str | None = None,
    out_dtype: str | DataType | None = None,
) -> Call:
    """3-d transposed convolution of NCDHW ``data`` with an IODHW ``weight``.

    Each output extent is ``(in - 1) * stride - pad_begin - pad_end + dilation * (k - 1) +
    output_padding + 1``; ``padding`` takes 1, 3 or 6 ints (``front, top, left, back,
    bottom, right``); parameters otherwise as :func:`conv2d_transpose`.
    """
    return _conv_transpose(
        "relax.nn.conv3d_transpose", 3, data, weight, strides, padding, output_padding,
        dilation, groups, (data_layout, kernel_layout, out_layout), out_dtype,
    )  # fmt: skip
