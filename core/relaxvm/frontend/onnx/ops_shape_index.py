"""ONNX converters: indexing (Gather, GatherElements, GatherND, Scatter, ScatterElements,
ScatterND, Slice, Split, NonZero, Unique, Compress).

Gather and Slice on known values (shape arithmetic) compute the known result at import time.
Slice and Split parameters known only at run time go through a kernel that reads them (see
:mod:`.ops_shape_util`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import FrontendError
from ...ir import op as sop
from ...ir import tir
from ...ir.relax import RelaxExpr, op
from ...ir.tir import te
from ._context import Context, Node
from ._registry import converter
from .ops_shape_util import (
    MAX_EXTENT,
    as_int64,
    attr_or_input_ints,
    axis_checks,
    emit_kernel,
    known_ints,
    known_value,
    norm_axis,
    require_shape,
    runtime_dims,
    runtime_input,
    scalar_of,
    tidy_shape,
)

# Slice bounds beyond this are clamped first (INT64_MAX / INT64_MIN as "to the end"); any
# value past every real extent gives the same slice.
_BOUND = MAX_EXTENT


# ---- Gather family ----------------------------------------------------------------------------
@converter("Gather", since=1)
@converter("Gather", since=11)
@converter("Gather", since=13)
def gather(ctx: Context, node: Node) -> Any:
    """Along axis; negative indices count from the end; known inputs gathered at import."""
    data, indices = node.input(0), node.input(1)
    rank = ctx.require_ndim(node, data, "data")
    axis = norm_axis(node, node.attr("axis", 0), rank)
    known, where = ctx.known(data), known_ints(ctx, node, 1, "indices")
    if known is not None and where is not None:
        index = np.asarray(where, dtype=np.int64).reshape(np.asarray(ctx.known(indices)).shape)
        extent = known.shape[axis]
        if np.any((index < -extent) | (index >= extent)):
            raise FrontendError(f"from_onnx: {node.label}: index out of range for {extent}")
        return known_value(ctx, np.take(known, index, axis=axis), ctx.dtype(data) or "int64")
    return op.take(data, indices, axis=axis)


@converter("GatherElements", since=11)
@converter("GatherElements", since=13)
def gather_elements(ctx: Context, node: Node) -> Any:
    """numpy take_along_axis; negative indices count from the end."""
    data = node.input(0)
    rank = ctx.require_ndim(node, data, "data")
    return op.gather_elements(data, node.input(1), norm_axis(node, node.attr("axis", 0), rank))


@converter("GatherND", since=11)
@converter("GatherND", since=12)
@converter("GatherND", since=13)
def gather_nd(ctx: Context, node: Node) -> Any:
    """batch_dims from opset 12."""
    return op.gather_nd(node.input(0), node.input(1), node.attr("batch_dims", 0))


_REDUCTIONS = {"none": "update", "add": "add", "mul": "mul", "max": "max", "min": "min"}


def _check_reduction(node: Node) -> str | None:
    reduction = node.attr("reduction", "none")
    if reduction not in _REDUCTIONS:
        return f"reduction '{reduction}' is not supported (none, add, mul, max, min are)"
    return None


@converter("Scatter", since=9)
@converter("ScatterElements", since=11, check=_check_reduction)
@converter("ScatterElements", since=13, check=_check_reduction)
@converter("ScatterElements", since=16, check=_check_reduction)
@converter("ScatterElements", since=18, check=_check_reduction)
def scatter_elements(ctx: Context, node: Node) -> Any:
    """reduction none/add/mul/max/min; negative indices count from the end."""
    data = node.input(0)
    rank = ctx.require_ndim(node, data, "data")
    axis = norm_axis(node, node.attr("axis", 0), rank)
    reduction = _REDUCTIONS[node.attr("reduction", "none")]
    return op.scatter_elements(data, node.input(1), node.input(2), axis, reduction)


@converter("ScatterND", since=11, check=_check_reduction)
@converter("ScatterND", since=13, check=_check_reduction)
@converter("ScatterND", since=16, check=_check_reduction)
@converter("ScatterND", since=18, check=_check_reduction)
def scatter_nd(ctx: Context, node: Node) -> Any:
    """reduction none/add/mul/max/min."""
    reduction = _REDUCTIONS[node.attr("reduction", "none")]
    return op.scatter_nd(node.input(0), node.input(1), node.input(2), reduction)


# ---- Slice ------------------------------------------------------------------------------------
@converter("Slice", since=1)
@converter("Slice", since=10)
@converter("Slice", since=11)
@converter("Slice", since=13)
def slice_(ctx: Context, node: Node) -> Any:
    """Negative steps; INT64_MAX/MIN bounds clamp; run-time starts/ends/axes/steps.

    starts/ends/axes are attributes in opset 1 and inputs (with steps) from opset 10."""
    data = node.input(0)
    rank = ctx.require_ndim(node, data, "data")
    if node.opset < 10:
        starts, ends = list(node.attr("starts")), list(node.attr("ends"))
        axes = node.attr("axes", None)
        steps = None
    else:
        params = [known_ints(ctx, node, i, w) for i, w in enumerate(_SLICE_INPUTS, start=1)]
        present = [node.optional_input(i) is not None for i in range(1, 5)]
        if any(p and v is None for p, v in zip(present, params, strict=True)):
            return _slice_runtime(ctx, node, data, rank)
        starts, ends, axes, steps = params  # type: ignore[assignment]
        if starts is None or ends is None:
            raise FrontendError(f"from_onnx: {node.label} needs starts and ends")
    axes = list(range(len(starts))) if axes is None else [norm_axis(node, a, rank) for a in axes]
    steps = [1] * len(starts) if steps is None else list(steps)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise FrontendError(
            f"from_onnx: {node.label}: starts, ends, axes and steps differ in length"
        )
    if any(s == 0 for s in steps):
        raise FrontendError(f"from_onnx: {node.label}: steps must be non-zero, got {steps}")
    if len(set(axes)) != len(axes):
        raise FrontendError(f"from_onnx: {node.label}: axes {axes} repeat an axis")
    starts = [min(max(v, -_BOUND), _BOUND) for v in starts]
    ends = [min(max(v, -_BOUND), _BOUND) for v in ends]
    known = ctx.known(data)
    if known is not None:
        index: list[Any] = [slice(None)] * rank
        for a, b, e, s in zip(axes, starts, ends, steps, strict=True):
            index[a] = slice(b, e, s)
        return known_value(ctx, known[tuple(index)], ctx.dtype(data) or "int64")
    if not axes:
        return data
    return tidy_shape(ctx, ctx.emit(op.strided_slice(data, axes, starts, ends, steps)))


_SLICE_INPUTS = ("starts", "ends", "axes", "steps")


def _slice_runtime(ctx: Context, node: Node, data: RelaxExpr, rank: int) -> Any:
    """Slice with parameters known at run time: the bounds are clamped in the kernels."""
    require_shape(ctx, node, data, "data")
    tensors = [node.optional_input(i) for i in range(1, 5)]
    length = None
    for tensor in tensors:
        if tensor is None:
            continue
        static = ctx.static_shape(tensor)
        if static is None or len(static) != 1:
            raise node.unsupported("a slice parameter input has no static length")
        length = static[0]
    assert length is not None  # starts and ends are required from opset 10
    present = [t for t in tensors if t is not None]

    def bounds(x: Any, params: list[Any]) -> list[tuple[Any, Any, Any]]:
        it = iter(params)
        starts, ends = next(it), next(it)
        axes = next(it) if tensors[2] is not None else None
        steps = next(it) if tensors[3] is not None else None
        out = []
        for a in range(rank):
            n = x.shape[a]
            b: Any = tir.const(0, "int64")
            e: Any = sop.cast(n, "int64")
            s: Any = tir.const(1, "int64")
            for k in range(length):
                axis = tir.const(k, "int64") if axes is None else scalar_of(axes, k)
                hit = sop.logical_or(sop.equal(axis, a), sop.equal(axis, a - rank))
                b = sop.select(hit, scalar_of(starts, k), b)
                e = sop.select(hit, scalar_of(ends, k), e)
                if steps is not None:
                    s = sop.select(hit, scalar_of(steps, k), s)
            out.append(_clamped(n, b, e, s))
        return out

    def shape(x: Any, *params: Any) -> list[Any]:
        return [count for _, count, _ in bounds(x, list(params))]

    def checks(x: Any, *params: Any) -> list[Any]:
        flags: list[Any] = []
        if tensors[3] is not None:
            flags += [sop.not_equal(scalar_of(params[-1], k), 0) for k in range(length)]
        if tensors[2] is not None:
            flags += axis_checks([scalar_of(params[2], k) for k in range(length)], rank)
        return flags

    dims = runtime_dims(ctx, node, rank, shape, [data, *present], checks)

    def gather(x: Any, *params: Any) -> Any:
        found = bounds(x, list(params))

        def element(*index: Any) -> Any:
            return x[
                tuple(
                    sop.add(lo, sop.mul(i, s)) for (lo, _, s), i in zip(found, index, strict=False)
                )
            ]

        return te.compute(dims, element, name="slice")

    return emit_kernel(ctx, gather, data, *present, name="onnx_slice")


def _clamped(n: Any, b: Any, e: Any, s: Any) -> tuple[Any, Any, Any]:
    """numpy's slice rules: (first index, count, step) on an axis of extent ``n``."""
    n = sop.cast(n, "int64")
    one, zero, minus = tir.const(1, "int64"), tir.const(0, "int64"), tir.const(-1, "int64")
    b = sop.min_expr(sop.max_expr(b, tir.const(-_BOUND, "int64")), tir.const(_BOUND, "int64"))
    e = sop.min_expr(sop.max_expr(e, tir.const(-_BOUND, "int64")), tir.const(_BOUND, "int64"))
    b = sop.select(sop.less(b, 0), sop.add(b, n), b)
    e = sop.select(sop.less(e, 0), sop.add(e, n), e)
    forward = sop.greater(s, 0)
    last = sop.sub(n, 1)
    lo = sop.select(
        forward,
        sop.min_expr(sop.max_expr(b, zero), n),
        sop.min_expr(sop.max_expr(b, minus), last),
    )
    hi = sop.select(
        forward,
        sop.min_expr(sop.max_expr(e, zero), n),
        sop.min_expr(sop.max_expr(e, minus), last),
    )
    size = sop.max_expr(sop.select(forward, s, sop.sub(zero, s)), one)
    span = sop.select(forward, sop.sub(hi, lo), sop.sub(lo, hi))
    count = sop.max_expr(sop.floordiv(sop.add(span, sop.sub(size, 1)), size), zero)
    return lo, count, s


# ---- Split ------------------------------------------------------------------------------------
@converter("Split", since=1)
@converter("Split", since=2)
@converter("Split", since=11)
@converter("Split", since=13)
@converter("Split", since=18)
def split(ctx: Context, node: Node) -> Any:
    """split attribute (< 13) or input (13+); num_outputs (18+, uneven last part).

    Split sizes computed at run time are supported too."""
    data = node.input(0)
    rank = ctx.require_ndim(node, data, "input")
    axis = norm_axis(node, node.attr("axis", 0), rank)
    outputs = len(node.output_names)
    if runtime_input(ctx, node, 1, 13 if node.opset >= 2 else 0):
        return _split_runtime(ctx, node, data, axis, outputs)
    sizes = attr_or_input_ints(ctx, node, "split", 1, 13)
    if node.opset < 2 and sizes is None:
        sizes = known_ints(ctx, node, 1, "split")
    dims = require_shape(ctx, node, data, "input")
    extent = dims[axis]
    if sizes is None:
        parts = node.attr("num_outputs", outputs)
        if parts != outputs:
            raise FrontendError(
                f"from_onnx: {node.label}: num_outputs {parts} but {outputs} outputs"
            )
        if isinstance(extent, int) and extent % parts:
            chunk = -(-extent // parts)
            sizes = [chunk] * (parts - 1) + [extent - chunk * (parts - 1)]
        elif parts == 1:
            return [data]
        else:
            known = ctx.known(data)
            if known is not None:
                return [
                    known_value(ctx, p, ctx.dtype(data) or "int64")
                    for p in np.split(known, parts, axis=axis)
                ]
            return op.split(data, parts, axis)
    if len(sizes) != outputs:  # type: ignore[arg-type]
        raise FrontendError(
            f"from_onnx: {node.label}: {len(sizes)} split sizes for {outputs} outputs"
        )  # type: ignore[arg-type]
    if isinstance(extent, int) and sum(sizes) != extent:  # type: ignore[arg-type]
        raise FrontendError(f"from_onnx: {node.label}: split sizes {sizes} do not sum to {extent}")
    cuts = list(np.cumsum(sizes)[:-1].tolist())  # type: ignore[arg-type]
    known = ctx.known(data)
    if known is not None:
        return [
            known_value(ctx, p, ctx.dtype(data) or "int64")
            for p in np.split(known, cuts, axis=axis)
        ]
    if outputs == 1:
        return [data]
    return op.split(data, cuts, axis)


def _split_runtime(ctx: Context, node: Node, data: RelaxExpr, axis: int, outputs: int) -> Any:
    sizes_input = node.input(1)
    static = ctx.static_shape(sizes_input)
    if static != [outputs]:
        raise node.unsupported(f"the split input must have {outputs} entries (one per output)")
    require_shape(ctx, node, data, "input")

    def checks(x: Any, s: Any) -> list[Any]:
        total: Any = tir.const(0, "int64")
        for k in range(outputs):
            total = sop.add(total, scalar_of(s, k))
        return [sop.equal(total, as_int64(x.shape[axis]))]

    lengths = runtime_dims(
        ctx,
        node,
        outputs,
        lambda x, s: [scalar_of(s, k) for k in range(outputs)],
        [data, sizes_input],
        checks,
    )
    results = []
    for k in range(outputs):

        def part(x: Any, s: Any, k: int = k) -> Any:
            start: Any = tir.const(0, "int64")
            for j in range(k):
                start = sop.add(start, scalar_of(s, j))
            shape = list(x.shape)
            shape[axis] = lengths[k]

            def element(*index: Any) -> Any:
                # Clamped: sizes that overrun the axis (a malformed model) never read past x.
                last = sop.sub(as_int64(x.shape[axis]), 1)
                moved = list(index)
                moved[axis] = sop.min_expr(sop.add(as_int64(index[axis]), start), last)
                return x[tuple(moved)]

            return te.compute(shape, element, name="split")

        results.append(emit_kernel(ctx, part, data, sizes_input, name="onnx_split"))
    return results


# ---- NonZero, Unique, Compress ---------------------------------------------------------------
@converter("NonZero", since=9)
@converter("NonZero", since=13)
def nonzero(ctx: Context, node: Node) -> Any:
    """int64 (rank, count) indices; count known at run time."""
    return op.nonzero(node.input(0))


@converter("Unique", since=11)
def unique(ctx: Context, node: Node) -> Any:
    """sorted or first-occurrence order, optional axis; all four outputs."""
    data = node.input(0)
    axis = node.attr("axis", None)
    if axis is not None:
        axis = norm_axis(node, axis, ctx.require_ndim(node, data, "X"))
    wanted = [bool(n) for n in node.output_names] + [False] * (4 - len(node.output_names))
    call = op.unique(
        data,
        sorted=bool(node.attr("sorted", 1)),
        return_index=wanted[1],
        return_inverse=wanted[2],
        return_counts=wanted[3],
        axis=axis,
    )
    if not any(wanted[1:]):
        return [call]
    tup = ctx.emit(call)
    results: list[Any] = []
    position = 0
    for index, want in enumerate(wanted[: len(node.output_names)]):
        present = index == 0 or want  # the values always come first in the tuple
        results.append(ctx.emit(_item(tup, position)) if want else None)
        position += 1 if present else 0
    return results


def _item(tup: RelaxExpr, index: int) -> RelaxExpr:
    from ...ir.relax import TupleGetItem

    return TupleGetItem(tup, index)


@converter("Compress", since=9)
@converter("Compress", since=11)
def compress(ctx: Context, node: Node) -> Any:
    """Keeps the slices (or flat elements, without axis) where condition is true."""
    data, condition = node.input(0), node.input(1)
    picked = ctx.emit(op.nonzero(condition))  # (1, count): condition is 1-d
    # squeeze, not reshape to [-1]: the count is known only at run time, and a -1 against an
    # unknown element count is refused (as TVM's builder does).
    index = ctx.emit(op.squeeze(picked, [0]))
    axis = node.attr("axis", None)
    if axis is None:
        return op.take(op.flatten(data), index, axis=0)
    rank = ctx.require_ndim(node, data, "input")
    return op.take(data, index, axis=norm_axis(node, axis, rank))
