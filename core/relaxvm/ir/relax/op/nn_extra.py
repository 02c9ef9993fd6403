"""More neural-network ops (``relax.nn.*``): the parameterised activations (leakyrelu,
softplus, gelu_tanh, selu, prelu), inference-mode dropout, padding and pixel_shuffle.

Signatures, attribute names and defaults follow TVM's ``relax.op.nn``; :mod:`.nn` re-exports
every builder here, so they are reached as ``op.nn.leakyrelu`` and ``R.nn.leakyrelu``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ....runtime.dtype import DataTypeCode
from ...expr import IntImm
from ...op import add, floordiv, mul
from .._base import RelaxExpr
from ..expr import Call
from ..struct_info import StructInfo, TensorStructInfo, TupleStructInfo
from ._common import (
    as_int,
    as_int_tuple,
    dims_text,
    make_call,
    normalize_axis,
    prove_equal,
    prove_not_equal,
    same_shape,
    tensor,
)
from .registry import InferContext, OpError, register_op

PAD_MODES = ("constant", "edge", "reflect")


def _require_float(ctx: InferContext, info: TensorStructInfo, what: str) -> None:
    if info.dtype is not None and info.dtype.code not in (DataTypeCode.FLOAT, DataTypeCode.BFLOAT):
        raise ctx.type_error(f"{what} must have a float dtype, got {info.dtype}")


def _as_float(name: str, param: str, value: object) -> float:
    """A finite float attribute; an OpError naming ``param`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise OpError(f"{name}: {param} must be a number, got {value!r}")
    result = float(value)
    if not math.isfinite(result):
        raise OpError(f"{name}: {param} must be finite, got {value!r}")
    return result


# ---- inference ----------------------------------------------------------------------------------
def _infer_float_unary(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "data")
    _require_float(ctx, info, "data")
    return same_shape(info, info.dtype)


def _infer_pixel_shuffle(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "data")
    factor = ctx.attr(call, "upscale_factor", 1)
    if info.ndim != -1 and info.ndim < 3:
        raise ctx.error(f"data must have rank >= 3 (..., C, H, W), got shape {dims_text(info)}")
    values = info.shape_values
    if values is None:
        return tensor(None, info.dtype, info.ndim, like=info)
    channels = values[-3]
    square = factor * factor
    if isinstance(channels, IntImm) and channels.value % square:
        raise ctx.error(
            f"the {channels} channels of data with shape {dims_text(info)} are not a multiple "
            f"of upscale_factor ** 2 = {square}"
        )
    simplify = ctx.analyzer.simplify
    out = [
        *values[:-3],
        simplify(floordiv(channels, square)),
        simplify(mul(values[-2], factor)),
        simplify(mul(values[-1], factor)),
    ]
    return tensor(out, info.dtype, like=info)


def _infer_prelu(call: Call, ctx: InferContext) -> StructInfo:
    data = ctx.tensor_arg(call, 0, "data")
    alpha = ctx.tensor_arg(call, 1, "alpha")
    _require_float(ctx, data, "data")
    if alpha.ndim not in (-1, 1):
        raise ctx.error(f"alpha must be a 1-d tensor, got shape {dims_text(alpha)}")
    if data.dtype is not None and alpha.dtype is not None and alpha.dtype != data.dtype:
        raise ctx.error(f"alpha must have data's dtype {data.dtype}, got {alpha.dtype}")
    if data.ndim == -1:
        return same_shape(data, data.dtype)
    if data.ndim == 0:
        raise ctx.error("data must have rank >= 1, got a 0-d tensor")
    axis = normalize_axis(ctx, ctx.attr(call, "axis", 1), data.ndim)
    values, alpha_values = data.shape_values, alpha.shape_values
    if values is not None and alpha_values is not None:
        channels, slopes = values[axis], alpha_values[0]
        if not prove_equal(ctx, channels, slopes) and prove_not_equal(ctx, channels, slopes):
            raise ctx.error(
                f"alpha with shape {dims_text(alpha)} must have one slope per channel: data "
                f"with shape {dims_text(data)} has {channels} at axis {axis}"
            )
    return same_shape(data, data.dtype)


def _infer_dropout(call: Call, ctx: InferContext) -> StructInfo:
    # Any dtype, as TVM's op (the mask takes data's dtype).
    info = ctx.tensor_arg(call, 0, "data")
    out = same_shape(info, info.dtype)
    return TupleStructInfo([out, out])


def _infer_pad(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "data")
    pad_width = list(ctx.attr(call, "pad_width", ()))
    if info.ndim == -1:
        # The rank is fixed by pad_width (a before/after pair per axis).
        return tensor(None, info.dtype, len(pad_width) // 2, like=info)
    if len(pad_width) != 2 * info.ndim:
        raise ctx.error(
            f"pad_width must have 2 entries (before, after) per axis of data with shape "
            f"{dims_text(info)}, i.e. {2 * info.ndim}, got {len(pad_width)}: {pad_width}"
        )
    values = info.shape_values
    if values is None:
        return tensor(None, info.dtype, info.ndim, like=info)
    mode = ctx.attr(call, "pad_mode", "constant")
    out = []
    for axis, dim in enumerate(values):
        before, after = pad_width[2 * axis], pad_width[2 * axis + 1]
        if mode == "reflect" and isinstance(dim, IntImm) and max(before, after) >= dim.value:
            raise ctx.error(
                f"reflect padding of axis {axis} needs pad widths below its extent {dim}, "
                f"got ({before}, {after})"
            )
        if mode == "edge" and isinstance(dim, IntImm) and dim.value == 0 and before + after:
            raise ctx.error(f"edge padding of axis {axis} needs a non-empty axis, got extent 0")
        out.append(ctx.analyzer.simplify(add(dim, IntImm(before + after))))
    return tensor(out, info.dtype, like=info)


register_op(
    "relax.nn.leakyrelu",
    num_inputs=1,
    infer=_infer_float_unary,
    attrs={"alpha": "the slope of the negative part"},
    doc="``data if data > 0 else alpha * data``",
)
register_op(
    "relax.nn.softplus",
    num_inputs=1,
    infer=_infer_float_unary,
    attrs={"beta": "sharpness", "threshold": "linear above beta * data > threshold"},
    doc="``log(1 + exp(beta * data)) / beta``",
)
register_op(
    "relax.nn.gelu_tanh",
    num_inputs=1,
    infer=_infer_float_unary,
    doc="GELU with the tanh approximation",
)
register_op(
    "relax.nn.selu",
    num_inputs=1,
    infer=_infer_float_unary,
    doc="scaled exponential linear unit",
)
register_op(
    "relax.nn.pixel_shuffle",
    num_inputs=1,
    infer=_infer_pixel_shuffle,
    attrs={"upscale_factor": "r: (..., C * r * r, H, W) -> (..., C, H * r, W * r)"},
    doc="depth-to-space rearrangement (PyTorch's pixel_shuffle)",
)
register_op(
    "relax.nn.prelu",
    num_inputs=2,
    infer=_infer_prelu,
    attrs={"axis": "the channel axis alpha runs along"},
    doc="``data if data > 0 else alpha[channel] * data``",
)
register_op(
    "relax.nn.dropout",
    num_inputs=1,
    infer=_infer_dropout,
    attrs={"rate": "the fraction dropped in training"},
    doc="dropout; inference semantics: returns (data, mask of ones)",
)
register_op(
    "relax.nn.pad",
    num_inputs=1,
    infer=_infer_pad,
    attrs={
        "pad_width": "(before_0, after_0, ..., before_N, after_N)",
        "pad_mode": "constant, edge or reflect",
        "pad_value": "the fill value of constant padding",
    },
    doc="pad every axis before and after",
)


# ---- builders -----------------------------------------------------------------------------------
def leakyrelu(data: RelaxExpr, alpha: float = 0.01) -> Call:
    """Leaky rectified linear unit.

    Parameters
    ----------
    data : RelaxExpr
        A float tensor.
    alpha : float
        The slope for ``data <= 0``.

    Returns
    -------
    Call
        ``data if data > 0 else alpha * data`` (NaN stays NaN).
    """
    name = "relax.nn.leakyrelu"
    return make_call(name, [data], {"alpha": _as_float(name, "alpha", alpha)})


def softplus(data: RelaxExpr, beta: float = 1.0, threshold: float = 20.0) -> Call:
    """Softplus, ``log(1 + exp(beta * data)) / beta``, linear where it is numerically exact.

    Parameters
    ----------
    data : RelaxExpr
        A float tensor.
    beta : float
        The sharpness of the transition; nonzero.
    threshold : float
        Where ``beta * data > threshold`` the result is ``data`` itself (as PyTorch and TVM).

    Returns
    -------
    Call
        A tensor of ``data``'s shape and dtype.
    """
    name = "relax.nn.softplus"
    beta = _as_float(name, "beta", beta)
    if beta == 0.0:
        raise OpError(f"{name}: beta must be nonzero, got {beta}")
    return make_call(
        name, [data], {"beta": beta, "threshold": _as_float(name, "threshold", threshold)}
    )


def gelu_tanh(data: RelaxExpr) -> Call:
    """GELU with the tanh approximation,
    ``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))`` (float tensors)."""
    return make_call("relax.nn.gelu_tanh", [data])


def selu(data: RelaxExpr) -> Call:
    """``scale * (x if x > 0 else alpha * (exp(x) - 1))`` with ``alpha ~ 1.6733`` and
    ``scale ~ 1.0507`` (float tensors)."""
    return make_call("relax.nn.selu", [data])


def pixel_shuffle(data: RelaxExpr, upscale_factor: int) -> Call:
    """Rearrange ``(..., C * r * r, H, W)`` into ``(..., C, H * r, W * r)`` with ``r`` the
    ``upscale_factor``: ``out[..., c, h, w] = data[..., c*r*r + (h%r)*r + w%r, h//r, w//r]``.

    Parameters
    ----------
    data : RelaxExpr
        A tensor of rank >= 3 whose third-last extent is a multiple of ``r * r``.
    upscale_factor : int
        ``r``, at least 1.

    Returns
    -------
    Call
        A ``relax.nn.pixel_shuffle`` call.
    """
    name = "relax.nn.pixel_shuffle"
    factor = as_int(name, "upscale_factor", upscale_factor)
    if factor < 1:
        raise OpError(f"{name}: upscale_factor must be >= 1, got {factor}")
    return make_call(name, [data], {"upscale_factor": factor})


def prelu(data: RelaxExpr, alpha: RelaxExpr, axis: int = 1) -> Call:
    """Parametric ReLU: a learned slope per channel.

    Parameters
    ----------
    data : RelaxExpr
        A float tensor.
    alpha : RelaxExpr
        A 1-d tensor with one slope per entry of ``data``'s ``axis``.
    axis : int
        The channel axis (negative counts from the end).

    Returns
    -------
    Call
        ``data if data > 0 else alpha[c] * data`` with ``c`` the index along ``axis``.
    """
    name = "relax.nn.prelu"
    return make_call(name, [data, alpha], {"axis": as_int(name, "axis", axis)})


def dropout(data: RelaxExpr, rate: float = 0.5) -> Call:
    """Dropout, as TVM's op: a 2-tuple ``(output, mask)`` of tensors like ``data``.

    relaxvm compiles inference graphs, so the legalization is the inference form: the output is
    ``data`` unchanged and the mask is all ones (every element kept). ``rate`` is recorded for
    importers and printing.

    Parameters
    ----------
    data : RelaxExpr
        A tensor of any dtype.
    rate : float
        The fraction of elements a training run would drop, in ``[0, 1]``.

    Returns
    -------
    Call
        A call whose result is a tuple of two tensors.
    """
    name = "relax.nn.dropout"
    rate = _as_float(name, "rate", rate)
    if not 0.0 <= rate <= 1.0:
        raise OpError(f"{name}: rate must be in [0, 1], got {rate}")
    return make_call(name, [data], {"rate": rate})


def _pair(name: str, pair: object) -> tuple[int, int]:
    values = as_int_tuple(name, "pad_width", pair)
    if isinstance(pair, int) or len(values) != 2:
        raise OpError(f"{name}: each pad_width pair must be (before, after), got {pair!r}")
    return values[0], values[1]


def pad(
    data: RelaxExpr,
    pad_width: Sequence[int] | Sequence[Sequence[int]],
    pad_mode: str = "constant",
    pad_value: float = 0.0,
) -> Call:
    """Pad every axis of ``data``.

    Parameters
    ----------
    data : RelaxExpr
        The tensor to pad.
    pad_width : sequence of int
        ``(before_0, after_0, before_1, after_1, ...)``: two non-negative widths per axis
        (numpy's ``((before_0, after_0), ...)`` is accepted too).
    pad_mode : str
        ``"constant"`` fills with ``pad_value``; ``"edge"`` repeats the edge element;
        ``"reflect"`` mirrors around the edge element (numpy's ``reflect``, widths below the
        extent).
    pad_value : float
        The fill value of ``"constant"`` padding, cast to ``data``'s dtype.

    Returns
    -------
    Call
        A tensor with extent ``d + before + after`` on each axis.
    """
    name = "relax.nn.pad"
    if not isinstance(pad_width, int) and any(isinstance(w, Sequence) for w in pad_width):
        # numpy's spelling, ((before, after), ...), flattened to TVM's.
        pad_width = [w for pair in pad_width for w in _pair(name, pair)]
    widths = as_int_tuple(name, "pad_width", pad_width)
    if isinstance(pad_width, int) or any(w < 0 for w in widths):
        raise OpError(
            f"{name}: pad_width must be a list of non-negative ints (before, after per axis), "
            f"got {pad_width!r}"
        )
    if len(widths) % 2:
        raise OpError(f"{name}: pad_width must have an even length, got {list(widths)}")
    if pad_mode not in PAD_MODES:
        raise OpError(f"{name}: pad_mode must be one of {', '.join(PAD_MODES)}, got {pad_mode!r}")
    attrs = {
        "pad_width": widths,
        "pad_mode": pad_mode,
        "pad_value": _as_float(name, "pad_value", pad_value),
    }
    return make_call(name, [data], attrs)


__all__ = [
    "dropout",
    "gelu_tanh",
    "leakyrelu",
    "pad",
    "pixel_shuffle",
    "prelu",
    "selu",
    "softplus",
]
