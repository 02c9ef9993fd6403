"""3-d convolution and pooling (``relax.nn.conv3d``, ``max_pool3d``, ``avg_pool3d``,
``adaptive_avg_pool3d``) with TVM v0.23's signatures and attribute names: NCDHW data and
OIDHW weight only. The inference is :mod:`.nn_conv`'s, written for any spatial rank."""

from __future__ import annotations

from collections.abc import Sequence

from ....runtime.dtype import DataType
from .._base import RelaxExpr
from ..expr import Call
from ._common import dtype_attr, make_call
from .nn_conv import (
    _groups,
    _padding,
    _pool,
    _spatial,
    register_window_ops,
)
from .nn_layout import conv_layout_attrs, pool_layout_attrs

__all__ = ["adaptive_avg_pool3d", "avg_pool3d", "conv3d", "max_pool3d"]

register_window_ops(3, "(d, h, w)", "(front, top, left, back, bottom, right)", "OIDHW")


def conv3d(
    data: RelaxExpr,
    weight: RelaxExpr,
    strides: int | Sequence[int] = (1, 1, 1),
    padding: int | Sequence[int] = (0, 0, 0),
    dilation: int | Sequence[int] = (1, 1, 1),
    groups: int = 1,
    data_layout: str = "NCDHW",
    kernel_layout: str = "OIDHW",
    out_layout: str | None = None,
    out_dtype: str | DataType | None = None,
) -> Call:
    """3-d convolution of NCDHW ``data`` with an OIDHW ``weight``.

    Parameters
    ----------
    data, weight : RelaxExpr
        ``(N, C, D, H, W)`` data and ``(O, C // groups, KD, KH, KW)`` weight.
    strides, dilation : int or sequence of 1 or 3 ints
        The window step and the kernel spacing per spatial axis.
    padding : int or sequence of 1, 3 or 6 ints
        Zero padding; 6 ints are ``(front, top, left, back, bottom, right)``.
    groups : int
        Channel groups.
    data_layout, kernel_layout, out_layout : str
        Permutations of ``"NCDHW"``, ``"OIDHW"`` and ``"NCDHW"`` (``out_layout`` None: the
        data layout).
    out_dtype : str or DataType, optional
        The result (and accumulation) dtype; by default the operands' dtype.

    Returns
    -------
    Call
        A ``relax.nn.conv3d`` call of shape ``(N, O, out_d, out_h, out_w)``.
    """
    name = "relax.nn.conv3d"
    layouts = conv_layout_attrs(name, 3, data_layout, kernel_layout, out_layout)
    attrs = {
        "strides": _spatial(name, "strides", strides, 3),
        "padding": _padding(name, padding, 3),
        "dilation": _spatial(name, "dilation", dilation, 3),
        "groups": _groups(name, groups),
        "out_dtype": dtype_attr(name, out_dtype),
        **layouts,
    }
    return make_call(name, [data, weight], attrs)


def max_pool3d(
    data: RelaxExpr,
    pool_size: int | Sequence[int] = (1, 1, 1),
    strides: int | Sequence[int] = (1, 1, 1),
    padding: int | Sequence[int] = (0, 0, 0),
    dilation: int | Sequence[int] = (1, 1, 1),
    ceil_mode: bool = False,
    count_include_pad: bool = False,
    layout: str = "NCDHW",
    out_layout: str | None = None,
) -> Call:
    """3-d max pooling over NCDHW ``data``; parameters as :func:`avg_pool3d`."""
    return _pool(
        "relax.nn.max_pool3d", 3, data, (pool_size, strides, padding, dilation), ceil_mode,
        count_include_pad, (layout, out_layout),
    )  # fmt: skip


def avg_pool3d(
    data: RelaxExpr,
    pool_size: int | Sequence[int] = (1, 1, 1),
    strides: int | Sequence[int] = (1, 1, 1),
    padding: int | Sequence[int] = (0, 0, 0),
    dilation: int | Sequence[int] = (1, 1, 1),
    ceil_mode: bool = False,
    count_include_pad: bool = False,
    layout: str = "NCDHW",
    out_layout: str | None = None,
) -> Call:
    """3-d average pooling over NCDHW ``data``.

    Parameters
    ----------
    data : RelaxExpr
        ``(N, C, D, H, W)`` data.
    pool_size, strides, dilation : int or sequence of 1 or 3 ints
        The window, its step and its spacing.
    padding : int or sequence of 1, 3 or 6 ints
        ``(front, top, left, back, bottom, right)`` padding.
    ceil_mode : bool
        Round the output extents up.
    count_include_pad : bool
        Divide by the window size including padding (never the ceil_mode overhang).
    layout, out_layout : str
        Only ``"NCDHW"``.

    Returns
    -------
    Call
        A ``relax.nn.avg_pool3d`` call.
    """
    return _pool(
        "relax.nn.avg_pool3d", 3, data, (pool_size, strides, padding, dilation), ceil_mode,
        count_include_pad, (layout, out_layout),
    )  # fmt: skip


def adaptive_avg_pool3d(
    data: RelaxExpr,
    output_size: int | Sequence[int] | None = None,
    layout: str = "NCDHW",
    out_layout: str | None = None,
) -> Call:
    """Average pooling of NCDHW ``data`` to ``output_size`` (the input size when None); cell
    ``i`` of an axis averages ``[i*S//OS, ceil((i+1)*S/OS))``."""
    name = "relax.nn.adaptive_avg_pool3d"
    layouts = pool_layout_attrs(name, 3, layout, out_layout)
    size = None if output_size is None else _spatial(name, "output_size", output_size, 3)
    return make_call(name, [data], {"output_size": size, **layouts})
