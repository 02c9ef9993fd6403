"""ONNX converters: Tile, Pad, Range, OneHot, CumSum, Trilu, EyeLike, DepthToSpace,
SpaceToDepth.

Inputs that ONNX passes as tensors but that fix a shape or an axis (Tile repeats, Pad pads,
Range bounds, OneHot depth, CumSum axis, Trilu k) use Relax ops when known at import time, and
kernels that read them (see :mod:`.ops_shape_util`) when only the run time knows them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import FrontendError
from ...ir import op as sop
from ...ir import tir
from ...ir.relax import RelaxExpr, op
from ...ir.relax.op import manipulate_extra as extra
from ...ir.tir import te
from ._context import Context, Node
from ._loader import onnx_dtype
from ._registry import converter
from .ops_shape_util import (
    as_int64,
    axis_checks,
    emit_kernel,
    known_ints,
    known_value,
    norm_axis,
    require_shape,
    runtime_dims,
    scalar_of,
)


def _int64(value: int) -> Any:
    return tir.const(value, "int64")


# ---- Tile -------------------------------------------------------------------------------------
@converter("Tile", since=6)
@converter("Tile", since=13)
def tile(ctx: Context, node: Node) -> Any:
    """numpy.tile; repeats known or run-time."""
    data = node.input(0)
    reps = known_ints(ctx, node, 1, "repeats")
    if reps is not None:
        known = ctx.known(data)
        if known is not None:
            return known_value(ctx, np.tile(known, reps), ctx.dtype(data) or "int64")
        return extra.tile(data, reps)
    rank = len(require_shape(ctx, node, data, "input"))
    repeats = node.input(1)
    dims = runtime_dims(
        ctx,
        node,
        rank,
        lambda x, r: [sop.mul(as_int64(x.shape[a]), scalar_of(r, a)) for a in range(rank)],
        [data, repeats],
    )

    def kernel(x: Any) -> Any:
        return te.compute(
            dims,
            lambda *i: x[tuple(sop.floormod(v, n) for v, n in zip(i, x.shape, strict=False))],
            name="tile",
        )

    return emit_kernel(ctx, kernel, data, name="onnx_tile")


# ---- Pad --------------------------------------------------------------------------------------
_PAD_MODES = ("constant", "reflect", "edge", "wrap")


def _check_pad(node: Node) -> str | None:
    mode = node.attr("mode", "constant")
    if mode not in _PAD_MODES:
        return f"mode '{mode}' is not supported ({', '.join(_PAD_MODES)} are)"
    return None


@converter("Pad", since=1, check=_check_pad)
@converter("Pad", since=2, check=_check_pad)
@converter("Pad", since=11, check=_check_pad)
@converter("Pad", since=13, check=_check_pad)
@converter("Pad", since=18, check=_check_pad)
@converter("Pad", since=19, check=_check_pad)
def pad(ctx: Context, node: Node) -> Any:
    """constant/reflect/edge/wrap; negative pads crop; run-time pads, value and axes.

    ``pads`` is an attribute before opset 11 and an input from 11; ``axes`` from 18."""
    data = node.input(0)
    rank = ctx.require_ndim(node, data, "data")
    mode = node.attr("mode", "constant")
    value_input = None
    if node.opset < 11:
        pads: list[int] | None = list(node.attr("pads" if node.opset >= 2 else "paddings"))
        value: Any = node.attr("value", 0.0)
    else:
        pads = known_ints(ctx, node, 1, "pads")
        value_input = node.optional_input(2)
        known_fill = ctx.known(value_input)
        value = 0 if value_input is None else None
        if known_fill is not None:
            value = np.asarray(known_fill).reshape(-1)[0].item()
    axes: list[int] | None = list(range(rank))
    if node.optional_input(3) is not None:
        axes = known_ints(ctx, node, 3, "axes")
        if axes is not None:
            axes = [norm_axis(node, a, rank) for a in axes]
    if value is not None and not np.isfinite(value) and mode == "constant":
        # relax.nn.pad takes finite fill values only; the kernel reads the value input.
        if value_input is None:
            raise node.unsupported(f"a non-finite pad value ({value})")
        value = None
    if pads is None or axes is None or value is None or mode == "wrap":
        return _pad_runtime(ctx, node, data, rank, mode)
    if len(pads) != 2 * len(axes):
        raise FrontendError(f"from_onnx: {node.label}: {len(pads)} pads for {len(axes)} axes")
    before, after = [0] * rank, [0] * rank
    for k, axis in enumerate(axes):
        before[axis], after[axis] = pads[k], pads[k + len(axes)]
    if any(p < 0 for p in before + after):
        crop = [
            (a, max(-b, 0), -max(-e, 0))
            for a, (b, e) in enumerate(zip(before, after, strict=False))
        ]
        crop = [c for c in crop if c[1] or c[2]]
        data = ctx.emit(
            op.strided_slice(
                data,
                [c[0] for c in crop],
                [c[1] for c in crop],
                [c[2] if c[2] else (1 << 40) for c in crop],
            )
        )
        before, after = [max(b, 0) for b in before], [max(e, 0) for e in after]
    if not any(before + after):
        return data
    widths = [w for pair in zip(before, after, strict=False) for w in pair]
    return op.nn.pad(data, widths, mode, float(value))


def _pad_runtime(ctx: Context, node: Node, data: RelaxExpr, rank: int, mode: str) -> Any:
    require_shape(ctx, node, data, "data")
    pads_input = node.input(1)
    axes_input = node.optional_input(3)
    value_input = node.optional_input(2)
    count = rank
    if axes_input is not None:
        static = ctx.static_shape(axes_input)
        if static is None or len(static) != 1:
            raise node.unsupported("the axes input has no static length")
        count = static[0]
    tensors = [t for t in (pads_input, axes_input) if t is not None]

    def widths(p: Any, a: Any | None) -> list[tuple[Any, Any]]:
        out = []
        for axis in range(rank):
            b: Any = _int64(0)
            e: Any = _int64(0)
            for k in range(count):
                at = _int64(k) if a is None else scalar_of(a, k)
                hit = sop.logical_or(sop.equal(at, axis), sop.equal(at, axis - rank))
                b = sop.select(hit, scalar_of(p, k), b)
                e = sop.select(hit, scalar_of(p, k + count), e)
            out.append((b, e))
        return out

    def shape(x: Any, p: Any, a: Any = None) -> list[Any]:
        return [
            sop.add(sop.add(as_int64(n), b), e)
            for n, (b, e) in zip(x.shape, widths(p, a), strict=False)
        ]

    def checks(x: Any, p: Any, a: Any = None) -> list[Any]:
        return [] if a is None else axis_checks([scalar_of(a, k) for k in range(count)], rank)

    dims = runtime_dims(ctx, node, rank, shape, [data, *tensors], checks)
    dtype = ctx.dtype(data) or "float32"

    def kernel(x: Any, p: Any, *rest: Any) -> Any:
        a = rest[0] if axes_input is not None else None
        fill = rest[-1] if value_input is not None else None
        found = widths(p, a)

        def element(*index: Any) -> Any:
            inside: Any = tir.const(True, "bool")
            source = []
            for i, n, (b, _) in zip(index, x.shape, found, strict=False):
                n = as_int64(n)
                s = sop.sub(as_int64(i), b)
                last = sop.sub(n, 1)
                inside = sop.logical_and(inside, sop.logical_and(s >= 0, s < n))
                if mode == "wrap":
                    s = sop.floormod(s, sop.max_expr(n, _int64(1)))
                if mode == "reflect":
                    s = sop.select(sop.less(s, 0), sop.sub(_int64(0), s), s)
                    s = sop.select(s > last, sop.sub(sop.mul(last, 2), s), s)
                source.append(sop.min_expr(sop.max_expr(s, _int64(0)), last))
            element_value = x[tuple(source)]
            if mode != "constant":
                return element_value
            pad_value = (
                tir.const(0, dtype) if fill is None else fill[()] if not fill.shape else fill[0]
            )
            # if_then_else: the read stays inside x (an empty x is never read).
            return tir.if_then_else(inside, element_value, sop.cast(pad_value, dtype))

        return te.compute(dims, element, name="pad")

    args = [data, pads_input] + ([axes_input] if axes_input is not None else [])
    args += [value_input] if value_input is not None else []
    return emit_kernel(ctx, kernel, *args, name="onnx_pad")


# ---- Range ------------------------------------------------------------------------------------
@converter("Range", since=11)
def range_(ctx: Context, node: Node) -> Any:
    """start + i * delta below limit; bounds known (ints, symbolic) or run-time."""
    dtype = ctx.dtype(node.input(0)) or "int64"
    values = [ctx.known(node.input(i)) for i in range(3)]
    if all(v is not None for v in values):
        scalars = [np.asarray(v).reshape(-1)[0] for v in values]  # type: ignore[union-attr]
        plain = [s.item() if isinstance(s, np.generic) else s for s in scalars]
        if all(isinstance(s, (int, float)) for s in plain):
            start, limit, delta = plain
            if delta == 0:
                raise FrontendError(f"from_onnx: {node.label}: delta is 0")
            count = max(int(np.ceil((limit - start) / delta)), 0)
            result = (np.asarray(start) + np.arange(count) * np.asarray(delta)).astype(dtype)
            return known_value(ctx, result, dtype)
        if dtype.startswith("int"):
            first, last, step = (_prim(s, dtype) for s in plain)
            return op.arange(first, last, step, dtype=dtype)
    tensors = [node.input(i) for i in range(3)]

    def extent(start: Any, limit: Any, delta: Any) -> list[Any]:
        s, e, d = (_read(t) for t in (start, limit, delta))
        if dtype.startswith("float"):
            steps = tir.ceil(sop.true_div(sop.sub(e, s), d))
            return [sop.max_expr(sop.cast(steps, "int64"), _int64(0))]
        s, e, d = as_int64(s), as_int64(e), as_int64(d)
        forward = sop.greater(d, 0)
        mag = sop.max_expr(sop.select(forward, d, sop.sub(_int64(0), d)), _int64(1))
        span = sop.select(forward, sop.sub(e, s), sop.sub(s, e))
        return [sop.max_expr(sop.floordiv(sop.add(span, sop.sub(mag, 1)), mag), _int64(0))]

    def checks(start: Any, limit: Any, delta: Any) -> list[Any]:
        return [sop.not_equal(_read(delta), tir.const(0, dtype))]

    (length,) = runtime_dims(ctx, node, 1, extent, tensors, checks)

    def kernel(start: Any, limit: Any, delta: Any) -> Any:
        s, d = _read(start), _read(delta)
        return te.compute(
            [length], lambda i: sop.add(s, sop.mul(sop.cast(i, dtype), d)), name="range"
        )

    return emit_kernel(ctx, kernel, *tensors, name="onnx_range")


def _read(tensor: Any) -> Any:
    return tensor[()] if len(tensor.shape) == 0 else tensor[0]


def _prim(value: Any, dtype: str) -> Any:
    if isinstance(value, tir.PrimExpr):
        return value if str(value.dtype) == dtype else sop.cast(value, dtype)
    return tir.const(int(value), dtype)


# ---- OneHot -----------------------------------------------------------------------------------
@converter("OneHot", since=9)
@converter("OneHot", since=11)
def one_hot(ctx: Context, node: Node) -> Any:
    """Negative indices count from the end; out-of-range rows are off; run-time depth.

    ``values`` (off, on) and ``depth`` may be run-time tensors."""
    indices, depth_input, values = node.input(0), node.input(1), node.input(2)
    rank = len(require_shape(ctx, node, indices, "indices"))
    axis = norm_axis(node, node.attr("axis", -1), rank + 1)
    known_depth = ctx.known(depth_input)
    depth: Any
    if known_depth is not None and not isinstance(np.asarray(known_depth).flat[0], tir.PrimExpr):
        depth = int(np.asarray(known_depth).reshape(-1)[0])
    else:
        (depth,) = runtime_dims(
            ctx, node, 1, lambda d: [sop.cast(_read(d), "int64")], [depth_input]
        )

    def kernel(idx: Any, vals: Any) -> Any:
        shape = list(idx.shape)
        shape.insert(axis, depth)

        def element(*index: Any) -> Any:
            k = index[axis]
            rest = index[:axis] + index[axis + 1 :]
            at = sop.cast(idx[tuple(rest)], "int64")
            at = sop.select(sop.less(at, 0), sop.add(at, as_int64(depth)), at)
            return sop.select(sop.equal(at, as_int64(k)), vals[1], vals[0])

        return te.compute(shape, element, name="one_hot")

    return emit_kernel(ctx, kernel, indices, values, name="onnx_one_hot")


# ---- CumSum, Trilu, EyeLike -------------------------------------------------------------------
@converter("CumSum", since=11)
@converter("CumSum", since=14)
def cumsum(ctx: Context, node: Node) -> Any:
    """exclusive, reverse; axis known or run-time."""
    data = node.input(0)
    rank = ctx.require_ndim(node, data, "x")
    exclusive = bool(node.attr("exclusive", 0))
    reverse = bool(node.attr("reverse", 0))
    axis_values = known_ints(ctx, node, 1, "axis")

    def along(axis: int) -> RelaxExpr:
        x = ctx.emit(extra.flip(data, axis)) if reverse else data
        out = ctx.emit(op.cumsum(x, axis, exclusive=exclusive))
        return ctx.emit(extra.flip(out, axis)) if reverse else out

    if axis_values is not None:
        return along(norm_axis(node, axis_values[0], rank))
    # The axis is only known at run time: one scan per axis, the wanted one picked.
    axis_input = node.input(1)
    result = along(rank - 1)
    for axis in range(rank - 2, -1, -1):
        hit = ctx.emit(
            op.logical_or(
                op.equal(axis_input, ctx.const(axis, ctx.dtype(axis_input) or "int64")),
                op.equal(axis_input, ctx.const(axis - rank, ctx.dtype(axis_input) or "int64")),
            )
        )
        result = ctx.emit(op.where(hit, along(axis), result))
    return result


@converter("Trilu", since=14)
def trilu(ctx: Context, node: Node) -> Any:
    """upper (default) or lower triangle of the last two axes; k known or run-time."""
    data = node.input(0)
    upper = bool(node.attr("upper", 1))
    dims = ctx.static_shape(data)
    if dims is not None and 0 in dims:
        return data  # an empty tensor is its own triangle
    k_input = node.optional_input(1)
    k = [0] if k_input is None else known_ints(ctx, node, 1, "k")
    if k is not None:
        return (extra.triu if upper else extra.tril)(data, k[0])
    require_shape(ctx, node, data, "input")

    def kernel(x: Any, kt: Any) -> Any:
        def element(*index: Any) -> Any:
            diff = sop.sub(as_int64(index[-1]), as_int64(index[-2]))
            shift = scalar_of(kt) if len(kt.shape) == 0 else scalar_of(kt, 0)
            keep = diff >= shift if upper else diff <= shift
            return sop.select(keep, x[index], tir.const(0, x.dtype))

        return te.compute(list(x.shape), element, name="trilu")

    return emit_kernel(ctx, kernel, data, node.input(1), name="onnx_trilu")


@converter("EyeLike", since=9)
@converter("EyeLike", since=22)
def eye_like(ctx: Context, node: Node) -> Any:
    """Ones on diagonal k of a 2-D shape; dtype attribute or the input's."""
    data = node.input(0)
    code = node.attr("dtype", None)
    dtype = ctx.dtype(data) if code is None else onnx_dtype(code, f"{node.label} dtype")
    return op.eye_like(data, node.attr("k", 0), dtype)


# ---- DepthToSpace, SpaceToDepth ---------------------------------------------------------------
def _check_mode(node: Node) -> str | None:
    mode = node.attr("mode", "DCR")
    return None if mode in ("DCR", "CRD") else f"mode '{mode}' is not supported (DCR, CRD are)"


@converter("DepthToSpace", since=1, check=_check_mode)
@converter("DepthToSpace", since=11, check=_check_mode)
@converter("DepthToSpace", since=13, check=_check_mode)
def depth_to_space(ctx: Context, node: Node) -> Any:
    """DCR and CRD modes (NCHW)."""
    data = node.input(0)
    n, c, h, w = _nchw(ctx, node, data)
    b = int(node.attr("blocksize"))
    if isinstance(c, int) and c % (b * b):
        raise FrontendError(f"from_onnx: {node.label}: {c} channels for blocksize {b}")
    depth = c // (b * b) if isinstance(c, int) else sop.floordiv(c, b * b)
    if node.attr("mode", "DCR") == "DCR":
        inner, perm = [n, b, b, depth, h, w], [0, 3, 4, 1, 5, 2]
    else:
        inner, perm = [n, depth, b, b, h, w], [0, 1, 4, 2, 5, 3]
    moved = ctx.emit(op.permute_dims(ctx.emit(op.reshape(data, inner)), perm))
    return op.reshape(moved, [n, depth, _times(h, b), _times(w, b)])


@converter("SpaceToDepth", since=1, check=_check_mode)
@converter("SpaceToDepth", since=13, check=_check_mode)
def space_to_depth(ctx: Context, node: Node) -> Any:
    """DCR (default) and CRD modes (NCHW)."""
    data = node.input(0)
    n, c, h, w = _nchw(ctx, node, data)
    b = int(node.attr("blocksize"))
    hb = h // b if isinstance(h, int) else sop.floordiv(h, b)
    wb = w // b if isinstance(w, int) else sop.floordiv(w, b)
    perm = [0, 3, 5, 1, 2, 4] if node.attr("mode", "DCR") == "DCR" else [0, 1, 3, 5, 2, 4]
    moved = ctx.emit(op.permute_dims(ctx.emit(op.reshape(data, [n, c, hb, b, wb, b])), perm))
    return op.reshape(moved, [n, _times(c, b * b), hb, wb])


def _nchw(ctx: Context, node: Node, data: RelaxExpr) -> list[Any]:
    dims = require_shape(ctx, node, data, "input")
    if len(dims) != 4:
        raise FrontendError(f"from_onnx: {node.label}: input must be 4-D, got {len(dims)}-D")
    return dims


def _times(dim: Any, factor: int) -> Any:
    return dim * factor if isinstance(dim, int) else sop.mul(dim, factor)
