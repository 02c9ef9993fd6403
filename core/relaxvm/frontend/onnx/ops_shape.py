"""ONNX converters: constants, shapes and rank changes (Constant, Shape, Size, Reshape,
Flatten, Transpose, Concat, Squeeze, Unsqueeze, Expand, ConstantOfShape).

Shape arithmetic on values known at import time (see :mod:`._context`) is computed with numpy
on the known arrays, so ``Shape -> Gather -> Unsqueeze -> Concat -> Reshape`` becomes one Relax
reshape with symbolic dims. Shape inputs known only at run time take the run-time path of
:mod:`.ops_shape_util` where the result's rank is still fixed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import FrontendError
from ...ir import op as sop
from ...ir import tir
from ...ir.relax import RelaxExpr, TensorStructInfo, op
from ._context import Context, Node
from ._registry import converter
from .ops_shape_util import (
    as_int64,
    attr_or_input_ints,
    axis_checks,
    int64,
    known_value,
    norm_axis,
    not_in,
    note_dims,
    product,
    require_shape,
    runtime_dims,
    runtime_input,
    scalar_of,
    select_chain,
    wrap_axis,
)

#: Known values at most this large are folded into constants (ConstantOfShape, Expand).
_FOLD_LIMIT = 1024


def _dtype(ctx: Context, expr: RelaxExpr) -> str:
    return ctx.dtype(expr) or "int64"


# ---- Constant -------------------------------------------------------------------------------
def _check_constant(node: Node) -> str | None:
    for name in ("sparse_value", "value_string", "value_strings"):
        if name in node.attrs:
            return f"attribute '{name}' is not supported (sparse and string constants)"
    return None


@converter("Constant", since=1, check=_check_constant)
def constant(ctx: Context, node: Node) -> Any:
    """value, value_float(s), value_int(s); sparse and string constants refused."""
    attrs = node.attrs
    if "value" in attrs:
        array = np.asarray(attrs["value"])
    elif "value_float" in attrs:
        array = np.asarray(attrs["value_float"], dtype=np.float32)
    elif "value_floats" in attrs:
        array = np.asarray(attrs["value_floats"], dtype=np.float32)
    elif "value_int" in attrs:
        array = np.asarray(attrs["value_int"], dtype=np.int64)
    elif "value_ints" in attrs:
        array = np.asarray(attrs["value_ints"], dtype=np.int64)
    else:
        raise FrontendError(f"from_onnx: {node.label} has no value attribute")
    return ctx.const(array, "bool" if array.dtype == bool else str(array.dtype))


# ---- Shape, Size ----------------------------------------------------------------------------
@converter("Shape", since=1)
@converter("Shape", since=15)
def shape(ctx: Context, node: Node) -> Any:
    """The dims as a known value (symbolic dims included); start/end from opset 15."""
    data, anchors = _with_dims(ctx, node)
    dims = require_shape(ctx, node, data, "the input")
    rank = len(dims)
    start, end = node.attr("start", 0), node.attr("end", rank)
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    value = np.array(dims[start:end], dtype=object).reshape(-1)
    return known_value(ctx, value, "int64", anchors)


@converter("Size", since=1)
def size(ctx: Context, node: Node) -> Any:
    """The element count as a known int64 scalar."""
    data, anchors = _with_dims(ctx, node)
    dims = require_shape(ctx, node, data, "the input")
    value = np.empty((), dtype=object)
    value[()] = product(dims)
    return known_value(ctx, value, "int64", anchors)


def _with_dims(ctx: Context, node: Node) -> tuple[RelaxExpr, list[RelaxExpr]]:
    """The input, match-cast to fresh dims when only its rank is known (NonZero, Unique
    results), so that its dims can be named and computed on."""
    data = node.input(0)
    rank = ctx.ndim(data)
    if ctx.shape(data) is not None or rank < 0:
        return data, []
    fresh = [tir.Var(f"{node.op_type.lower()}_d{i}", "int64") for i in range(rank)]
    alias = ctx.bb.match_cast(data, TensorStructInfo(fresh, ctx.dtype(data)))
    return alias, [alias]


# ---- Reshape --------------------------------------------------------------------------------
@converter("Reshape", since=1)
@converter("Reshape", since=5)
@converter("Reshape", since=14)
def reshape(ctx: Context, node: Node) -> Any:
    """0 copies a dim (unless allowzero), -1 is inferred; shape known or run-time."""
    data = node.input(0)
    allowzero = bool(node.attr("allowzero", 0)) if node.opset >= 14 else False
    if node.opset < 5:
        target: list[Any] | None = list(node.attr("shape"))
    else:
        target = ctx.shape_values(node, 1, "shape")
    if target is None:
        return _reshape_runtime(ctx, node, data, allowzero)
    dims = ctx.shape(data)
    resolved: list[Any] = []
    for index, value in enumerate(target):
        if isinstance(value, int) and value == 0 and not allowzero:
            if dims is None or index >= len(dims):
                raise node.unsupported("a 0 in shape copies a dim of an input of unknown shape")
            dim = dims[index]
            value = int(dim.value) if isinstance(dim, tir.IntImm) else dim
        resolved.append(value)
    if sum(1 for v in resolved if isinstance(v, int) and v == -1) > 1:
        raise FrontendError(f"from_onnx: {node.label}: shape {target} has more than one -1")
    known = ctx.known(data)
    if known is not None and all(isinstance(v, int) for v in resolved):
        return known_value(ctx, known.reshape(resolved), _dtype(ctx, data))
    if allowzero and any(isinstance(v, int) and v == 0 for v in resolved):
        return _reshape_to_empty(ctx, node, data, resolved, dims)
    return op.reshape(data, resolved)


def _reshape_to_empty(
    ctx: Context, node: Node, data: RelaxExpr, resolved: list[Any], dims: list[Any] | None
) -> Any:
    """``allowzero`` with a 0 in the shape: the result has no elements, so neither has the
    data, and the result is an empty tensor of that shape. (relax.reshape reads a literal 0
    as "copy this dim", TVM's rule, so it cannot say this.)"""
    if any(isinstance(v, int) and v == -1 for v in resolved):
        raise FrontendError(
            f"from_onnx: {node.label}: with allowzero=1 the shape {resolved} may not hold "
            "both 0 and -1"
        )
    empty = dims is not None and any(
        (isinstance(d, tir.IntImm) and int(d.value) == 0) or (isinstance(d, int) and d == 0)
        for d in dims
    )
    if not empty:
        raise node.unsupported(
            "allowzero=1 with a 0 in the shape needs data with a static 0 extent "
            f"(data shape: {dims})"
        )
    return op.zeros(resolved, _dtype(ctx, data))


def _reshape_runtime(ctx: Context, node: Node, data: RelaxExpr, allowzero: bool) -> Any:
    shape_input = node.input(1)
    length = ctx.static_shape(shape_input)
    if length is None or len(length) != 1:
        raise node.unsupported("the shape input has no static length")
    require_shape(ctx, node, data, "the data input")
    count = length[0]

    def elements(x: Any, s: Any) -> list[Any]:
        raw = [scalar_of(s, i) for i in range(count)]
        values = []
        for i, v in enumerate(raw):
            if not allowzero and i < len(x.shape):
                v = sop.select(sop.equal(v, 0), x.shape[i], v)
            values.append(v)
        known = product([sop.select(sop.equal(v, -1), tir.const(1, "int64"), v) for v in values])
        total = product(list(x.shape)) if x.shape else tir.const(1, "int64")
        inferred = sop.floordiv(total, sop.max_expr(known, tir.const(1, "int64")))
        return [sop.select(sop.equal(v, -1), inferred, v) for v in values]

    def checks(x: Any, s: Any) -> list[Any]:
        total = product(list(x.shape)) if x.shape else tir.const(1, "int64")
        minus: Any = tir.const(0, "int64")
        for i in range(count):
            minus = sop.add(minus, sop.select(sop.equal(scalar_of(s, i), -1), int64(1), 0))
        size = product(elements(x, s)) if count else tir.const(1, "int64")
        return [sop.less_equal(minus, 1), sop.equal(size, total)]

    dims = runtime_dims(ctx, node, count, elements, [data, shape_input], checks)
    return op.reshape(data, dims)


# ---- Flatten, Transpose -----------------------------------------------------------------------
@converter("Flatten", since=1)
@converter("Flatten", since=11)
@converter("Flatten", since=13)
def flatten(ctx: Context, node: Node) -> Any:
    """2-D result split at axis (negative axis from opset 11)."""
    data = node.input(0)
    dims = require_shape(ctx, node, data, "the input")
    rank = len(dims)
    axis = node.attr("axis", 1)
    if not -rank <= axis <= rank:
        raise FrontendError(f"from_onnx: {node.label}: axis {axis} is out of range for {rank}")
    axis = axis + rank if axis < 0 else axis
    target = [product(dims[:axis]), product(dims[axis:])]
    known = ctx.known(data)
    if known is not None and all(isinstance(v, int) for v in target):
        return known_value(ctx, known.reshape(target), _dtype(ctx, data))
    return op.reshape(data, target)


@converter("Transpose", since=1)
@converter("Transpose", since=13)
def transpose(ctx: Context, node: Node) -> Any:
    """perm (default: reversed axes)."""
    data = node.input(0)
    rank = ctx.require_ndim(node, data, "the input")
    perm = node.attr("perm", None)
    perm = list(range(rank))[::-1] if perm is None else [norm_axis(node, p, rank) for p in perm]
    if sorted(perm) != list(range(rank)):
        raise FrontendError(f"from_onnx: {node.label}: perm {perm} is not a permutation")
    known = ctx.known(data)
    if known is not None:
        return known_value(ctx, np.transpose(known, perm), _dtype(ctx, data))
    return op.permute_dims(data, perm)


# ---- Concat -----------------------------------------------------------------------------------
@converter("Concat", since=1)
@converter("Concat", since=4)
@converter("Concat", since=11)
@converter("Concat", since=13)
def concat(ctx: Context, node: Node) -> Any:
    """Along axis (default 1 before opset 4); known inputs are concatenated at import."""
    inputs = [x for x in node.inputs if x is not None]
    if not inputs:
        raise FrontendError(f"from_onnx: {node.label} has no inputs")
    rank = ctx.require_ndim(node, inputs[0], "the first input")
    axis = norm_axis(node, node.attr("axis", 1) if node.opset < 4 else node.attr("axis"), rank)
    known = [ctx.known(x) for x in inputs]
    if all(k is not None for k in known):
        symbolic = any(k.dtype == object for k in known)  # type: ignore[union-attr]
        arrays = [np.asarray(k, dtype=object if symbolic else None) for k in known]
        return known_value(ctx, np.concatenate(arrays, axis=axis), _dtype(ctx, inputs[0]))
    if len(inputs) == 1:
        return inputs[0]
    return op.concat(inputs, axis=axis)


# ---- Squeeze, Unsqueeze -----------------------------------------------------------------------
@converter("Squeeze", since=1)
@converter("Squeeze", since=11)
@converter("Squeeze", since=13)
def squeeze(ctx: Context, node: Node) -> Any:
    """axes attribute before opset 13, input from 13 (run-time axes supported)."""
    data = node.input(0)
    rank = ctx.require_ndim(node, data, "the input")
    if runtime_input(ctx, node, 1, 13):
        return squeeze_runtime(ctx, node, data, rank)
    axes = attr_or_input_ints(ctx, node, "axes", 1, 13)
    dims = ctx.shape(data)
    if axes is None:
        if dims is None or any(not isinstance(d, tir.IntImm) for d in dims):
            raise node.unsupported("squeezing every extent-1 axis of a symbolic shape")
        picked = [i for i, d in enumerate(dims) if int(d.value) == 1]  # type: ignore[attr-defined]
    else:
        picked = sorted({norm_axis(node, a, rank, "axes entry") for a in axes})
    if dims is not None:
        for axis in picked:
            dim = dims[axis]
            if isinstance(dim, tir.IntImm) and int(dim.value) != 1:
                raise FrontendError(
                    f"from_onnx: {node.label}: axis {axis} has extent {dims[axis]}, not 1"
                )
    known = ctx.known(data)
    if known is not None:
        return known_value(ctx, np.squeeze(known, axis=tuple(picked)), _dtype(ctx, data))
    return op.squeeze(data, picked) if picked else data


def squeeze_runtime(ctx: Context, node: Node, data: RelaxExpr, rank: int) -> Any:
    axes_input = node.input(1)
    length = ctx.static_shape(axes_input)
    if length is None or len(length) != 1:
        raise node.unsupported("the axes input has no static length")
    count = rank - length[0]
    if count < 0:
        raise FrontendError(f"from_onnx: {node.label}: more axes than the input has dims")
    require_shape(ctx, node, data, "the input")

    def elements(x: Any, a: Any) -> list[Any]:
        axes = [wrap_axis(scalar_of(a, k), rank) for k in range(length[0])]
        kept = [not_in(p, axes) for p in range(rank)]
        out = []
        for q in range(count):
            value: Any = tir.const(0, "int64")
            before: Any = tir.const(0, "int64")
            for p in range(rank):
                hit = sop.logical_and(kept[p], sop.equal(before, q))
                value = sop.select(hit, x.shape[p], value)
                before = sop.add(before, sop.select(kept[p], tir.const(1, "int64"), 0))
            out.append(value)
        return out

    def checks(x: Any, a: Any) -> list[Any]:
        raw = [scalar_of(a, k) for k in range(length[0])]
        dims = [as_int64(d) for d in x.shape]
        unit = [sop.equal(select_chain(wrap_axis(v, rank), dims), 1) for v in raw]
        return [*axis_checks(raw, rank), *unit]

    dims = runtime_dims(ctx, node, count, elements, [data, axes_input], checks)
    return op.reshape(data, dims)


@converter("Unsqueeze", since=1)
@converter("Unsqueeze", since=11)
@converter("Unsqueeze", since=13)
def unsqueeze(ctx: Context, node: Node) -> Any:
    """axes attribute before opset 13, input from 13 (run-time axes supported)."""
    data = node.input(0)
    rank = ctx.require_ndim(node, data, "the input")
    if runtime_input(ctx, node, 1, 13):
        return _unsqueeze_runtime(ctx, node, data, rank)
    axes = attr_or_input_ints(ctx, node, "axes", 1, 13)
    if axes is None:
        raise FrontendError(f"from_onnx: {node.label} needs axes")
    out_rank = rank + len(axes)
    picked = sorted(norm_axis(node, a, out_rank, "axes entry") for a in axes)
    if len(set(picked)) != len(picked):
        raise FrontendError(f"from_onnx: {node.label}: axes {axes} repeat an axis")
    known = ctx.known(data)
    if known is not None:
        return known_value(ctx, np.expand_dims(known, tuple(picked)), _dtype(ctx, data))
    return op.expand_dims(data, picked)


def _unsqueeze_runtime(ctx: Context, node: Node, data: RelaxExpr, rank: int) -> Any:
    axes_input = node.input(1)
    length = ctx.static_shape(axes_input)
    if length is None or len(length) != 1:
        raise node.unsupported("the axes input has no static length")
    out_rank = rank + length[0]
    require_shape(ctx, node, data, "the input")

    def elements(x: Any, a: Any) -> list[Any]:
        axes = [wrap_axis(scalar_of(a, k), out_rank) for k in range(length[0])]
        dims = [tir.const(1, "int64")] if rank == 0 else list(x.shape)
        out = []
        for q in range(out_rank):
            before: Any = tir.const(0, "int64")
            for axis in axes:
                before = sop.add(before, sop.select(sop.less(axis, q), tir.const(1, "int64"), 0))
            source = select_chain(sop.sub(tir.const(q, "int64"), before), dims)
            out.append(sop.select(not_in(q, axes), source, tir.const(1, "int64")))
        return out

    def checks(x: Any, a: Any) -> list[Any]:
        return axis_checks([scalar_of(a, k) for k in range(length[0])], out_rank)

    dims = runtime_dims(ctx, node, out_rank, elements, [data, axes_input], checks)
    return op.reshape(data, dims)


# ---- Expand, ConstantOfShape ------------------------------------------------------------------
@converter("Expand", since=8)
@converter("Expand", since=13)
def expand(ctx: Context, node: Node) -> Any:
    """Bidirectional broadcast to the shape input (known or run-time)."""
    data = node.input(0)
    target = ctx.shape_values(node, 1, "shape")
    if target is None:
        return _expand_runtime(ctx, node, data)
    dims = require_shape(ctx, node, data, "the input")
    rank = max(len(dims), len(target))
    dims = [1] * (rank - len(dims)) + dims
    target = [1] * (rank - len(target)) + target
    out: list[Any] = []
    for have, want in zip(dims, target, strict=True):
        if isinstance(want, int) and want == 1:
            out.append(have)
        elif isinstance(have, int) and have == 1:
            out.append(want)
        elif isinstance(have, int) or _same(ctx, have, want):
            out.append(have)
        elif isinstance(want, int):
            out.append(want)
        else:
            raise node.unsupported(f"broadcasting symbolic dims {have} and {want}")
    known = ctx.known(data)
    static = all(isinstance(v, int) for v in out)
    if known is not None and static and int(np.prod(out)) <= _FOLD_LIMIT:
        return known_value(ctx, np.broadcast_to(known, out), _dtype(ctx, data))
    return op.broadcast_to(data, out)


def _same(ctx: Context, a: Any, b: Any) -> bool:
    note_dims(ctx, [a, b])
    diff = ctx.simplify(sop.sub(a, b))
    return isinstance(diff, tir.IntImm) and int(diff.value) == 0


def _expand_runtime(ctx: Context, node: Node, data: RelaxExpr) -> Any:
    shape_input = node.input(1)
    length = ctx.static_shape(shape_input)
    if length is None or len(length) != 1:
        raise node.unsupported("the shape input has no static length")
    rank_in = len(require_shape(ctx, node, data, "the input"))
    rank = max(rank_in, length[0])

    def elements(x: Any, s: Any) -> list[Any]:
        dims = [tir.const(1, "int64")] * (rank - rank_in) + [v for v in x.shape]
        wants = [tir.const(1, "int64")] * (rank - length[0]) + [
            scalar_of(s, i) for i in range(length[0])
        ]
        return [sop.select(sop.equal(w, 1), d, w) for d, w in zip(dims, wants, strict=True)]

    def checks(x: Any, s: Any) -> list[Any]:
        out = elements(x, s)
        dims = [tir.const(1, "int64")] * (rank - rank_in) + [as_int64(v) for v in x.shape]
        return [
            sop.logical_or(sop.equal(d, 1), sop.equal(d, o)) for d, o in zip(dims, out, strict=True)
        ]

    dims = runtime_dims(ctx, node, rank, elements, [data, shape_input], checks)
    return op.broadcast_to(data, dims)


@converter("ConstantOfShape", since=9)
def constant_of_shape(ctx: Context, node: Node) -> Any:
    """Fill value from the value attribute (default float32 0); shape known or run-time."""
    value = node.attr("value", None)
    fill = np.zeros(1, np.float32) if value is None else np.asarray(value).reshape(-1)
    if fill.size != 1:
        raise FrontendError(f"from_onnx: {node.label}: value must hold one element")
    dtype = "bool" if fill.dtype == bool else str(fill.dtype)
    dims: list[Any] | None = ctx.shape_values(node, 0, "shape")
    if dims is None:
        shape_input = node.input(0)
        length = ctx.static_shape(shape_input)
        if length is None or len(length) != 1:
            raise node.unsupported("the shape input has no static length")
        count = length[0]
        dims = list(
            runtime_dims(
                ctx, node, count, lambda s: [scalar_of(s, i) for i in range(count)], [shape_input]
            )
        )
    if all(isinstance(d, int) for d in dims) and int(np.prod(dims)) <= _FOLD_LIMIT:
        return ctx.const(np.full(dims, fill[0], dtype=fill.dtype), dtype)
    scalar = fill[0].item()
    return op.full(dims, ctx.const(scalar, dtype), dtype)
