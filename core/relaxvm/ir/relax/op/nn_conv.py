"""1-d convolution and pooling (``relax.nn.conv1d``, ``max_pool1d``, ``avg_pool1d``,
``adaptive_avg_pool1d``) with TVM v0.23's signatures and attribute names, and the attribute
and shape helpers the transposed convolutions (:mod:`.nn_conv_transpose`) share.

NCW data and OIW weight are canonical; any layout :mod:`.nn_layout` accepts (a permutation,
maybe packed: ``NWC``, ``NCW4c``) is inferred on the canonical view. Helpers take ``rank``,
the number of spatial axes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ....runtime.dtype import DataType
from ...expr import IntImm, PrimExpr
from ...op import add, floordiv, mul, sub
from .._base import RelaxExpr
from ..expr import Call
from ..struct_info import StructInfo, TensorStructInfo
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

__all__ = [
    "adaptive_avg_pool1d",
    "avg_pool1d",
    "conv1d",
    "max_pool1d",
]

_AXES = {1: "width", 2: "height and width", 3: "depth, height and width"}
_LAYOUTS = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


# ---- attribute canonicalization ---------------------------------------------------------------
def _spatial(name: str, param: str, value: Any, rank: int, minimum: int = 1) -> tuple[int, ...]:
    """``value`` as ``rank`` ints (one int is repeated), each at least ``minimum``."""
    values = as_int_tuple(name, param, value, rank)
    if len(values) == 1:
        values = values * rank
    if len(values) != rank:
        count = "1 entry" if rank == 1 else f"1 or {rank} entries"
        raise OpError(f"{name}: {param} must have {count}, got {list(values)}")
    if any(v < minimum for v in values):
        raise OpError(f"{name}: {param} entries must be >= {minimum}, got {list(values)}")
    return values


def _padding(name: str, value: Any, rank: int) -> tuple[int, ...]:
    """Padding as (begin..., end...) from 1, ``rank`` or ``2 * rank`` ints (TVM's convention)."""
    pads = as_int_tuple(name, "padding", value)
    if len(pads) == 1:
        pads = pads * (2 * rank)
    elif len(pads) == rank:
        pads = pads + pads
    if len(pads) != 2 * rank:
        counts = [str(c) for c in sorted({1, rank, 2 * rank})]
        allowed = ", ".join(counts[:-1]) + f" or {counts[-1]}"
        raise OpError(f"{name}: padding must have {allowed} entries, got {list(pads)}")
    if any(p < 0 for p in pads):
        raise OpError(f"{name}: padding entries must be >= 0, got {list(pads)}")
    return pads


def _groups(name: str, groups: Any) -> int:
    value = as_int(name, "groups", groups)
    if value < 1:
        raise OpError(f"{name}: groups must be >= 1, got {value}")
    return value


# ---- inference ----------------------------------------------------------------------------------
def _window_out(
    size: PrimExpr, kernel: PrimExpr, pad: int, stride: int, dilation: int, ceil_mode: bool = False
) -> PrimExpr:
    """``(size + pad - dilation * (kernel - 1) - 1 [+ stride - 1]) // stride + 1``."""
    numer = sub(sub(add(size, pad), mul(dilation, sub(kernel, 1))), 1)
    if ceil_mode:
        numer = add(numer, stride - 1)
    return add(floordiv(numer, stride), 1)


def _check_extents(
    ctx: InferContext, extents: Sequence[PrimExpr], rank: int, what: str, data: TensorStructInfo
) -> None:
    for extent in extents:
        if isinstance(extent, IntImm) and extent.value < 1:
            raise ctx.error(
                f"{what} does not fit data with shape {dims_text(data)}: the output "
                f"{_AXES[rank]} would be {', '.join(map(str, extents))}"
            )


def _check_channels(
    ctx: InferContext, data: PrimExpr, expected: PrimExpr, data_info: TensorStructInfo, why: str
) -> None:
    """Raise unless ``data`` (data's channel extent) may equal ``expected``; ``why`` ends the
    message with where ``expected`` comes from."""
    expected = ctx.analyzer.simplify(expected)
    if not prove_equal(ctx, data, expected) and prove_not_equal(ctx, data, expected):
        raise ctx.error(
            f"data with shape {dims_text(data_info)} has {data} input channels but {why}"
        )


def _conv_dtype(call: Call, ctx: InferContext, data: Any, weight: Any) -> DataType | None:
    out_dtype = ctx.attr(call, "out_dtype")
    return DataType(out_dtype) if out_dtype else unify_dtypes(ctx, [data, weight])


def _spatial_rank(call: Call) -> int:
    """The number of spatial axes, from the op name (``relax.nn.conv1d`` -> 1)."""
    name = str(getattr(call.op, "name", ""))
    return next(r for r in (1, 2, 3) if f"{r}d" in name)


def _infer_conv(call: Call, ctx: InferContext) -> StructInfo:
    rank = _spatial_rank(call)
    data = ctx.tensor_arg(call, 0, "data")
    weight = ctx.tensor_arg(call, 1, "weight")
    d_perm, w_perm, out_perm = conv_perms(call, ctx, rank)
    check_ndim(ctx, data, "data", d_perm, _LAYOUTS[rank])
    check_ndim(ctx, weight, "weight", w_perm, "OI" + _LAYOUTS[rank][2:])
    dtype = _conv_dtype(call, ctx, data, weight)
    d, w = data.shape_values, weight.shape_values
    if d is None or w is None:
        return tensor(None, dtype, layout_ndim(out_perm, _LAYOUTS[rank]), like=data)
    d, w = tuple(to_canonical(d, d_perm)), tuple(to_canonical(w, w_perm))
    groups = ctx.attr(call, "groups", 1)
    expected = ctx.analyzer.simplify(mul(w[1], groups))
    why = f"weight with shape {dims_text(weight)} expects {w[1]} x groups={groups} = {expected}"
    _check_channels(ctx, d[1], expected, data, why)
    if isinstance(w[0], IntImm) and w[0].value % groups:
        raise ctx.error(
            f"weight with shape {dims_text(weight)} has {w[0]} output channels, not a multiple "
            f"of groups={groups}"
        )
    strides = ctx.attr(call, "strides", (1,) * rank)
    dilation = ctx.attr(call, "dilation", (1,) * rank)
    pads = ctx.attr(call, "padding", (0,) * (2 * rank))
    extents = [
        ctx.analyzer.simplify(
            _window_out(d[2 + a], w[2 + a], pads[a] + pads[rank + a], strides[a], dilation[a])
        )
        for a in range(rank)
    ]
    _check_extents(ctx, extents, rank, f"the kernel with shape {dims_text(weight)}", data)
    return tensor(from_canonical([d[0], w[0], *extents], out_perm), dtype, like=data)


def _infer_pool(call: Call, ctx: InferContext) -> StructInfo:
    rank = _spatial_rank(call)
    data = ctx.tensor_arg(call, 0, "data")
    d_perm, out_perm = pool_perms(call, ctx, rank)
    check_ndim(ctx, data, "data", d_perm, _LAYOUTS[rank])
    d = data.shape_values
    if d is None:
        return tensor(None, data.dtype, layout_ndim(out_perm, _LAYOUTS[rank]), like=data)
    d = tuple(to_canonical(d, d_perm))
    sizes = ctx.attr(call, "pool_size", (1,) * rank)
    strides = ctx.attr(call, "strides", (1,) * rank)
    dilation = ctx.attr(call, "dilation", (1,) * rank)
    pads = ctx.attr(call, "padding", (0,) * (2 * rank))
    ceil_mode = ctx.attr(call, "ceil_mode", False)
    extents = [
        ctx.analyzer.simplify(
            _window_out(
                d[2 + a],
                IntImm(sizes[a]),
                pads[a] + pads[rank + a],
                strides[a],
                dilation[a],
                ceil_mode,
            )
        )
        for a in range(rank)
    ]
    _check_extents(ctx, extents, rank, f"pool_size {tuple(sizes)}", data)
    return tensor(from_canonical([d[0], d[1], *extents], out_perm), data.dtype, like=data)


def _infer_adaptive_pool(call: Call, ctx: InferContext) -> StructInfo:
    rank = _spatial_rank(call)
    data = ctx.tensor_arg(call, 0, "data")
    d_perm, out_perm = pool_perms(call, ctx, rank)
    check_ndim(ctx, data, "data", d_perm, _LAYOUTS[rank])
    output_size = ctx.attr(call, "output_size")
    d = data.shape_values
    if d is None:
        return tensor(None, data.dtype, layout_ndim(out_perm, _LAYOUTS[rank]), like=data)
    d = tuple(to_canonical(d, d_perm))
    size = d[2:] if output_size is None else tuple(IntImm(v) for v in output_size)
    return tensor(from_canonical([d[0], d[1], *size], out_perm), data.dtype, like=data)


def register_window_ops(rank: int, axes: str, padding: str, weight_layout: str) -> None:
    """Register ``conv{rank}d``, ``max_pool{rank}d``, ``avg_pool{rank}d`` and
    ``adaptive_avg_pool{rank}d`` (channel-first layouts), sharing this module's inference."""
    layout = _LAYOUTS[rank]
    window = {"strides": axes, "padding": padding, "dilation": axes}
    pool_layouts = {
        "layout": f"data axes (a permutation of {layout}; stored when not {layout})",
        "out_layout": "result axes (default: layout)",
    }
    register_op(
        f"relax.nn.conv{rank}d",
        num_inputs=2,
        infer=_infer_conv,
        attrs={
            **window,
            "groups": "channel groups",
            "out_dtype": "result dtype",
            "data_layout": f"data axes (a permutation of {layout}; stored when not {layout})",
            "kernel_layout": f"weight axes (a permutation of {weight_layout})",
            "out_layout": "result axes (default: data_layout)",
        },
        doc=f"{rank}-d convolution, {layout} data and {weight_layout} weight (or permutations)",
    )
    for kind in ("max", "avg"):
        register_op(
            f"relax.nn.{kind}_pool{rank}d",
            num_inputs=1,
            infer=_infer_pool,
            attrs={
                **window,
                "pool_size": axes,
                "ceil_mode": "round the output up",
                "count_include_pad": "average over the padded window",
                **pool_layouts,
            },
            doc=f"{rank}-d {kind} pooling, {layout}",
        )
    register_op(
        f"relax.nn.adaptive_avg_pool{rank}d",
        num_inputs=1,
        infer=_infer_adaptive_pool,
        attrs={"output_size": f"{axes}; None keeps the input size", **pool_layouts},
        doc=f"{rank}-d adaptive average pooling, {layout}",
    )


register_window_ops(1, "(w,)", "(left, right)", "OIW")


# ---- builders -----------------------------------------------------------------------------------
def conv1d(
    data: RelaxExpr,
    weight: RelaxExpr,
    strides: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
    data_layout: str = "NCW",
    kernel_layout: str = "OIW",
    out_layout: str | None = None,
    out_dtype: str | DataType | None = None,
) -> Call:
    """1-d convolution of NCW ``data`` with an OIW ``weight``.

    Parameters
    ----------
    data, weight : RelaxExpr
        ``(N, C, W)`` data and ``(O, C // groups, KW)`` weight.
    strides, dilation : int or sequence of one int
        The window step and the kernel spacing.
    padding : int or sequence of 1 or 2 ints
        Zero padding as ``(left, right)``; one int pads both sides.
    groups : int
        Channel groups; ``C`` and ``O`` are multiples of it.
    data_layout, kernel_layout, out_layout : str
        Permutations of ``"NCW"``, ``"OIW"`` and ``"NCW"`` (``out_layout`` None: the data
        layout).
    out_dtype : str or DataType, optional
        The result (and accumulation) dtype; by default the operands' dtype.

    Returns
    -------
    Call
        A ``relax.nn.conv1d`` call of shape ``(N, O, out_w)``.
    """
    name = "relax.nn.conv1d"
    layouts = conv_layout_attrs(name, 1, data_layout, kernel_layout, out_layout)
    attrs = {
        "strides": _spatial(name, "strides", strides, 1),
        "padding": _padding(name, padding, 1),
        "dilation": _spatial(name, "dilation", dilation, 1),
        "groups": _groups(name, groups),
        "out_dtype": dtype_attr(name, out_dtype),
        **layouts,
    }
    return make_call(name, [data, weight], attrs)


def _pool(
    name: str,
    rank: int,
    data: RelaxExpr,
    window: tuple[Any, Any, Any, Any],
    ceil_mode: bool,
    count_include_pad: bool,
    layouts: tuple[str, str | None],
) -> Call:
    """A pooling call; ``window`` is (pool_size, strides, padding, dilation)."""
    stored = pool_layout_attrs(name, rank, *layouts)
    pool_size, strides, padding, dilation = window
    attrs = {
        "pool_size": _spatial(name, "pool_size", pool_size, rank),
        "strides": _spatial(name, "strides", strides, rank),
        "padding": _padding(name, padding, rank),
        "dilation": _spatial(name, "dilation", dilation, rank),
        "ceil_mode": bool(ceil_mode),
        "count_include_pad": bool(count_include_pad),
        **stored,
    }
    return make_call(name, [data], attrs)


def max_pool1d(
    data: RelaxExpr,
    pool_size: int | Sequence[int] = (1,),
    strides: int | Sequence[int] = (1,),
    padding: int | Sequence[int] = (0, 0),
    dilation: int | Sequence[int] = (1,),
    ceil_mode: bool = False,
    count_include_pad: bool = False,
    layout: str = "NCW",
    out_layout: str | None = None,
) -> Call:
    """1-d max pooling over NCW ``data``; padding never wins the maximum.

    Parameters as :func:`avg_pool1d` (``count_include_pad`` is recorded and has no effect).
    """
    return _pool(
        "relax.nn.max_pool1d", 1, data, (pool_size, strides, padding, dilation), ceil_mode,
        count_include_pad, (layout, out_layout),
    )  # fmt: skip


def avg_pool1d(
    data: RelaxExpr,
    pool_size: int | Sequence[int] = (1,),
    strides: int | Sequence[int] = (1,),
    padding: int | Sequence[int] = (0, 0),
    dilation: int | Sequence[int] = (1,),
    ceil_mode: bool = False,
    count_include_pad: bool = False,
    layout: str = "NCW",
    out_layout: str | None = None,
) -> Call:
    """1-d average pooling over NCW ``data``.

    Parameters
    ----------
    data : RelaxExpr
        ``(N, C, W)`` data.
    pool_size, strides, dilation : int or sequence of one int
        The window, its step and its spacing.
    padding : int or sequence of 1 or 2 ints
        ``(left, right)`` padding.
    ceil_mode : bool
        Round the output width up (a last, partial window).
    count_include_pad : bool
        Divide by the window size including padding (never the ceil_mode overhang).
    layout, out_layout : str
        Permutations of ``"NCW"`` (``out_layout`` None: ``layout``).

    Returns
    -------
    Call
        A ``relax.nn.avg_pool1d`` call of shape ``(N, C, out_w)``.
    """
    return _pool(
        "relax.nn.avg_pool1d", 1, data, (pool_size, strides, padding, dilation), ceil_mode,
        count_include_pad, (layout, out_layout),
    )  # fmt: skip


def adaptive_avg_pool1d(
    data: RelaxExpr,
    output_size: int | Sequence[int] | None = None,
    layout: str = "NCW",
    out_layout: str | None = None,
) -> Call:
    """Average pooling of NCW ``data`` to ``output_size`` columns (the input width when None).

    Output column ``j`` averages columns ``[j*W//OW, ceil((j+1)*W/OW))``.
    """
    name = "relax.nn.adaptive_avg_pool1d"
    layouts = pool_layout_attrs(name, 1, layout, out_layout)
    size = None if output_size is None else _spatial(name, "output_size", output_size, 1)
    return make_call(name, [data], {"output_size": size, **layouts})
