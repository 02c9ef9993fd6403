"""1-d and 3-d convolution and pooling and the transposed convolutions as plain TE
computes, written once for any spatial rank.

conv1d/conv3d are a zero-padding stage plus one reduction over (input channel, kernel
positions), as conv2d's. The transposed convolutions are written in the gather form: output position ``y``
reads input position ``(y + pad_begin - k * dilation) / stride`` where that is an integer
inside the data, which needs no dilated copy of the input and no (possibly negative) padding.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from relaxvm.ir import PrimExpr, cast
from relaxvm.ir import op as sop
from relaxvm.ir.dtype import is_float_dtype
from relaxvm.ir.relax import BlockBuilder, Call, RelaxExpr
from relaxvm.ir.tir import intrin as T
from relaxvm.ir.tir import te

from ._kernel import (
    LegalizationError,
    OpPattern,
    attr,
    call_te,
    legalizes,
    op_name,
    out_tensor_sinfo,
    shape_of,
    tensor_arg,
)
from .elementwise import cast_to
from .nn import _lowest
from .nn_layouts import conv_layouts, conv_transpose_layouts, in_any_layout, pool_layouts

__all__: list[str] = []


def _inside(index: PrimExpr, extent: PrimExpr) -> PrimExpr:
    return sop.logical_and(sop.greater_equal(index, 0), sop.less(index, extent))


def _all(conditions: Sequence[PrimExpr]) -> PrimExpr:
    result = conditions[0]
    for cond in conditions[1:]:
        result = sop.logical_and(result, cond)
    return result


@legalizes("relax.nn.conv1d", "relax.nn.conv3d")
@in_any_layout(conv_layouts)
def legalize_conv_nd(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """A zero-padding stage, then ``sum over (rc, rk...)`` of ``pad * weight`` per group."""
    d_shape = shape_of(tensor_arg(call, 0, "data"))
    w_shape = shape_of(tensor_arg(call, 1, "weight"))
    out = out_tensor_sinfo(call)
    out_shape, out_dtype = shape_of(out), out.dtype
    if out_dtype is None:
        raise LegalizationError(f"{op_name(call)}: the result dtype is unknown")
    rank = len(d_shape) - 2
    strides = tuple(attr(call, "strides", (1,) * rank))
    dilation = tuple(attr(call, "dilation", (1,) * rank))
    pads = tuple(attr(call, "padding", (0,) * (2 * rank)))
    groups = int(attr(call, "groups", 1))
    ci = w_shape[1]
    out_per_group = sop.floordiv(w_shape[0], groups)

    def kernel(data: te.Tensor, weight: te.Tensor) -> te.Tensor:
        src = data
        if any(pads):
            padded = [d_shape[0], d_shape[1]] + [
                d_shape[2 + a] + pads[a] + pads[rank + a] for a in range(rank)
            ]

            def pad_body(b: Any, ch: Any, *pos: Any) -> PrimExpr:
                index = [sop.sub(pos[a], pads[a]) for a in range(rank)]
                inside = _all([_inside(i, d_shape[2 + a]) for a, i in enumerate(index)])
                at = (b, ch, *index)
                return T.if_then_else(inside, data[at], sop.const(0, data.dtype))

            src = te.compute(padded, pad_body, name="pad_temp")

        def body(b: Any, oc: Any, *pos: Any) -> Any:
            rc = te.reduce_axis((0, ci), name="rc")
            rk = [te.reduce_axis((0, w_shape[2 + a]), name=f"rk{a}") for a in range(rank)]
            ic = (
                rc if groups == 1 else sop.add(sop.mul(sop.floordiv(oc, out_per_group), ci), rc.var)
            )
            at = (b, ic, *(pos[a] * strides[a] + rk[a] * dilation[a] for a in range(rank)))
            w_at = (oc, rc, *rk)
            return te.sum(
                cast_to(src[at], out_dtype) * cast_to(weight[w_at], out_dtype), axis=[rc, *rk]
            )

        return te.compute(out_shape, body, name=f"conv{rank}d")

    return call_te(
        bb, kernel, call.args[0], call.args[1], primfunc_name_hint=op_name(call).split(".")[-1],
        op_pattern=OpPattern.OUT_EWISE_FUSABLE, op=op_name(call),
    )  # fmt: skip


@legalizes("relax.nn.conv1d_transpose", "relax.nn.conv2d_transpose", "relax.nn.conv3d_transpose")
@in_any_layout(conv_transpose_layouts)
def legalize_conv_transpose(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``out[b, oc, y] = sum over (rc, k) of data[b, g*C/G + rc, (y + pad - k*dil) / stride]
    * weight[g*C/G + rc, oc % (O/G), k]`` where the division is exact and in bounds."""
    d_shape = shape_of(tensor_arg(call, 0, "data"))
    w_shape = shape_of(tensor_arg(call, 1, "weight"))
    out = out_tensor_sinfo(call)
    out_shape, out_dtype = shape_of(out), out.dtype
    if out_dtype is None:
        raise LegalizationError(f"{op_name(call)}: the result dtype is unknown")
    rank = len(d_shape) - 2
    strides = tuple(attr(call, "strides", (1,) * rank))
    dilation = tuple(attr(call, "dilation", (1,) * rank))
    pads = tuple(attr(call, "padding", (0,) * (2 * rank)))
    groups = int(attr(call, "groups", 1))
    in_per_group = sop.floordiv(d_shape[1], groups)
    out_per_group = w_shape[1]

    def kernel(data: te.Tensor, weight: te.Tensor) -> te.Tensor:
        zero = sop.const(0, out_dtype)

        def body(b: Any, oc: Any, *pos: Any) -> Any:
            rc = te.reduce_axis((0, in_per_group), name="rc")
            rk = [te.reduce_axis((0, w_shape[2 + a]), name=f"rk{a}") for a in range(rank)]
            ic = (
                rc
                if groups == 1
                else sop.add(sop.mul(sop.floordiv(oc, out_per_group), in_per_group), rc.var)
            )
            conds, src = [], []
            for a in range(rank):
                shifted = sop.sub(sop.add(pos[a], pads[a]), rk[a] * dilation[a])
                index = sop.floordiv(shifted, strides[a]) if strides[a] > 1 else shifted
                if strides[a] > 1:
                    conds.append(sop.equal(sop.floormod(shifted, strides[a]), 0))
                conds.append(_inside(index, d_shape[2 + a]))
                src.append(index)
            data_index = (b, ic, *src)
            weight_index = (ic, sop.floormod(oc, out_per_group), *rk)
            value = cast_to(data[data_index], out_dtype) * cast_to(weight[weight_index], out_dtype)
            return te.sum(T.if_then_else(_all(conds), value, zero), axis=[rc, *rk])

        return te.compute(out_shape, body, name=f"conv{rank}d_transpose_nchw")

    return call_te(
        bb, kernel, call.args[0], call.args[1], primfunc_name_hint=op_name(call).split(".")[-1],
        op_pattern=OpPattern.OUT_EWISE_FUSABLE, op=op_name(call),
    )  # fmt: skip


def _pool_setup(call: Call) -> tuple[list[PrimExpr], list[PrimExpr], int, Any, Any, Any, Any]:
    """(data shape, output shape, rank, pool_size, strides, dilation, padding)."""
    d_shape = shape_of(tensor_arg(call, 0, "data"))
    out_shape = shape_of(out_tensor_sinfo(call))
    rank = len(d_shape) - 2
    sizes = tuple(attr(call, "pool_size", (1,) * rank))
    strides = tuple(attr(call, "strides", (1,) * rank))
    dilation = tuple(attr(call, "dilation", (1,) * rank))
    pads = tuple(attr(call, "padding", (0,) * (2 * rank)))
    return d_shape, out_shape, rank, sizes, strides, dilation, pads


@legalizes("relax.nn.max_pool1d", "relax.nn.max_pool3d")
@in_any_layout(pool_layouts)
def legalize_max_pool_nd(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """The maximum over each window; padding (and ceil_mode overhang) never wins."""
    d_shape, out_shape, rank, sizes, strides, dilation, pads = _pool_setup(call)

    def kernel(data: te.Tensor) -> te.Tensor:
        def body(b: Any, ch: Any, *pos: Any) -> Any:
            rk = [te.reduce_axis((0, sizes[a]), name=f"rk{a}") for a in range(rank)]
            index = [
                sop.sub(sop.add(pos[a] * strides[a], rk[a] * dilation[a]), pads[a])
                for a in range(rank)
            ]
            inside = _all([_inside(i, d_shape[2 + a]) for a, i in enumerate(index)])
            at = (b, ch, *index)
            return te.max(T.if_then_else(inside, data[at], _lowest(data.dtype)), axis=rk)

        return te.compute(out_shape, body, name="pool_max")

    return call_te(
        bb, kernel, call.args[0], primfunc_name_hint=op_name(call).split(".")[-1],
        op_pattern=OpPattern.OUT_EWISE_FUSABLE, op=op_name(call),
    )  # fmt: skip


@legalizes("relax.nn.avg_pool1d", "relax.nn.avg_pool3d")
@in_any_layout(pool_layouts)
def legalize_avg_pool_nd(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """The mean over each window; the divisor counts the data (and, with
    ``count_include_pad``, the padding) inside the window, never the ceil_mode overhang."""
    d_shape, out_shape, rank, sizes, strides, dilation, pads = _pool_setup(call)
    include_pad = bool(attr(call, "count_include_pad", False))

    def kernel(data: te.Tensor) -> te.Tensor:
        zero = sop.const(0, data.dtype)

        def starts(pos: Sequence[Any], rk: Sequence[Any]) -> list[PrimExpr]:
            return [sop.add(pos[a] * strides[a], rk[a] * dilation[a]) for a in range(rank)]

        def sum_body(b: Any, ch: Any, *pos: Any) -> Any:
            rk = [te.reduce_axis((0, sizes[a]), name=f"rk{a}") for a in range(rank)]
            index = [sop.sub(p, pads[a]) for a, p in enumerate(starts(pos, rk))]
            inside = _all([_inside(i, d_shape[2 + a]) for a, i in enumerate(index)])
            at = (b, ch, *index)
            return te.sum(T.if_then_else(inside, data[at], zero), axis=rk)

        total = te.compute(out_shape, sum_body, name="pool_sum")

        def count_body(*pos: Any) -> Any:
            rk = [te.reduce_axis((0, sizes[a]), name=f"rk{a}") for a in range(rank)]
            conds = []
            for a, p in enumerate(starts(pos, rk)):
                if include_pad:
                    conds.append(_inside(p, d_shape[2 + a] + pads[a] + pads[rank + a]))
                else:
                    conds.append(_inside(sop.sub(p, pads[a]), d_shape[2 + a]))
            return te.sum(cast(_all(conds), "int64"), axis=rk)

        count = te.compute(out_shape[2:], count_body, name="pool_count")

        def avg(b: Any, ch: Any, *pos: Any) -> PrimExpr:
            n = sop.max_expr(count[pos], 1)
            at = (b, ch, *pos)
            if is_float_dtype(data.dtype):
                return total[at] / cast(n, data.dtype)
            return sop.floordiv(total[at], cast(n, data.dtype))

        return te.compute(out_shape, avg, name="pool_avg")

    return call_te(
        bb, kernel, call.args[0], primfunc_name_hint=op_name(call).split(".")[-1],
        op_pattern=OpPattern.OUT_EWISE_FUSABLE, op=op_name(call),
    )  # fmt: skip


@legalizes("relax.nn.adaptive_avg_pool1d", "relax.nn.adaptive_avg_pool3d")
@in_any_layout(pool_layouts)
def legalize_adaptive_avg_pool_nd(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """Output cell ``i`` of each axis averages ``[i*S//OS, ceil((i+1)*S/OS))``."""
    d_shape = shape_of(tensor_arg(call, 0, "data"))
    out_shape = shape_of(out_tensor_sinfo(call))
    rank = len(d_shape) - 2

    def start(a: int, i: Any) -> PrimExpr:
        return sop.floordiv(sop.mul(i, d_shape[2 + a]), out_shape[2 + a])

    def end(a: int, i: Any) -> PrimExpr:
        size, out = d_shape[2 + a], out_shape[2 + a]
        return sop.floordiv(sop.add(sop.mul(sop.add(i, 1), size), sop.sub(out, 1)), out)

    def kernel(data: te.Tensor) -> te.Tensor:
        def sum_body(b: Any, ch: Any, *pos: Any) -> Any:
            rk = [
                te.reduce_axis((0, sop.sub(end(a, pos[a]), start(a, pos[a]))), name=f"rk{a}")
                for a in range(rank)
            ]
            at = (b, ch, *(sop.add(start(a, pos[a]), rk[a].var) for a in range(rank)))
            return te.sum(data[at], axis=rk)

        total = te.compute(out_shape, sum_body, name="adaptive_pool_sum")

        def avg(b: Any, ch: Any, *pos: Any) -> PrimExpr:
            count: PrimExpr = sop.sub(end(0, pos[0]), start(0, pos[0]))
            for a in range(1, rank):
                count = sop.mul(count, sop.sub(end(a, pos[a]), start(a, pos[a])))
            at = (b, ch, *pos)
            if is_float_dtype(data.dtype):
                return total[at] / cast(count, data.dtype)
            return sop.floordiv(total[at], cast(count, data.dtype))

        return te.compute(out_shape, avg, name="adaptive_pool_avg")

    return call_te(
        bb, kernel, call.args[0], primfunc_name_hint=op_name(call).split(".")[-1],
        op_pattern=OpPattern.OUT_EWISE_FUSABLE, op=op_name(call),
    )  # fmt: skip
