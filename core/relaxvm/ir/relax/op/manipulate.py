"""Shape manipulation: reshape, permute_dims, expand_dims, squeeze, flatten, concat, split,
strided_slice, take, broadcast_to; tril, triu, flip, tile, repeat, stack, meshgrid and
collapse_sum_* come from :mod:`.manipulate_extra`."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from ....runtime.dtype import DataTypeCode
from ...expr import IntImm, PrimExpr
from ...op import add, floordiv, max_expr, min_expr, sub
from .._base import RelaxExpr
from ..expr import Call, Tuple, Var
from ..struct_info import PrimStructInfo, StructInfo, TensorStructInfo, TupleStructInfo
from ._common import (
    as_axes,
    as_int,
    as_int_tuple,
    as_shape_expr,
    dims_text,
    is_const,
    make_call,
    normalize_axes,
    normalize_axis,
    product,
    prove_equal,
    prove_not_equal,
    shape_arg_ndim,
    shape_arg_values,
    tensor,
)
from .registry import InferContext, OpError, register_op
from .reshape import infer_reshape, reshape, shape_text

_shape_text = shape_text


# ---- axis permutations and rank changes -------------------------------------------------------
def _infer_permute_dims(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "x")
    axes = ctx.attr(call, "axes")
    if info.ndim == -1:
        return tensor(None, info.dtype, -1 if axes is None else len(axes), like=info)
    if axes is None:
        order = list(range(info.ndim))[::-1]
    else:
        if len(axes) != info.ndim:
            raise ctx.error(
                f"axes {list(axes)} must list each of the {info.ndim} axes of x "
                f"(shape {dims_text(info)}) once"
            )
        order = normalize_axes(ctx, axes, info.ndim)
    values = info.shape_values
    if values is None:
        return tensor(None, info.dtype, info.ndim, like=info)
    return tensor([values[a] for a in order], info.dtype, like=info)


def permute_dims(x: RelaxExpr, axes: Sequence[int] | None = None) -> Call:
    """Permute the axes of ``x``; reverses them when ``axes`` is None (a transpose)."""
    return make_call("relax.permute_dims", [x], {"axes": as_axes("relax.permute_dims", axes)})


def _infer_expand_dims(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "x")
    axes = ctx.attr(call, "axis")
    if info.ndim == -1:
        return tensor(None, info.dtype, -1, like=info)
    out_ndim = info.ndim + len(axes)
    new_axes = set(normalize_axes(ctx, axes, out_ndim))
    values = info.shape_values
    if values is None:
        return tensor(None, info.dtype, out_ndim, like=info)
    source = iter(values)
    out = [IntImm(1) if i in new_axes else next(source) for i in range(out_ndim)]
    return tensor(out, info.dtype, like=info)


def expand_dims(x: RelaxExpr, axis: int | Sequence[int]) -> Call:
    """Insert extent-1 axes at ``axis`` (positions in the result)."""
    return make_call("relax.expand_dims", [x], {"axis": as_axes("relax.expand_dims", axis)})


def _infer_squeeze(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "x")
    axes = ctx.attr(call, "axis")
    if info.ndim == -1:
        return tensor(None, info.dtype, -1, like=info)
    values = info.shape_values
    if axes is None:
        if values is None:
            return tensor(None, info.dtype, -1, like=info)
        if any(not isinstance(v, IntImm) for v in values):
            # A symbolic extent may or may not be 1 at run time: the rank is unknown.
            return tensor(None, info.dtype, -1, like=info)
        return tensor([v for v in values if not is_const(v, 1)], info.dtype, like=info)
    dropped = set(normalize_axes(ctx, axes, info.ndim))
    if values is None:
        return tensor(None, info.dtype, info.ndim - len(dropped), like=info)
    for axis in sorted(dropped):
        if isinstance(values[axis], IntImm) and not is_const(values[axis], 1):
            raise ctx.error(
                f"cannot squeeze axis {axis} of x with shape {dims_text(info)}: its extent is "
                f"{values[axis]}, not 1"
            )
    return tensor([v for i, v in enumerate(values) if i not in dropped], info.dtype, like=info)


def squeeze(x: RelaxExpr, axis: int | Sequence[int] | None = None) -> Call:
    """Remove extent-1 axes (those listed in ``axis``, or all of them when None)."""
    return make_call("relax.squeeze", [x], {"axis": as_axes("relax.squeeze", axis)})


def _infer_flatten(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "x")
    values = info.shape_values
    if values is None:
        return tensor(None, info.dtype, 1, like=info)
    return tensor([ctx.analyzer.simplify(product(values))], info.dtype, like=info)


def flatten(x: RelaxExpr) -> Call:
    """``x`` as a 1-d tensor (a 0-d tensor becomes shape ``(1,)``)."""
    return make_call("relax.flatten", [x])


# ---- joining and splitting --------------------------------------------------------------------
def _infer_concat(call: Call, ctx: InferContext) -> StructInfo:
    sinfo = ctx.arg_sinfo(call, 0)
    if not isinstance(sinfo, TupleStructInfo):
        raise ctx.type_error(f"the argument must be a tuple of tensors, got {sinfo}")
    infos: list[TensorStructInfo] = []
    for index, field in enumerate(sinfo.fields):
        if not isinstance(field, TensorStructInfo):
            raise ctx.type_error(f"tuple field {index} must be a tensor, got {field}")
        infos.append(field)
    if not infos:
        raise ctx.error("needs at least one tensor")
    dtypes = {i.dtype for i in infos}
    dtype = None if None in dtypes or len(dtypes) > 1 else infos[0].dtype
    if len(dtypes - {None}) > 1:
        raise ctx.type_error(
            "tensors must have the same dtype, got "
            + ", ".join(f"{dims_text(i)} {i.dtype}" for i in infos)
        )
    ranks = {i.ndim for i in infos} - {-1}
    if len(ranks) > 1:
        raise ctx.error(
            "tensors must have the same rank, got shapes " + ", ".join(dims_text(i) for i in infos)
        )
    if not ranks:
        return tensor(None, dtype, -1, like=infos[0])
    ndim = ranks.pop()
    if ndim == 0:
        raise ctx.error("cannot concatenate 0-d tensors")
    axis = normalize_axis(ctx, as_int(ctx.op_name, "axis", ctx.attr(call, "axis", 0)), ndim)
    shapes = [i.shape_values for i in infos]
    if any(s is None for s in shapes):
        return tensor(None, dtype, ndim, like=infos[0])
    first = shapes[0]
    assert first is not None
    out = list(first)
    for info, shape in zip(infos[1:], shapes[1:], strict=False):
        assert shape is not None
        for dim in range(ndim):
            if dim == axis:
                out[dim] = add(out[dim], shape[dim])
            elif not prove_equal(ctx, out[dim], shape[dim]) and prove_not_equal(
                ctx, out[dim], shape[dim]
            ):
                raise ctx.error(
                    f"tensors with shapes {dims_text(infos[0])} and {dims_text(info)} differ "
                    f"in dimension {dim} ({out[dim]} vs {shape[dim]}), which is not the "
                    f"concatenation axis {axis}"
                )
    out[axis] = ctx.analyzer.simplify(out[axis])
    return tensor(out, dtype, like=infos[0])


def concat(tensors: RelaxExpr | Sequence[RelaxExpr], axis: int = 0) -> Call:
    """Concatenate a tuple of tensors along ``axis``."""
    if not isinstance(tensors, RelaxExpr):
        tensors = Tuple(list(tensors))
    return make_call("relax.concat", [tensors], {"axis": as_int("relax.concat", "axis", axis)})


def _infer_split(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "x")
    spec = ctx.attr(call, "indices_or_sections")
    is_sections = isinstance(spec, int)
    count = spec if is_sections else len(spec) + 1
    if info.ndim == -1:
        return TupleStructInfo([tensor(None, info.dtype, -1, like=info)] * count)
    axis = normalize_axis(ctx, ctx.attr(call, "axis", 0), info.ndim)
    values = info.shape_values
    if values is None:
        return TupleStructInfo([tensor(None, info.dtype, info.ndim, like=info)] * count)
    extent = values[axis]
    if is_sections:
        if isinstance(extent, IntImm) and extent.value % count:
            raise ctx.error(
                f"cannot split axis {axis} of x with shape {dims_text(info)} into {count} equal "
                f"sections: {extent} is not a multiple of {count}"
            )
        piece = ctx.analyzer.simplify(floordiv(extent, count))
        extents = [piece] * count
    else:
        bounds: list[PrimExpr] = [IntImm(0), *(IntImm(i) for i in spec), extent]
        extents = [
            ctx.analyzer.simplify(
                max_expr(sub(min_expr(bounds[j + 1], extent), min_expr(bounds[j], extent)), 0)
            )
            for j in range(count)
        ]
    fields = []
    for piece in extents:
        out = list(values)
        out[axis] = piece
        fields.append(tensor(out, info.dtype, like=info))
    return TupleStructInfo(fields)


def split(x: RelaxExpr, indices_or_sections: int | Sequence[int], axis: int = 0) -> Call:
    """Split ``x`` along ``axis`` into equal sections or at the given indices (a tuple)."""
    name = "relax.split"
    spec: int | tuple[int, ...]
    if isinstance(indices_or_sections, int) and not isinstance(indices_or_sections, bool):
        if indices_or_sections < 1:
            raise OpError(f"{name}: the number of sections must be >= 1, got {indices_or_sections}")
        spec = indices_or_sections
    else:
        spec = as_int_tuple(name, "indices_or_sections", indices_or_sections)
        if list(spec) != sorted(spec):
            raise OpError(f"{name}: split indices must be ascending, got {list(spec)}")
    return make_call(name, [x], {"indices_or_sections": spec, "axis": as_int(name, "axis", axis)})


# ---- slicing and gathering --------------------------------------------------------------------
def _slice_extent(ctx: InferContext, dim: PrimExpr, begin: int, end: int, stride: int) -> PrimExpr:
    if isinstance(dim, IntImm):
        return IntImm(len(range(*builtins.slice(begin, end, stride).indices(dim.value))))
    if stride < 0 or begin < 0 or end < 0:
        # Symbolic extent with counting from the end: only the rank is certain, so the
        # extent is expressed through the clamped bounds.
        lo = max_expr(add(dim, begin), 0) if begin < 0 else min_expr(IntImm(begin), dim)
        hi = (
            max_expr(add(dim, end), -1 if stride < 0 else 0)
            if end < 0
            else min_expr(IntImm(end), dim)
        )
        span = sub(lo, hi) if stride < 0 else sub(hi, lo)
        step = -stride if stride < 0 else stride
        return ctx.analyzer.simplify(max_expr(floordiv(add(span, step - 1), step), 0))
    hi = min_expr(IntImm(end), dim)
    lo = min_expr(IntImm(begin), dim)
    return ctx.analyzer.simplify(floordiv(add(sub(hi, lo), stride - 1), stride))


def _infer_strided_slice(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "x")
    axes, begin, end = (ctx.attr(call, k, ()) for k in ("axes", "begin", "end"))
    strides = ctx.attr(call, "strides") or (1,) * len(axes)
    if not len(axes) == len(begin) == len(end) == len(strides):
        raise ctx.error(
            f"axes, begin, end and strides must have the same length, got {len(axes)}, "
            f"{len(begin)}, {len(end)} and {len(strides)}"
        )
    if any(s == 0 for s in strides):
        raise ctx.error(f"strides must be non-zero, got {list(strides)}")
    if info.ndim == -1:
        return tensor(None, info.dtype, -1, like=info)
    normalized = normalize_axes(ctx, axes, info.ndim)
    values = info.shape_values
    if values is None:
        return tensor(None, info.dtype, info.ndim, like=info)
    out = list(values)
    for axis, b, e, s in zip(normalized, begin, end, strides, strict=False):
        out[axis] = _slice_extent(ctx, values[axis], b, e, s)
    return tensor(out, info.dtype, like=info)


def strided_slice(
    x: RelaxExpr,
    axes: Sequence[int],
    begin: Sequence[int],
    end: Sequence[int],
    strides: Sequence[int] | None = None,
) -> Call:
    """``x[begin:end:stride]`` along each of ``axes`` (Python slice semantics per axis)."""
    name = "relax.strided_slice"
    attrs = {
        "axes": as_int_tuple(name, "axes", axes),
        "begin": as_int_tuple(name, "begin", begin),
        "end": as_int_tuple(name, "end", end),
        "strides": None if strides is None else as_int_tuple(name, "strides", strides),
    }
    return make_call(name, [x], attrs)


def _infer_take(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "x")
    index_sinfo = ctx.arg_sinfo(call, 1)
    if isinstance(index_sinfo, PrimStructInfo):
        # A scalar index (``R.prim_value(i)`` or an ``R.Prim`` value), as TVM allows: it
        # takes one slice, like a 0-d index tensor, removing the axis.
        indices = TensorStructInfo([], index_sinfo.dtype)
    else:
        indices = ctx.tensor_arg(call, 1, "indices")
    if indices.dtype is not None and indices.dtype.code not in (
        DataTypeCode.INT,
        DataTypeCode.UINT,
    ):
        raise ctx.type_error(f"indices must have an integer dtype, got {indices.dtype}")
    axis = ctx.attr(call, "axis")
    if axis is None:
        return TensorStructInfo(indices.shape, info.dtype, ndim=indices.ndim, vdevice=info.vdevice)
    if info.ndim == -1 or indices.ndim == -1:
        return tensor(None, info.dtype, -1, like=info)
    axis = normalize_axis(ctx, axis, info.ndim)
    values, index_values = info.shape_values, indices.shape_values
    if values is None or index_values is None:
        return tensor(None, info.dtype, info.ndim - 1 + indices.ndim, like=info)
    return tensor([*values[:axis], *index_values, *values[axis + 1 :]], info.dtype, like=info)


def take(x: RelaxExpr, indices: RelaxExpr, axis: int | None = None) -> Call:
    """Gather entries of ``x`` along ``axis`` (of the flattened ``x`` when None)."""
    attrs = {"axis": None if axis is None else as_int("relax.take", "axis", axis)}
    return make_call("relax.take", [x, indices], attrs)


def _infer_broadcast_to(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "x")
    target = shape_arg_values(ctx, call, 1)
    if target is None:
        shape_arg = call.args[1]
        if isinstance(shape_arg, Var):
            return TensorStructInfo(shape_arg, info.dtype, vdevice=info.vdevice)
        return tensor(None, info.dtype, shape_arg_ndim(ctx, call, 1), like=info)
    if info.ndim != -1 and info.ndim > len(target):
        raise ctx.error(
            f"cannot broadcast x of shape {dims_text(info)} to the lower-rank shape "
            f"{_shape_text(target)}"
        )
    values = info.shape_values
    if values is not None:
        offset = len(target) - len(values)
        for index, dim in enumerate(values):
            want = target[offset + index]
            if is_const(dim, 1) or prove_equal(ctx, dim, want):
                continue
            if prove_not_equal(ctx, dim, want):
                raise ctx.error(
                    f"cannot broadcast x of shape {dims_text(info)} to {_shape_text(target)}: "
                    f"dimension {index} of x is {dim}, which is neither 1 nor {want}"
                )
    return tensor(target, info.dtype, like=info)


def broadcast_to(x: RelaxExpr, shape: Any) -> Call:
    """Broadcast ``x`` to ``shape`` (numpy rules)."""
    return make_call("relax.broadcast_to", [x, as_shape_expr("relax.broadcast_to", shape)])


def _register() -> None:
    register_op("relax.reshape", num_inputs=2, infer=infer_reshape, doc="reshape (one -1)")
    register_op(
        "relax.permute_dims",
        num_inputs=1,
        infer=_infer_permute_dims,
        attrs={"axes": "the new order; None reverses"},
        doc="transpose",
    )
    register_op(
        "relax.expand_dims",
        num_inputs=1,
        infer=_infer_expand_dims,
        attrs={"axis": "positions of the new axes in the result"},
        doc="insert axes",
    )
    register_op(
        "relax.squeeze",
        num_inputs=1,
        infer=_infer_squeeze,
        attrs={"axis": "axes to drop; None drops every extent-1 axis"},
        doc="drop axes",
    )
    register_op("relax.flatten", num_inputs=1, infer=_infer_flatten, doc="to 1-d")
    register_op(
        "relax.concat",
        num_inputs=1,
        infer=_infer_concat,
        attrs={"axis": "the axis to join along"},
        doc="join a tuple of tensors",
    )
    register_op(
        "relax.split",
        num_inputs=1,
        infer=_infer_split,
        attrs={"indices_or_sections": "a section count or split indices", "axis": "the axis"},
        doc="split into a tuple",
    )
    register_op(
        "relax.strided_slice",
        num_inputs=1,
        infer=_infer_strided_slice,
        attrs={"axes": "sliced axes", "begin": "starts", "end": "stops", "strides": "steps"},
        doc="slice",
    )
    register_op(
        "relax.take",
        num_inputs=2,
        infer=_infer_take,
        attrs={"axis": "gather axis; None gathers from the flattened tensor"},
        doc="gather",
    )
    register_op("relax.broadcast_to", num_inputs=2, infer=_infer_broadcast_to, doc="broadcast")


_register()

# The further ops live in their own module (size); they are part of this namespace.
from .manipulate_extra import *  # noqa: E402, F403
from .manipulate_extra import __all__ as _extra_all  # noqa: E402

__all__ = [
    *_extra_all,
    "broadcast_to",
    "concat",
    "expand_dims",
    "flatten",
    "permute_dims",
    "reshape",
    "split",
    "squeeze",
    "strided_slice",
    "take",
]
