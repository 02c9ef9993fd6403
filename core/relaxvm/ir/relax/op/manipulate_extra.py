"""More shape manipulation: tril, triu, flip, tile, repeat, stack, collapse_sum_like,
collapse_sum_to and meshgrid (TVM v0.23 signatures; re-exported by :mod:`.manipulate`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ....runtime.dtype import DataTypeCode
from ...expr import IntImm, PrimExpr
from ...op import mul
from .._base import RelaxExpr
from ..expr import Call, Tuple, Var
from ..struct_info import PrimStructInfo, StructInfo, TensorStructInfo, TupleStructInfo
from ._common import (
    as_int,
    as_int_tuple,
    as_prim_value,
    as_shape_expr,
    dims_text,
    is_const,
    make_call,
    normalize_axis,
    product,
    prove_equal,
    prove_not_equal,
    same_shape,
    shape_arg_ndim,
    shape_arg_values,
    tensor,
)
from .registry import InferContext, OpError, register_op


def _int_scalar(ctx: InferContext, call: Call, index: int, what: str) -> PrimExpr | None:
    """The value of an integer PrimValue argument (None when only its type is known)."""
    sinfo = ctx.arg_sinfo(call, index)
    if not isinstance(sinfo, PrimStructInfo) or (
        sinfo.dtype is not None and sinfo.dtype.code not in (DataTypeCode.INT, DataTypeCode.UINT)
    ):
        raise ctx.type_error(f"{what} must be an integer PrimValue, got {sinfo}")
    return sinfo.value


def _tuple_tensors(ctx: InferContext, call: Call) -> list[TensorStructInfo]:
    """The tensor fields of a tuple argument (argument 0); an error for anything else."""
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
    return infos


def _as_tuple(tensors: RelaxExpr | Sequence[RelaxExpr]) -> RelaxExpr:
    return tensors if isinstance(tensors, RelaxExpr) else Tuple(list(tensors))


# ---- tril / triu ------------------------------------------------------------------------------
def _infer_tri(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "x")
    _int_scalar(ctx, call, 1, "k")
    if info.ndim != -1 and info.ndim < 2:
        raise ctx.error(
            f"needs a tensor of at least two dimensions, got x of shape {dims_text(info)}"
        )
    return same_shape(info, info.dtype)


def tril(x: RelaxExpr, k: int | PrimExpr | RelaxExpr = 0) -> Call:
    """The lower triangle of the last two axes of ``x``: entries with ``j - i <= k`` are kept,
    the others are zero (``k`` an int, PrimExpr or integer PrimValue)."""
    return make_call("relax.tril", [x, as_prim_value("relax.tril", k)])


def triu(x: RelaxExpr, k: int | PrimExpr | RelaxExpr = 0) -> Call:
    """The upper triangle of the last two axes of ``x``: entries with ``j - i >= k`` are kept,
    the others are zero (``k`` an int, PrimExpr or integer PrimValue)."""
    return make_call("relax.triu", [x, as_prim_value("relax.triu", k)])


# ---- flip, tile, repeat -----------------------------------------------------------------------
def _infer_flip(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "data")
    if info.ndim != -1:
        normalize_axis(ctx, ctx.attr(call, "axis"), info.ndim)
    return same_shape(info, info.dtype)


def flip(data: RelaxExpr, axis: int) -> Call:
    """``data`` with the order of its entries along ``axis`` reversed (the shape is kept)."""
    return make_call("relax.flip", [data], {"axis": as_int("relax.flip", "axis", axis)})


def _infer_tile(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "data")
    repeats: tuple[int, ...] = ctx.attr(call, "repeats")
    if info.ndim == -1:
        return tensor(None, info.dtype, -1, like=info)
    ndim = max(info.ndim, len(repeats))
    values = info.shape_values
    if values is None:
        return tensor(None, info.dtype, ndim, like=info)
    # Both sides are padded on the left with 1s to the common rank, as numpy.tile does.
    dims = [IntImm(1)] * (ndim - len(values)) + list(values)
    reps = [1] * (ndim - len(repeats)) + list(repeats)
    out = [ctx.analyzer.simplify(mul(d, r)) for d, r in zip(dims, reps, strict=True)]
    return tensor(out, info.dtype, like=info)


def tile(data: RelaxExpr, repeats: int | Sequence[int]) -> Call:
    """``data`` repeated ``repeats[i]`` times along each axis (numpy.tile).

    The result has rank ``max(data.ndim, len(repeats))``: the shorter of the two is padded
    with leading 1s.
    """
    name = "relax.tile"
    reps = as_int_tuple(name, "repeats", repeats)
    if any(r < 0 for r in reps):
        raise OpError(f"{name}: repeats must be non-negative, got {list(reps)}")
    return make_call(name, [data], {"repeats": reps})


def _infer_repeat(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "data")
    repeats, axis = ctx.attr(call, "repeats"), ctx.attr(call, "axis")
    values = info.shape_values
    if axis is None:
        if values is None:
            return tensor(None, info.dtype, 1, like=info)
        return tensor([ctx.analyzer.simplify(mul(product(values), repeats))], info.dtype, like=info)
    if info.ndim == -1:
        return tensor(None, info.dtype, -1, like=info)
    axis = normalize_axis(ctx, axis, info.ndim)
    if values is None:
        return tensor(None, info.dtype, info.ndim, like=info)
    out = list(values)
    out[axis] = ctx.analyzer.simplify(mul(values[axis], repeats))
    return tensor(out, info.dtype, like=info)


def repeat(data: RelaxExpr, repeats: int, axis: int | None = None) -> Call:
    """Each entry of ``data`` repeated ``repeats`` times along ``axis`` (numpy.repeat);
    with ``axis=None`` the flattened tensor is repeated and the result is 1-d."""
    name = "relax.repeat"
    count = as_int(name, "repeats", repeats)
    if count < 1:
        raise OpError(f"{name}: repeats must be a positive int, got {count}")
    attrs = {"repeats": count, "axis": None if axis is None else as_int(name, "axis", axis)}
    return make_call(name, [data], attrs)


# ---- stack and meshgrid -----------------------------------------------------------------------
def _common_dtype(ctx: InferContext, infos: Sequence[TensorStructInfo]) -> Any:
    dtypes = {i.dtype for i in infos}
    if len(dtypes - {None}) > 1:
        raise ctx.type_error(
            "tensors must have the same dtype, got "
            + ", ".join(f"{dims_text(i)} {i.dtype}" for i in infos)
        )
    return None if None in dtypes else infos[0].dtype


def _infer_stack(call: Call, ctx: InferContext) -> StructInfo:
    infos = _tuple_tensors(ctx, call)
    dtype = _common_dtype(ctx, infos)
    ranks = {i.ndim for i in infos} - {-1}
    if len(ranks) > 1:
        raise ctx.error(
            "tensors must have the same shape, got " + ", ".join(dims_text(i) for i in infos)
        )
    axis = ctx.attr(call, "axis", 0)
    if not ranks:
        return tensor(None, dtype, -1, like=infos[0])
    ndim = ranks.pop()
    axis = normalize_axis(ctx, axis, ndim + 1)
    known = [i.shape_values for i in infos if i.shape_values is not None]
    if not known:
        return tensor(None, dtype, ndim + 1, like=infos[0])
    first = known[0]
    for shape in known[1:]:
        for dim in range(ndim):
            if not prove_equal(ctx, first[dim], shape[dim]) and prove_not_equal(
                ctx, first[dim], shape[dim]
            ):
                raise ctx.error(
                    "tensors must have the same shape, got "
                    + ", ".join(dims_text(i) for i in infos)
                )
    out = [*first[:axis], IntImm(len(infos)), *first[axis:]]
    return tensor(out, dtype, like=infos[0])


def stack(tensors: RelaxExpr | Sequence[RelaxExpr], axis: int = 0) -> Call:
    """Join a tuple of same-shaped tensors along a new axis ``axis`` of the result."""
    return make_call(
        "relax.stack", [_as_tuple(tensors)], {"axis": as_int("relax.stack", "axis", axis)}
    )


def _infer_meshgrid(call: Call, ctx: InferContext) -> StructInfo:
    infos = _tuple_tensors(ctx, call)
    dtype = _common_dtype(ctx, infos)
    for index, info in enumerate(infos):
        if info.ndim not in (1, -1):
            raise ctx.error(f"tensor {index} must be 1-d, got shape {dims_text(info)}")
    count = len(infos)
    values = [i.shape_values for i in infos]
    if any(v is None for v in values):
        return TupleStructInfo([tensor(None, dtype, count, like=infos[0])] * count)
    dims = [v[0] for v in values if v is not None]
    if ctx.attr(call, "indexing", "ij") == "xy" and count >= 2:
        dims[0], dims[1] = dims[1], dims[0]
    return TupleStructInfo([tensor(dims, dtype, like=infos[0])] * count)


def meshgrid(tensors: RelaxExpr | Sequence[RelaxExpr], indexing: str = "ij") -> Call:
    """Coordinate grids from 1-d tensors (numpy.meshgrid): a tuple of one tensor per input.

    ``indexing="ij"`` gives shape ``(len0, len1, ...)``; ``"xy"`` swaps the first two axes.
    """
    if indexing not in ("ij", "xy"):
        raise OpError(f"relax.meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    return make_call("relax.meshgrid", [_as_tuple(tensors)], {"indexing": indexing})


# ---- collapse_sum -----------------------------------------------------------------------------
def _collapse_to(
    ctx: InferContext, info: TensorStructInfo, target: Sequence[PrimExpr] | None, ndim: int
) -> None:
    """Errors when ``data`` (``info``) is not a broadcast of the target shape."""
    if info.ndim != -1 and ndim != -1 and ndim > info.ndim:
        raise ctx.error(
            f"cannot collapse data of shape {dims_text(info)} to a shape of higher rank {ndim}"
        )
    values = info.shape_values
    if values is None or target is None:
        return
    offset = len(values) - len(target)
    for index, want in enumerate(target):
        have = values[offset + index]
        if is_const(want, 1) or prove_equal(ctx, have, want):
            continue
        if prove_not_equal(ctx, have, want):
            shown = ", ".join(str(v) for v in target)
            raise ctx.error(
                f"cannot collapse data of shape {dims_text(info)} to ({shown}): dimension "
                f"{offset + index} of data is {have}, which is neither {want} nor summed over"
            )


def _infer_collapse_sum_like(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "data")
    target = ctx.tensor_arg(call, 1, "collapse_target")
    _collapse_to(ctx, info, target.shape_values, target.ndim)
    return TensorStructInfo(target.shape, info.dtype, ndim=target.ndim, vdevice=info.vdevice)


def _infer_collapse_sum_to(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "data")
    values = shape_arg_values(ctx, call, 1)
    ndim = len(values) if values is not None else shape_arg_ndim(ctx, call, 1)
    _collapse_to(ctx, info, values, ndim)
    if values is None:
        shape_arg = call.args[1]
        if isinstance(shape_arg, Var):
            return TensorStructInfo(shape_arg, info.dtype, vdevice=info.vdevice)
        return tensor(None, info.dtype, ndim, like=info)
    return tensor(values, info.dtype, like=info)


def collapse_sum_like(data: RelaxExpr, collapse_target: RelaxExpr) -> Call:
    """Sum ``data`` down to the shape of ``collapse_target`` (see :func:`collapse_sum_to`)."""
    return make_call("relax.collapse_sum_like", [data, collapse_target])


def collapse_sum_to(data: RelaxExpr, shape: Any) -> Call:
    """Sum ``data`` down to ``shape``, the inverse of broadcasting (for gradients).

    Axes are matched from the right; ``data`` is summed over its leading axes that ``shape``
    lacks and over every axis where ``shape`` has extent 1.
    """
    name = "relax.collapse_sum_to"
    return make_call(name, [data, as_shape_expr(name, shape)])


def _register() -> None:
    register_op(
        "relax.tril", num_inputs=2, infer=_infer_tri, doc="lower triangle (k: diagonal offset)"
    )
    register_op(
        "relax.triu", num_inputs=2, infer=_infer_tri, doc="upper triangle (k: diagonal offset)"
    )
    register_op(
        "relax.flip",
        num_inputs=1,
        infer=_infer_flip,
        attrs={"axis": "the axis to reverse"},
        doc="reverse along an axis",
    )
    register_op(
        "relax.tile",
        num_inputs=1,
        infer=_infer_tile,
        attrs={"repeats": "repetitions per axis (aligned from the right)"},
        doc="numpy.tile",
    )
    register_op(
        "relax.repeat",
        num_inputs=1,
        infer=_infer_repeat,
        attrs={"repeats": "copies of each entry", "axis": "None repeats the flattened tensor"},
        doc="numpy.repeat",
    )
    register_op(
        "relax.stack",
        num_inputs=1,
        infer=_infer_stack,
        attrs={"axis": "position of the new axis in the result"},
        doc="join a tuple of tensors along a new axis",
    )
    register_op(
        "relax.meshgrid",
        num_inputs=1,
        infer=_infer_meshgrid,
        attrs={"indexing": "'ij' (matrix) or 'xy' (Cartesian)"},
        doc="coordinate grids",
    )
    register_op(
        "relax.collapse_sum_like",
        num_inputs=2,
        infer=_infer_collapse_sum_like,
        doc="sum down to another tensor's shape",
    )
    register_op(
        "relax.collapse_sum_to",
        num_inputs=2,
        infer=_infer_collapse_sum_to,
        doc="sum down to a shape",
    )


_register()

__all__ = [
    "collapse_sum_like",
    "collapse_sum_to",
    "flip",
    "meshgrid",
    "repeat",
    "stack",
    "tile",
    "tril",
    "triu",
]
