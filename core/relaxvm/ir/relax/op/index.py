"""Index ops: gather_elements, gather_nd, scatter_elements, scatter_nd, one_hot.

Signatures, attributes and inference follow TVM v0.23's ``relax.op`` (``gather_elements``,
``gather_nd``, ``scatter_elements``, ``scatter_nd``, ``one_hot``). Inference rejects what it
can prove wrong (an index tensor wider than the data on an axis it does not index, mismatched
update shapes); what only the run can tell (symbolic extents, the index values themselves) the
kernels check (``plugins/relaxvm_ops/indexing.py``): an index out of range raises
``VMIndexError`` on every target.
"""

from __future__ import annotations

from collections.abc import Sequence

from ....runtime.dtype import DataTypeCode
from ...expr import IntImm, PrimExpr
from ...op import convert
from .._base import RelaxExpr
from ..expr import Call
from ..struct_info import PrimStructInfo, StructInfo, TensorStructInfo
from ._common import (
    as_int,
    as_prim_value,
    dims_text,
    make_call,
    normalize_axis,
    prove_not_equal,
    same_shape,
    tensor,
    unify_dtypes,
)
from .registry import InferContext, OpError, register_op

__all__ = ["gather_elements", "gather_nd", "one_hot", "scatter_elements", "scatter_nd"]

#: The ``reduction`` values of ``scatter_elements`` (TVM's ``ScatterElementsAttrs``).
SCATTER_ELEMENTS_REDUCTIONS = ("update", "add", "mul", "mean", "max", "min")
#: The ``reduction`` values of ``scatter_nd`` (TVM's ``ScatterNDAttrs``).
SCATTER_ND_REDUCTIONS = ("update", "add", "mul", "min", "max")


# ---- shared checks --------------------------------------------------------------------------
def _int_indices(ctx: InferContext, indices: TensorStructInfo) -> None:
    if indices.dtype is not None and indices.dtype.code not in (
        DataTypeCode.INT,
        DataTypeCode.UINT,
    ):
        raise ctx.type_error(f"indices must have an integer dtype, got {indices.dtype}")


def _prove_greater(ctx: InferContext, a: PrimExpr, b: PrimExpr) -> bool:
    """True when the analyzer proves ``a > b`` for every value of the variables."""
    diff = ctx.analyzer.simplify(convert(a) - convert(b))
    if isinstance(diff, IntImm):
        return diff.value > 0
    return bool(ctx.analyzer.const_int_bound(diff).min_value > 0)


def _check_within(
    ctx: InferContext,
    inner: TensorStructInfo,
    inner_name: str,
    outer: TensorStructInfo,
    outer_name: str,
    skip: int | None,
) -> None:
    """An error when ``inner`` is provably longer than ``outer`` on an axis other than ``skip``."""
    a, b = inner.shape_values, outer.shape_values
    if a is None or b is None:
        return
    for axis, (x, y) in enumerate(zip(a, b, strict=False)):
        if axis != skip and _prove_greater(ctx, x, y):
            raise ctx.error(
                f"{inner_name} of shape {dims_text(inner)} is longer than {outer_name} of shape "
                f"{dims_text(outer)} on axis {axis}"
            )


def _check_same_shape(
    ctx: InferContext,
    a: Sequence[PrimExpr] | None,
    a_text: str,
    b: Sequence[PrimExpr] | None,
    b_text: str,
) -> None:
    if a is None or b is None:
        return
    if len(a) != len(b) or any(prove_not_equal(ctx, x, y) for x, y in zip(a, b, strict=False)):
        raise ctx.error(f"{a_text} must equal {b_text}")


def _text(values: Sequence[PrimExpr]) -> str:
    inner = ", ".join(str(v) for v in values)
    return f"({inner},)" if len(values) == 1 else f"({inner})"


def _index_depth(ctx: InferContext, indices: TensorStructInfo) -> int | None:
    """The constant last extent of ``indices`` (how many axes one index tuple names)."""
    if indices.ndim == 0:
        raise ctx.error("indices must have rank at least 1, got a scalar")
    values = indices.shape_values
    if values is None or not isinstance(values[-1], IntImm):
        return None
    return int(values[-1].value)


# ---- gather_elements ------------------------------------------------------------------------
def _infer_gather_elements(call: Call, ctx: InferContext) -> StructInfo:
    data = ctx.tensor_arg(call, 0, "data")
    indices = ctx.tensor_arg(call, 1, "indices")
    _int_indices(ctx, indices)
    if data.ndim == -1 or indices.ndim == -1:
        return same_shape(indices, data.dtype) if indices.ndim != -1 else tensor(None, data.dtype)
    if data.ndim != indices.ndim:
        raise ctx.error(
            f"data and indices must have the same rank, got data {dims_text(data)} and "
            f"indices {dims_text(indices)}"
        )
    if data.ndim == 0:
        raise ctx.error("data must have rank at least 1, got a scalar")
    axis = normalize_axis(ctx, ctx.attr(call, "axis", 0), data.ndim)
    _check_within(ctx, indices, "indices", data, "data", axis)
    return TensorStructInfo(indices.shape, data.dtype, ndim=indices.ndim, vdevice=data.vdevice)


def gather_elements(data: RelaxExpr, indices: RelaxExpr, axis: int = 0) -> Call:
    """``out[..., i, ...] = data[..., indices[..., i, ...], ...]`` along ``axis`` (ONNX
    GatherElements, numpy ``take_along_axis``).

    Parameters
    ----------
    data : RelaxExpr
        The tensor to read, rank at least 1.
    indices : RelaxExpr
        Integer tensor of ``data``'s rank; no longer than ``data`` on the other axes.
        Negative indices count from the end (numpy's rule); one out of
        ``[-data.shape[axis], data.shape[axis])`` raises ``VMIndexError`` when the call runs.
    axis : int
        The axis ``indices`` index.

    Returns
    -------
    Call
        Of ``indices``' shape and ``data``'s dtype.
    """
    attrs = {"axis": as_int("relax.gather_elements", "axis", axis)}
    return make_call("relax.gather_elements", [data, indices], attrs)


# ---- gather_nd ------------------------------------------------------------------------------
def _infer_gather_nd(call: Call, ctx: InferContext) -> StructInfo:
    data = ctx.tensor_arg(call, 0, "data")
    indices = ctx.tensor_arg(call, 1, "indices")
    _int_indices(ctx, indices)
    batch_dims = ctx.attr(call, "batch_dims", 0)
    if batch_dims < 0:
        raise ctx.error(f"batch_dims must be non-negative, got {batch_dims}")
    if data.ndim == -1 or indices.ndim == -1:
        return tensor(None, data.dtype, like=data)
    depth = _index_depth(ctx, indices)
    if batch_dims >= indices.ndim or batch_dims > data.ndim:
        raise ctx.error(
            f"batch_dims {batch_dims} must be below the rank of indices ({indices.ndim}) and "
            f"at most the rank of data ({data.ndim})"
        )
    if depth is None:
        return tensor(None, data.dtype, like=data)
    if depth > data.ndim - batch_dims:
        raise ctx.error(
            f"indices.shape[-1] ({depth}) must be at most the rank of data less batch_dims "
            f"({data.ndim} - {batch_dims})"
        )
    data_values, index_values = data.shape_values, indices.shape_values
    if index_values is not None and data_values is not None:
        for axis in range(batch_dims):
            if prove_not_equal(ctx, data_values[axis], index_values[axis]):
                raise ctx.error(
                    f"batch axis {axis} differs: data {dims_text(data)}, indices "
                    f"{dims_text(indices)}"
                )
    if index_values is None or data_values is None:
        return tensor(None, data.dtype, indices.ndim - 1 + data.ndim - batch_dims - depth, data)
    return tensor([*index_values[:-1], *data_values[batch_dims + depth :]], data.dtype, like=data)


def gather_nd(data: RelaxExpr, indices: RelaxExpr, batch_dims: int = 0) -> Call:
    """Gather slices of ``data`` named by index tuples (ONNX GatherND).

    Parameters
    ----------
    data : RelaxExpr
        The tensor to read.
    indices : RelaxExpr
        Integer tensor whose last axis (of constant extent ``k``) holds index tuples into
        ``data``'s axes ``batch_dims .. batch_dims + k - 1``; negative entries count from the
        end; an entry out of range raises ``VMIndexError`` when the call runs.
    batch_dims : int
        Leading axes shared by ``data`` and ``indices``.

    Returns
    -------
    Call
        Of shape ``indices.shape[:-1] + data.shape[batch_dims + k:]`` and ``data``'s dtype.
    """
    attrs = {"batch_dims": as_int("relax.gather_nd", "batch_dims", batch_dims)}
    return make_call("relax.gather_nd", [data, indices], attrs)


# ---- scatter_elements -----------------------------------------------------------------------
def _infer_scatter_elements(call: Call, ctx: InferContext) -> StructInfo:
    data = ctx.tensor_arg(call, 0, "data")
    indices = ctx.tensor_arg(call, 1, "indices")
    updates = ctx.tensor_arg(call, 2, "updates")
    _int_indices(ctx, indices)
    unify_dtypes(ctx, [data, updates], "data and updates")
    reduction = ctx.attr(call, "reduction", "update")
    if reduction not in SCATTER_ELEMENTS_REDUCTIONS:
        raise ctx.error(
            f"reduction must be one of {SCATTER_ELEMENTS_REDUCTIONS}, got {reduction!r}"
        )
    ranks = {info.ndim for info in (data, indices, updates) if info.ndim != -1}
    if len(ranks) > 1:
        raise ctx.error(
            f"data, indices and updates must have the same rank, got {dims_text(data)}, "
            f"{dims_text(indices)} and {dims_text(updates)}"
        )
    if data.ndim == 0:
        raise ctx.error("data must have rank at least 1, got a scalar")
    if data.ndim != -1:
        axis = normalize_axis(ctx, ctx.attr(call, "axis", 0), data.ndim)
        _check_within(ctx, indices, "indices", data, "data", axis)
    iv, uv = indices.shape_values, updates.shape_values
    if iv is not None and uv is not None:
        _check_same_shape(ctx, iv, f"indices' shape {_text(iv)}", uv, f"updates' {_text(uv)}")
    return same_shape(data, data.dtype)


def scatter_elements(
    data: RelaxExpr,
    indices: RelaxExpr,
    updates: RelaxExpr,
    axis: int = 0,
    reduction: str = "update",
) -> Call:
    """A copy of ``data`` with ``updates`` written at ``indices`` along ``axis`` (ONNX
    ScatterElements).

    Parameters
    ----------
    data : RelaxExpr
        The tensor to copy, rank at least 1.
    indices : RelaxExpr
        Integer tensor of ``data``'s rank; negative entries count from the end; one out of
        range raises ``VMIndexError`` when the call runs.
    updates : RelaxExpr
        Of ``indices``' shape and ``data``'s dtype.
    axis : int
        The axis ``indices`` index.
    reduction : str
        How an update combines with the element: ``"update"`` (replace), ``"add"``,
        ``"mul"``, ``"mean"`` (TVM's: ``(old + update) / 2`` per update), ``"max"``, ``"min"``.
        Updates apply in row-major order of ``indices``, so with repeated indices the last one
        wins for ``"update"``.

    Returns
    -------
    Call
        Of ``data``'s shape and dtype.
    """
    name = "relax.scatter_elements"
    if reduction not in SCATTER_ELEMENTS_REDUCTIONS:
        raise OpError(
            f"{name}: reduction must be one of {SCATTER_ELEMENTS_REDUCTIONS}, got {reduction!r}"
        )
    attrs = {"axis": as_int(name, "axis", axis), "reduction": reduction}
    return make_call(name, [data, indices, updates], attrs)


# ---- scatter_nd -----------------------------------------------------------------------------
def _infer_scatter_nd(call: Call, ctx: InferContext) -> StructInfo:
    data = ctx.tensor_arg(call, 0, "data")
    indices = ctx.tensor_arg(call, 1, "indices")
    updates = ctx.tensor_arg(call, 2, "updates")
    _int_indices(ctx, indices)
    unify_dtypes(ctx, [data, updates], "data and updates")
    reduction = ctx.attr(call, "reduction", "update")
    if reduction not in SCATTER_ND_REDUCTIONS:
        raise ctx.error(f"reduction must be one of {SCATTER_ND_REDUCTIONS}, got {reduction!r}")
    if indices.ndim == -1 or data.ndim == -1:
        return same_shape(data, data.dtype)
    depth = _index_depth(ctx, indices)
    if depth is None:
        return same_shape(data, data.dtype)
    if depth > data.ndim:
        raise ctx.error(
            f"indices.shape[-1] ({depth}) must be at most the rank of data ({data.ndim})"
        )
    want_rank = indices.ndim - 1 + data.ndim - depth
    if updates.ndim != -1 and updates.ndim != want_rank:
        raise ctx.error(
            f"updates must have rank {want_rank} (indices.ndim - 1 + data.ndim - "
            f"indices.shape[-1]), got {dims_text(updates)}"
        )
    dv, iv, uv = data.shape_values, indices.shape_values, updates.shape_values
    if dv is not None and iv is not None and uv is not None:
        want = [*iv[:-1], *dv[depth:]]
        _check_same_shape(ctx, uv, f"updates' shape {_text(uv)}", want, _text(want))
    return same_shape(data, data.dtype)


def scatter_nd(
    data: RelaxExpr, indices: RelaxExpr, updates: RelaxExpr, reduction: str = "update"
) -> Call:
    """A copy of ``data`` with slices ``updates`` written at index tuples (ONNX ScatterND).

    Parameters
    ----------
    data : RelaxExpr
        The tensor to copy.
    indices : RelaxExpr
        Integer tensor whose last axis (constant extent ``k``) holds index tuples into
        ``data``'s first ``k`` axes; negative entries count from the end; one out of range
        raises ``VMIndexError`` when the call runs.
    updates : RelaxExpr
        Of shape ``indices.shape[:-1] + data.shape[k:]`` and ``data``'s dtype.
    reduction : str
        ``"update"``, ``"add"``, ``"mul"``, ``"min"`` or ``"max"``; updates apply in
        row-major order (the last repeated tuple wins for ``"update"``).

    Returns
    -------
    Call
        Of ``data``'s shape and dtype.
    """
    name = "relax.scatter_nd"
    if reduction not in SCATTER_ND_REDUCTIONS:
        raise OpError(
            f"{name}: reduction must be one of {SCATTER_ND_REDUCTIONS}, got {reduction!r}"
        )
    return make_call(name, [data, indices, updates], {"reduction": reduction})


# ---- one_hot --------------------------------------------------------------------------------
def _infer_one_hot(call: Call, ctx: InferContext) -> StructInfo:
    indices = ctx.tensor_arg(call, 0, "indices")
    _int_indices(ctx, indices)
    values = []
    for index, what in ((1, "on_value"), (2, "off_value")):
        sinfo = ctx.arg_sinfo(call, index)
        if not isinstance(sinfo, PrimStructInfo):
            raise ctx.error(f"{what} must be a PrimValue, got {sinfo}")
        values.append(sinfo)
    on, off = values
    if on.dtype is not None and off.dtype is not None and on.dtype != off.dtype:
        raise ctx.type_error(
            f"on_value and off_value must have the same dtype, got {on.dtype} and {off.dtype}"
        )
    depth = ctx.attr(call, "depth")
    if depth < 0:
        raise ctx.error(f"depth must be non-negative, got {depth}")
    if indices.ndim == -1:
        return tensor(None, on.dtype)
    axis = normalize_axis(ctx, ctx.attr(call, "axis", -1), indices.ndim + 1)
    shape = indices.shape_values
    if shape is None:
        return tensor(None, on.dtype, indices.ndim + 1, like=indices)
    return tensor([*shape[:axis], IntImm("int64", depth), *shape[axis:]], on.dtype, like=indices)


def one_hot(
    indices: RelaxExpr,
    on_value: RelaxExpr | int | float,
    off_value: RelaxExpr | int | float,
    depth: int,
    axis: int = -1,
) -> Call:
    """One-hot encoding: ``out[..., k, ...] = on_value if indices[...] == k else off_value``.

    Parameters
    ----------
    indices : RelaxExpr
        Integer tensor. As in TVM, an index outside ``[0, depth)`` (negative ones included)
        gives a row of ``off_value`` (no error: the index never addresses memory).
    on_value, off_value : PrimValue
        The two values, of one dtype (the result's); numbers become PrimValues.
    depth : int
        The extent of the new axis.
    axis : int
        Where the new axis goes in the result (``-1``: last).

    Returns
    -------
    Call
        Of rank ``indices.ndim + 1``.
    """
    name = "relax.one_hot"
    on, off = as_prim_value(name, on_value), as_prim_value(name, off_value)
    attrs = {"depth": as_int(name, "depth", depth), "axis": as_int(name, "axis", axis)}
    return make_call(name, [indices, on, off], attrs)


def _register() -> None:
    register_op(
        "relax.gather_elements",
        num_inputs=2,
        infer=_infer_gather_elements,
        attrs={"axis": "the axis indices index"},
        doc="gather elements along an axis",
    )
    register_op(
        "relax.gather_nd",
        num_inputs=2,
        infer=_infer_gather_nd,
        attrs={"batch_dims": "leading axes shared by data and indices"},
        doc="gather slices by index tuples",
    )
    register_op(
        "relax.scatter_elements",
        num_inputs=3,
        infer=_infer_scatter_elements,
        attrs={"axis": "the axis indices index", "reduction": "how updates combine"},
        doc="scatter elements along an axis",
    )
    register_op(
        "relax.scatter_nd",
        num_inputs=3,
        infer=_infer_scatter_nd,
        attrs={"reduction": "how updates combine"},
        doc="scatter slices by index tuples",
    )
    register_op(
        "relax.one_hot",
        num_inputs=3,
        infer=_infer_one_hot,
        attrs={"depth": "extent of the new axis", "axis": "position of the new axis"},
        doc="one-hot encoding",
    )


_register()
