"""Legalizations of the parameterised activations (leakyrelu, softplus, gelu_tanh, prelu),
inference-mode dropout, pad, group_norm, instance_norm and median.

The activations select on ``x > 0`` (not ``max``), as TVM's topi does: a NaN input fails the
comparison and takes the multiplied branch, so NaN propagates, and ``-0.0`` stays ``-0.0``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from relaxvm.ir import IntImm, PrimExpr, cast, select
from relaxvm.ir import op as sop
from relaxvm.ir.dtype import dtype_int_range, is_bool_dtype, is_float_dtype
from relaxvm.ir.relax import BlockBuilder, Call, RelaxExpr
from relaxvm.ir.tir import intrin as T
from relaxvm.ir.tir import te
from relaxvm.runtime.dtype import DataType

from ._kernel import (
    LegalizationError,
    OpPattern,
    attr,
    call_te,
    legalizes,
    op_name,
    out_tensor_sinfo,
    product,
    shape_of,
    tensor_arg,
    unravel_index,
)
from .reduction import normalize_axes

#: SELU's constants (Klambauer et al. 2017), as PyTorch and TVM spell them.
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946

__all__: list[str] = []


def _unary(bb: BlockBuilder, call: Call, name: str, fn: Any) -> RelaxExpr:
    shape = shape_of(tensor_arg(call, 0, "data"))

    def kernel(x: te.Tensor) -> te.Tensor:
        return te.compute(shape, lambda *i: fn(x[i]), name=f"T_{name}")

    return call_te(
        bb, kernel, call.args[0], primfunc_name_hint=name,
        op_pattern=OpPattern.ELEMWISE, op=op_name(call),
    )  # fmt: skip


@legalizes("relax.nn.leakyrelu")
def legalize_leakyrelu(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``x if x > 0 else alpha * x``."""
    alpha = float(attr(call, "alpha", 0.01))

    def fn(x: PrimExpr) -> PrimExpr:
        return select(sop.greater(x, sop.const(0, x.dtype)), x, x * sop.const(alpha, x.dtype))

    return _unary(bb, call, "leakyrelu", fn)


@legalizes("relax.nn.softplus")
def legalize_softplus(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``x if beta * x > threshold else log(1 + exp(beta * x)) / beta``.

    There is no ``log1p`` intrinsic, so the soft branch is ``log(1 + exp(.))``: for very
    negative inputs it loses the tiny result's relative precision (absolute error about one
    ulp of 1), like TVM's topi.
    """
    beta = float(attr(call, "beta", 1.0))
    threshold = float(attr(call, "threshold", 20.0))

    def fn(x: PrimExpr) -> PrimExpr:
        scaled = x * sop.const(beta, x.dtype)
        soft = T.log(sop.const(1.0, x.dtype) + T.exp(scaled)) / sop.const(beta, x.dtype)
        return select(sop.greater(scaled, sop.const(threshold, x.dtype)), x, soft)

    return _unary(bb, call, "softplus", fn)


@legalizes("relax.nn.gelu_tanh")
def legalize_gelu_tanh(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))``."""

    def fn(x: PrimExpr) -> PrimExpr:
        c = sop.const(math.sqrt(2 / math.pi), x.dtype)
        inner = c * (x + sop.const(0.044715, x.dtype) * x * x * x)
        return sop.const(0.5, x.dtype) * x * (sop.const(1.0, x.dtype) + T.tanh(inner))

    return _unary(bb, call, "gelu_tanh", fn)


@legalizes("relax.nn.selu")
def legalize_selu(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``scale * (x if x > 0 else alpha * (exp(x) - 1))``; NaN takes the exp branch."""

    def fn(x: PrimExpr) -> PrimExpr:
        alpha = sop.const(SELU_ALPHA, x.dtype)
        scale = sop.const(SELU_SCALE, x.dtype)
        negative = alpha * (T.exp(x) - sop.const(1.0, x.dtype))
        return scale * select(sop.greater(x, sop.const(0, x.dtype)), x, negative)

    return _unary(bb, call, "selu", fn)


@legalizes("relax.nn.pixel_shuffle")
def legalize_pixel_shuffle(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``out[..., c, h, w] = data[..., c*r*r + (h%r)*r + w%r, h//r, w//r]`` (an index map)."""
    out_shape = shape_of(out_tensor_sinfo(call))
    tensor_arg(call, 0, "data")
    r = int(attr(call, "upscale_factor", 1))

    def kernel(x: te.Tensor) -> te.Tensor:
        def body(*i: Any) -> PrimExpr:
            c, h, w = i[-3], i[-2], i[-1]
            channel = sop.add(
                sop.mul(c, r * r),
                sop.add(sop.mul(sop.floormod(h, r), r), sop.floormod(w, r)),
            )
            at = (*i[:-3], channel, sop.floordiv(h, r), sop.floordiv(w, r))
            return x[at]

        return te.compute(out_shape, body, name="T_pixel_shuffle")

    return call_te(
        bb, kernel, call.args[0], primfunc_name_hint="pixel_shuffle",
        op_pattern=OpPattern.INJECTIVE, op=op_name(call),
    )  # fmt: skip


@legalizes("relax.nn.prelu")
def legalize_prelu(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``x if x > 0 else alpha[c] * x`` with ``c`` the index along ``axis``."""
    shape = shape_of(tensor_arg(call, 0, "data"))
    tensor_arg(call, 1, "alpha")
    (axis,) = normalize_axes(call, [attr(call, "axis", 1)], len(shape))

    def kernel(x: te.Tensor, alpha: te.Tensor) -> te.Tensor:
        def body(*i: Any) -> PrimExpr:
            value = x[i]
            positive = sop.greater(value, sop.const(0, x.dtype))
            return select(positive, value, value * alpha[i[axis]])

        return te.compute(shape, body, name="T_prelu")

    return call_te(
        bb, kernel, call.args[0], call.args[1], primfunc_name_hint="prelu",
        op_pattern=OpPattern.BROADCAST, op=op_name(call),
    )  # fmt: skip


@legalizes("relax.nn.dropout")
def legalize_dropout(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """Inference dropout: ``(x, ones_like(x))``, one kernel with two outputs.

    TVM leaves the op to frontends (its legalization keeps the call); a compiled inference
    graph needs a kernel, and at inference nothing is dropped.
    """
    shape = shape_of(tensor_arg(call, 0, "data"))

    def kernel(x: te.Tensor) -> list[te.Tensor]:
        out = te.compute(shape, lambda *i: x[i], name="T_dropout")
        mask = te.compute(shape, lambda *i: sop.const(1, x.dtype), name="T_dropout_mask")
        return [out, mask]

    return call_te(
        bb, kernel, call.args[0], primfunc_name_hint="dropout",
        op_pattern=OpPattern.INJECTIVE, op=op_name(call),
    )  # fmt: skip


def _fill(value: float, dtype: DataType) -> PrimExpr:
    """``pad_value`` in ``dtype``: as numpy's ``np.pad(..., constant_values=v)`` casts it."""
    if is_float_dtype(dtype):
        return sop.const(value, dtype)
    if is_bool_dtype(dtype):
        return sop.const(bool(value), dtype)
    low, high = dtype_int_range(dtype)
    # Truncate toward zero, then wrap to the type's range (a C cast of an in-range float).
    span = high - low + 1
    number = (int(value) - low) % span + low
    return sop.const(number, dtype)


@legalizes("relax.nn.pad")
def legalize_pad(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``constant``: the data inside, ``pad_value`` outside; ``edge``: the index clamped into
    the data; ``reflect``: the index mirrored about the first and last element (numpy)."""
    in_shape = shape_of(tensor_arg(call, 0, "data"))
    out_shape = shape_of(out_tensor_sinfo(call))
    widths = list(attr(call, "pad_width", ()))
    mode = str(attr(call, "pad_mode", "constant"))
    value = float(attr(call, "pad_value", 0.0))
    if len(widths) != 2 * len(in_shape):
        raise LegalizationError(f"{op_name(call)}: pad_width {widths} does not match the rank")
    befores = widths[0::2]

    def source(i: Any, axis: int) -> PrimExpr:
        n = in_shape[axis]
        j = sop.sub(i, befores[axis])
        if mode == "edge":
            return sop.min_expr(sop.max_expr(j, 0), sop.sub(n, 1))
        if mode == "reflect":
            j = select(sop.less(j, 0), sop.neg(j), j)
            j = select(sop.greater_equal(j, n), sop.sub(sop.mul(2, sop.sub(n, 1)), j), j)
            # A symbolic extent too small for the widths would read outside: clamp (the
            # static case is an inference error).
            return sop.min_expr(sop.max_expr(j, 0), sop.sub(n, 1))
        return j

    def kernel(x: te.Tensor) -> te.Tensor:
        def body(*i: Any) -> PrimExpr:
            idx = tuple(source(i[axis], axis) for axis in range(len(in_shape)))
            if mode != "constant":
                return x[idx]
            inside: PrimExpr = sop.const(True, "bool")
            for axis, j in enumerate(idx):
                ok = sop.logical_and(sop.greater_equal(j, 0), sop.less(j, in_shape[axis]))
                inside = sop.logical_and(inside, ok)
            return T.if_then_else(inside, x[idx], _fill(value, x.dtype))

        return te.compute(out_shape, body, name="T_pad")

    return call_te(
        bb, kernel, call.args[0], primfunc_name_hint="pad",
        op_pattern=OpPattern.INJECTIVE, op=op_name(call),
    )  # fmt: skip


# ---- group_norm / instance_norm ----------------------------------------------------------------
def _channel_norm(bb: BlockBuilder, call: Call, grouped: bool) -> RelaxExpr:
    """Statistics per (instance, group) over ``axes`` and the group's channels, two-pass
    (a mean stage, then the mean of squared deviations), then the per-channel affine step.

    Instance norm is the case of one channel per group: its statistics keep the channel axis.
    """
    shape = shape_of(tensor_arg(call, 0, "data"))
    tensor_arg(call, 1, "gamma")
    tensor_arg(call, 2, "beta")
    ndim = len(shape)
    (ch,) = normalize_axes(call, [attr(call, "channel_axis")], ndim)
    axes = normalize_axes(call, list(attr(call, "axes", ())), ndim)
    eps = float(attr(call, "epsilon", 1e-5))
    center, scale = bool(attr(call, "center", True)), bool(attr(call, "scale", True))
    groups = int(attr(call, "num_groups", 1)) if grouped else 0
    group_size = sop.floordiv(shape[ch], groups) if grouped else None
    keep = [
        IntImm("int64", 1) if a in axes else (IntImm("int64", groups) if a == ch and grouped else d)
        for a, d in enumerate(shape)
    ]
    count = product([shape[a] for a in axes])
    if group_size is not None:
        count = sop.mul(count, group_size)

    def source(idx: Sequence[Any], red: dict[int, Any], rc: Any) -> tuple[Any, ...]:
        out = []
        for a in range(ndim):
            if a in axes:
                out.append(red[a])
            elif a == ch and group_size is not None:
                out.append(sop.add(sop.mul(idx[a], group_size), rc.var))
            else:
                out.append(idx[a])
        return tuple(out)

    def stat_index(i: Sequence[Any]) -> tuple[Any, ...]:
        out: list[Any] = []
        for a in range(ndim):
            if a in axes:
                out.append(0)
            elif a == ch and group_size is not None:
                out.append(sop.floordiv(i[a], group_size))
            else:
                out.append(i[a])
        return tuple(out)

    def kernel(x: te.Tensor, gamma: te.Tensor, beta: te.Tensor) -> te.Tensor:
        def reduced(value: Any, name: str) -> te.Tensor:
            def body(*idx: Any) -> Any:
                red = {a: te.reduce_axis((0, shape[a]), name=f"k{a}") for a in axes}
                extra = []
                rc = None
                if group_size is not None:
                    rc = te.reduce_axis((0, group_size), name="rc")
                    extra = [rc]
                return te.sum(value(idx, source(idx, red, rc)), axis=[*red.values(), *extra])

            total = te.compute(keep, body, name=f"{name}_sum")
            n = cast(count, x.dtype)
            return te.compute(keep, lambda *i: total[i] / n, name=name)

        mean = reduced(lambda idx, src: x[src], "T_norm_mean")

        def sq_dev(idx: Sequence[Any], src: tuple[Any, ...]) -> PrimExpr:
            dev = x[src] - mean[tuple(idx)]
            return dev * dev

        var = reduced(sq_dev, "T_norm_var")

        def body(*i: Any) -> PrimExpr:
            s = stat_index(i)
            value = (x[i] - mean[s]) * T.rsqrt(var[s] + sop.const(eps, x.dtype))
            if scale:
                value = value * gamma[i[ch]]
            if center:
                value = value + beta[i[ch]]
            return value

        return te.compute(shape, body, name="T_norm")

    name = "group_norm" if grouped else "instance_norm"
    return call_te(
        bb, kernel, *call.args[:3], primfunc_name_hint=name,
        op_pattern=OpPattern.OUT_EWISE_FUSABLE, op=op_name(call),
    )  # fmt: skip


@legalizes("relax.nn.group_norm")
def legalize_group_norm(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """Normalize each group of ``num_groups`` channels over the group and ``axes``."""
    return _channel_norm(bb, call, grouped=True)


@legalizes("relax.nn.instance_norm")
def legalize_instance_norm(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """Normalize each channel of each instance over ``axes``."""
    return _channel_norm(bb, call, grouped=False)


# ---- median -------------------------------------------------------------------------------------
def _at(outer: Sequence[Any], position: Any) -> tuple[Any, ...]:
    """The index ``(*outer, position)`` of a line tensor."""
    return (*outer, position)


@legalizes("relax.median")
def legalize_median(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """The lower median by rank counting, with no sort.

    The reduced elements of each output form a line of ``L`` values (flattened in row-major
    order). An element's stable rank is the number of elements below it plus the number of
    equal ones before it; the median is the element of rank ``(L - 1) // 2``, which is what a
    stable sort would put there. That costs ``L * L`` comparisons per line, fine for the
    reductions models use (a sort kernel would be the next step for long lines). A NaN in the
    line gives NaN at the first NaN's position (numpy and PyTorch propagate it); an empty line
    gives NaN (0 for integers) at position 0.
    """
    shape = shape_of(tensor_arg(call, 0, "data"))
    ndim = len(shape)
    raw_axes = attr(call, "axis")
    axes = normalize_axes(call, None if raw_axes is None else list(raw_axes), ndim)
    keepdims = bool(attr(call, "keepdims", False))
    with_index = raw_axes is not None and len(raw_axes) == 1
    outer = [a for a in range(ndim) if a not in axes]
    outer_shape = [shape[a] for a in outer]
    red_shape = [shape[a] for a in axes]
    length = product(red_shape)
    out_shape = [
        IntImm("int64", 1) if a in axes else shape[a] for a in range(ndim) if keepdims or a in outer
    ]

    def outer_of(i: Sequence[Any]) -> list[Any]:
        """The outer index of an output index."""
        if keepdims:
            return [i[a] for a in outer]
        return list(i)

    def kernel(x: te.Tensor) -> Any:
        float_data = is_float_dtype(x.dtype)

        def line_body(*i: Any) -> PrimExpr:
            red = iter(unravel_index(i[-1], red_shape))
            rest = iter(i[:-1])
            return x[tuple(next(red) if a in axes else next(rest) for a in range(ndim))]

        line = te.compute([*outer_shape, length], line_body, name="T_median_line")

        def rank_body(*i: Any) -> Any:
            o, a = list(i[:-1]), i[-1]
            b = te.reduce_axis((0, length), name="b")
            mine, other = line[_at(o, a)], line[_at(o, b)]
            below = sop.logical_or(
                sop.less(other, mine),
                sop.logical_and(sop.equal(other, mine), sop.less(b.var, a)),
            )
            return te.sum(cast(below, "int64"), axis=[b])

        rank = te.compute([*outer_shape, length], rank_body, name="T_median_rank")
        middle = sop.floordiv(sop.sub(length, 1), 2)

        def pos_body(*o: Any) -> Any:
            a = te.reduce_axis((0, length), name="a")
            hit = sop.equal(rank[_at(o, a)], middle)
            return te.sum(select(hit, a.var, IntImm("int64", 0)), axis=[a])

        pos = te.compute(outer_shape, pos_body, name="T_median_pos")
        if float_data:

            def nan_body(*o: Any) -> Any:
                b = te.reduce_axis((0, length), name="b")
                value = line[_at(o, b)]
                return te.min(select(sop.not_equal(value, value), b.var, length), axis=[b])

            first_nan = te.compute(outer_shape, nan_body, name="T_median_nan")
            chosen = te.compute(
                outer_shape,
                lambda *o: select(sop.less(first_nan[o], length), first_nan[o], pos[o]),
                name="T_median_index",
            )
        else:
            chosen = pos
        empty = sop.const(math.nan, x.dtype) if float_data else sop.const(0, x.dtype)

        def value_body(*i: Any) -> PrimExpr:
            o = tuple(outer_of(i))
            inside = sop.greater(length, 0)
            return T.if_then_else(inside, line[_at(o, chosen[o])], empty)

        values = te.compute(out_shape, value_body, name="T_median")
        if not with_index:
            return values
        indices = te.compute(out_shape, lambda *i: chosen[tuple(outer_of(i))], name="T_median_idx")
        return [values, indices]

    return call_te(
        bb, kernel, call.args[0], primfunc_name_hint="median",
        op_pattern=OpPattern.OPAQUE, op=op_name(call),
    )  # fmt: skip
