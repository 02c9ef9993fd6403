"""ONNX converters: reductions (ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd,
ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare) and ArgMax / ArgMin.

Axes come from an attribute (ReduceSum before opset 13, the others before 18) or an input.
Axes known only at run time are supported too: a kernel reduces
``x[i + k]`` over run-time extents that are the dim on reduced axes and 1 elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import FrontendError
from ...ir import op as sop
from ...ir import tir
from ...ir.relax import RelaxExpr, op
from ...ir.relax.op import manipulate_extra
from ...ir.tir import te
from ._context import Context, Node
from ._registry import converter
from .ops_shape import squeeze_runtime
from .ops_shape_util import (
    as_int64,
    attr_or_input_ints,
    axis_checks,
    emit_kernel,
    norm_axis,
    require_shape,
    runtime_dims,
    runtime_input,
)

# name -> (transform before, reducer, transform after)
_KINDS: dict[str, tuple[str | None, str, str | None]] = {
    "ReduceSum": (None, "sum", None),
    "ReduceMean": (None, "mean", None),
    "ReduceMax": (None, "max", None),
    "ReduceMin": (None, "min", None),
    "ReduceProd": (None, "prod", None),
    "ReduceL1": ("abs", "sum", None),
    "ReduceL2": ("square", "sum", "sqrt"),
    "ReduceLogSum": (None, "sum", "log"),
    "ReduceLogSumExp": ("exp", "sum", "log"),
    "ReduceSumSquare": ("square", "sum", None),
}

_UNARY: dict[str, Callable[[RelaxExpr], RelaxExpr]] = {
    "abs": op.abs,
    "square": lambda x: op.multiply(x, x),
    "exp": op.exp,
    "sqrt": op.sqrt,
    "log": op.log,
}


def _reduce(ctx: Context, node: Node) -> Any:
    """keepdims, noop_with_empty_axes; axes attribute or input (known or run-time)."""
    data = node.input(0)
    if ctx.dtype(data) == "bool" and _KINDS[node.op_type][1] in ("max", "min"):
        # Relax orders no bools: reduce them as 0/1 bytes and turn the result back.
        if runtime_input(ctx, node, 1, 18):
            rank = ctx.require_ndim(node, data, "data")
            keep = bool(node.attr("keepdims", 1))
            return op.astype(_reduce_runtime(ctx, node, data, rank, keep, "uint8"), "bool")
        node.inputs = [ctx.emit(op.astype(data, "uint8")), *node.inputs[1:]]
        return op.astype(ctx.emit(_reduce(ctx, node)), "bool")
    pre, reducer, post = _KINDS[node.op_type]
    rank = ctx.require_ndim(node, data, "data")
    since = 13 if node.op_type == "ReduceSum" else 18
    keepdims = bool(node.attr("keepdims", 1))
    noop = bool(node.attr("noop_with_empty_axes", 0))
    axes = attr_or_input_ints(ctx, node, "axes", 1, since)
    if runtime_input(ctx, node, 1, since):
        static = ctx.static_shape(node.input(1))
        if static is None or len(static) != 1:
            raise node.unsupported("the axes input has no static length")
        if static[0]:
            return _reduce_runtime(ctx, node, data, rank, keepdims)
    if not axes:
        if noop:
            return _apply(post, _apply(pre, data))
        picked = list(range(rank))
    else:
        picked = sorted({norm_axis(node, a, rank, "axes entry") for a in axes})
    if rank == 0:
        return _apply(post, _apply(pre, data))
    if node.op_type == "ReduceLogSumExp":
        return _log_sum_exp(ctx, data, picked, keepdims)
    source = ctx.emit(_apply(pre, data))
    reduced = getattr(op, reducer)(source, picked, keepdims)
    return _apply(post, reduced)


def _apply(name: str | None, x: RelaxExpr) -> RelaxExpr:
    return x if name is None else _UNARY[name](x)


def _log_sum_exp(ctx: Context, data: RelaxExpr, axes: list[int], keepdims: bool) -> Any:
    # log(sum(exp(x - m))) + m with m the finite max: no overflow for large inputs.
    top = ctx.emit(op.max(data, axes, True))
    zero = ctx.const(0, ctx.dtype(data) or "float32")
    safe = ctx.emit(op.where(op.isfinite(top), top, zero))
    total = ctx.emit(op.sum(op.exp(op.subtract(data, safe)), axes, keepdims))
    shift = safe if keepdims else ctx.emit(op.squeeze(safe, axes))
    return op.add(op.log(total), shift)


class _Product(te.Reduce):
    """A product reduction (TE spells only sum/max/min); lowering calls ``combine``."""

    def combine(self, accumulated: Any) -> Any:
        return sop.mul(accumulated, self.source)


def _reduce_runtime(
    ctx: Context, node: Node, data: RelaxExpr, rank: int, keepdims: bool, cast: str = ""
) -> Any:
    pre, reducer, post = _KINDS[node.op_type]
    require_shape(ctx, node, data, "data")
    axes_input = node.input(1)
    (length,) = ctx.static_shape(axes_input) or [0]

    def reduced(a: Any, axis: int) -> Any:
        hit: Any = tir.const(False, "bool")
        for k in range(length):
            at = as_int64(a[k])
            hit = sop.logical_or(
                hit, sop.logical_or(sop.equal(at, axis), sop.equal(at, axis - rank))
            )
        return hit

    def extents(x: Any, a: Any) -> list[Any]:
        one = tir.const(1, "int64")
        return [sop.select(reduced(a, i), one, as_int64(n)) for i, n in enumerate(x.shape)]

    def checks(x: Any, a: Any) -> list[Any]:
        return axis_checks([as_int64(a[k]) for k in range(length)], rank)

    kept = runtime_dims(ctx, node, rank, extents, [data, axes_input], checks)
    dtype = cast or ctx.dtype(data) or "float32"

    def load(x: Any, index: tuple[Any, ...]) -> Any:
        # The transform before the reduction runs inside the kernel: no separate elementwise
        # pass over the input.
        value = x[index] if not cast else sop.cast(x[index], cast)
        if pre == "abs":
            return sop.select(sop.less(value, 0), sop.neg(value), value)
        if pre == "square":
            return sop.mul(value, value)
        return tir.exp(value) if pre == "exp" else value

    def kernel(x: Any) -> Any:
        # The reduced extent is n on a reduced axis (where kept is 1) and 1 elsewhere (where
        # kept is n): n - kept + 1 either way, from dims the kernel's buffers bind.
        spans = [sop.add(sop.sub(as_int64(n), k), 1) for n, k in zip(x.shape, kept, strict=True)]
        raxes = [te.reduce_axis((0, n), name=f"k{i}") for i, n in enumerate(spans)]

        def element(*index: Any) -> Any:
            value = load(x, tuple(sop.add(i, k.var) for i, k in zip(index, raxes, strict=True)))
            if reducer == "prod":
                return _Product("prod", value, raxes, None, tir.const(1, dtype))
            combine = te.sum if reducer in ("sum", "mean") else getattr(te, reducer)
            return combine(value, axis=raxes)

        total = te.compute(kept, element, name="reduce")
        if reducer != "mean":
            return total
        count: Any = tir.const(1, "int64")
        for n in spans:
            count = sop.mul(count, n)
        return te.compute(
            kept, lambda *i: sop.true_div(total[i], sop.cast(count, dtype)), name="mean"
        )

    total = emit_kernel(ctx, kernel, data, name="onnx_reduce")
    result = ctx.emit(_apply(post, total))
    if keepdims:
        return result
    return squeeze_runtime(ctx, node, result, rank)


for _name in _KINDS:
    _since = 13 if _name == "ReduceSum" else 18
    for _version in sorted({1, 11, 13, _since} | ({18} if _name != "ReduceSum" else set())):
        converter(_name, since=_version)(_reduce)


# ---- ArgMax, ArgMin ---------------------------------------------------------------------------
@converter("ArgMax", since=1)
@converter("ArgMax", since=11)
@converter("ArgMax", since=12)
@converter("ArgMax", since=13)
def argmax(ctx: Context, node: Node) -> Any:
    """axis, keepdims, select_last_index (from 12); int64 indices."""
    return _arg(ctx, node, op.argmax)


@converter("ArgMin", since=1)
@converter("ArgMin", since=11)
@converter("ArgMin", since=12)
@converter("ArgMin", since=13)
def argmin(ctx: Context, node: Node) -> Any:
    """axis, keepdims, select_last_index (from 12); int64 indices."""
    return _arg(ctx, node, op.argmin)


def _arg(ctx: Context, node: Node, fn: Callable[..., Any]) -> Any:
    data = node.input(0)
    rank = ctx.require_ndim(node, data, "data")
    if rank == 0:
        raise FrontendError(f"from_onnx: {node.label}: data must have rank at least 1")
    axis = norm_axis(node, node.attr("axis", 0), rank)
    keepdims = bool(node.attr("keepdims", 1))
    if not node.attr("select_last_index", 0):
        return fn(data, axis, keepdims)
    # The last extreme is the first one of the flipped data, counted from the other end.
    require_shape(ctx, node, data, "data")
    first = ctx.emit(fn(manipulate_extra.flip(data, axis), axis, keepdims))

    def kernel(x: Any, r: Any) -> Any:
        last = sop.sub(as_int64(x.shape[axis]), 1)
        return te.compute(
            list(r.shape), lambda *i: sop.cast(sop.sub(last, as_int64(r[i])), r.dtype), name="arg"
        )

    return emit_kernel(ctx, kernel, data, first, name="onnx_arg_last")
