"""Sorting, searching and einsum ops: sort, argsort, topk, einsum.

Signatures, attribute names and inference follow TVM v0.23 (``relax.op.sort`` ...):

* ``sort`` keeps the input's shape and dtype;
* ``argsort`` keeps the shape; its dtype is the ``dtype`` attribute (the input's when None);
* ``topk`` replaces the ``axis`` extent by ``k`` unless ``k < 1`` (all of them) or the extent
  is a constant ``<= k``; ``ret_type`` picks ``(values, indices)``, ``values`` or ``indices``;
* ``einsum`` takes a tuple of tensors of one dtype and numpy subscripts (:mod:`._einsum`).

Order (the kernels in ``relaxvm_ops.sort`` implement it): sorting is stable in both directions,
so equal keys keep their original order (``-0.0`` and ``0.0`` are equal); NaN is greater than
every number, so it sorts last ascending and first descending (as torch does; numpy's
``np.sort`` agrees ascending). ``topk`` takes the first ``k`` of that order, so ties resolve to
the lowest index.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...expr import IntImm, PrimExpr
from .._base import RelaxExpr
from ..expr import Call, Tuple
from ..struct_info import StructInfo, TensorStructInfo, TupleStructInfo
from ._common import (
    as_int,
    broadcast_dim,
    dtype_attr,
    make_call,
    normalize_axis,
    same_shape,
    tensor,
)
from .einsum_spec import label_dims, parse_einsum
from .registry import InferContext, OpError, register_op

__all__ = ["argsort", "einsum", "sort", "topk"]

RET_TYPES = ("both", "values", "indices")


def _as_bool(name: str, param: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise OpError(f"{name}: {param} must be a bool, got {value!r}")
    return value


def _check_axis(ctx: InferContext, call: Call, info: TensorStructInfo) -> None:
    if info.ndim != -1:
        normalize_axis(ctx, ctx.attr(call, "axis", -1), info.ndim)


def _infer_sort(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "data")
    _check_axis(ctx, call, info)
    return same_shape(info, info.dtype)


def _infer_argsort(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "data")
    _check_axis(ctx, call, info)
    dtype = ctx.attr(call, "dtype")
    return same_shape(info, dtype if dtype is not None else info.dtype)


def _infer_topk(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "data")
    _check_axis(ctx, call, info)
    k = ctx.attr(call, "k", 1)
    ret_type = ctx.attr(call, "ret_type", "both")
    if ret_type not in RET_TYPES:
        raise ctx.error(f"ret_type must be one of {', '.join(RET_TYPES)}, got {ret_type!r}")
    index_dtype = ctx.attr(call, "dtype")
    if index_dtype is None:
        index_dtype = info.dtype
    values = info.shape_values
    if values is None:
        outs = [same_shape(info, info.dtype), same_shape(info, index_dtype)]
    else:
        axis = normalize_axis(ctx, ctx.attr(call, "axis", -1), info.ndim)
        shape = list(values)
        extent = shape[axis]
        if k > 0 and not (isinstance(extent, IntImm) and extent.value <= k):
            shape[axis] = IntImm(extent.dtype, k)
        outs = [tensor(shape, info.dtype, like=info), tensor(shape, index_dtype, like=info)]
    if ret_type == "both":
        return TupleStructInfo(outs)
    return outs[0] if ret_type == "values" else outs[1]


def _infer_einsum(call: Call, ctx: InferContext) -> StructInfo:
    sinfo = ctx.arg_sinfo(call, 0)
    if not isinstance(sinfo, TupleStructInfo):
        raise ctx.type_error(f"operands must be a tuple of tensors, got {sinfo}")
    infos: list[TensorStructInfo] = []
    for index, field in enumerate(sinfo.fields):
        if not isinstance(field, TensorStructInfo):
            raise ctx.type_error(f"operand {index} must be a tensor, got {field}")
        infos.append(field)
    if not infos:
        raise ctx.error("operands must hold at least one tensor, got an empty tuple")
    known = {i.dtype for i in infos if i.dtype is not None}
    if len(known) > 1:
        names = ", ".join(sorted(str(d) for d in known))
        raise ctx.type_error(f"operands must have the same dtype, got {names}")
    dtype = infos[0].dtype if all(i.dtype is not None for i in infos) else None
    subscripts = ctx.attr(call, "subscripts", "")
    if any(i.ndim == -1 for i in infos):
        return tensor(None, dtype, -1, like=infos[0])
    spec = parse_einsum(subscripts, [i.ndim for i in infos])
    shapes = [i.shape_values for i in infos]
    if any(s is None for s in shapes):
        return tensor(None, dtype, len(spec.output), like=infos[0])
    dims = label_dims(spec, shapes)  # type: ignore[arg-type]
    extents = {label: _label_extent(ctx, subscripts, label, ds) for label, ds in dims.items()}
    return tensor([extents[label] for label in spec.output], dtype, like=infos[0])


def _label_extent(
    ctx: InferContext, subscripts: str, label: str, dims: Sequence[PrimExpr]
) -> PrimExpr:
    what = "broadcast dimension" if label.isdigit() else f"label {label!r}"
    result = dims[0]
    for dim in dims[1:]:
        describe = (
            f"subscripts {subscripts!r}: {what} has extents {result} and {dim}, which "
            "neither match nor broadcast"
        )
        result = broadcast_dim(ctx, result, dim, describe)
    return result


_ORDER_DOC = "stable; NaN is the greatest value"
register_op(
    "relax.sort",
    num_inputs=1,
    infer=_infer_sort,
    attrs={"axis": "the axis to sort along", "descending": "largest first when True"},
    doc=f"sorts along an axis ({_ORDER_DOC})",
)
register_op(
    "relax.argsort",
    num_inputs=1,
    infer=_infer_argsort,
    attrs={
        "axis": "the axis to sort along",
        "descending": "largest first when True",
        "dtype": "the index dtype; None means the data's dtype",
    },
    doc=f"the indices that sort along an axis ({_ORDER_DOC})",
)
register_op(
    "relax.topk",
    num_inputs=1,
    infer=_infer_topk,
    attrs={
        "k": "how many elements to keep; k < 1 keeps all",
        "axis": "the axis to search along",
        "ret_type": "'both' (values, indices), 'values' or 'indices'",
        "largest": "the largest elements when True, the smallest when False",
        "dtype": "the index dtype; None means the data's dtype",
    },
    doc=f"the k largest (or smallest) elements along an axis, sorted ({_ORDER_DOC})",
)
register_op(
    "relax.einsum",
    num_inputs=1,
    infer=_infer_einsum,
    attrs={"subscripts": "numpy einsum subscripts, e.g. 'ij,jk->ik'"},
    doc="Einstein summation over a tuple of tensors of one dtype",
)


def sort(x: RelaxExpr, axis: int = -1, descending: bool = False) -> Call:
    """Sort ``x`` along ``axis``.

    Parameters
    ----------
    x : RelaxExpr
        The tensor to sort.
    axis : int
        The axis to sort along (negative counts from the end).
    descending : bool
        Largest first when True.

    Returns
    -------
    Call
        A tensor of ``x``'s shape and dtype. The sort is stable (equal elements keep their
        order) and NaN is greater than every number.
    """
    name = "relax.sort"
    attrs = {
        "axis": as_int(name, "axis", axis),
        "descending": _as_bool(name, "descending", descending),
    }
    return make_call(name, [x], attrs)


def argsort(
    data: RelaxExpr, axis: int = -1, descending: bool = False, dtype: str | None = "int32"
) -> Call:
    """The indices that sort ``data`` along ``axis`` (stable, NaN greatest).

    Parameters
    ----------
    data : RelaxExpr
        The tensor to sort.
    axis : int
        The axis to sort along.
    descending : bool
        Largest first when True.
    dtype : str or None
        The index dtype; None means ``data``'s dtype, as in TVM.

    Returns
    -------
    Call
        A tensor of ``data``'s shape: ``take_along_axis(data, result, axis)`` is sorted.
    """
    name = "relax.argsort"
    attrs = {
        "axis": as_int(name, "axis", axis),
        "descending": _as_bool(name, "descending", descending),
        "dtype": dtype_attr(name, dtype),
    }
    return make_call(name, [data], attrs)


def topk(
    data: RelaxExpr,
    k: int = 1,
    axis: int = -1,
    ret_type: str = "both",
    largest: bool = True,
    dtype: str | None = "int32",
) -> Call:
    """The ``k`` largest (or smallest) elements of ``data`` along ``axis`` and their indices.

    Parameters
    ----------
    data : RelaxExpr
        The tensor to search.
    k : int
        How many elements to keep; ``k < 1`` keeps the whole axis.
    axis : int
        The axis to search along.
    ret_type : str
        ``"both"`` (a tuple ``(values, indices)``), ``"values"`` or ``"indices"``.
    largest : bool
        The largest elements (in descending order) when True, else the smallest (ascending).
    dtype : str or None
        The index dtype; None means ``data``'s dtype.

    Returns
    -------
    Call
        Sorted results; ties resolve to the lowest index and NaN counts as the largest value.
        With a symbolic axis extent the result has ``k`` entries along it (TVM's rule); a line
        shorter than ``k`` at run time leaves the surplus entries zero.
    """
    name = "relax.topk"
    if ret_type not in RET_TYPES:
        raise OpError(f"{name}: ret_type must be one of {', '.join(RET_TYPES)}, got {ret_type!r}")
    attrs = {
        "k": as_int(name, "k", k),
        "axis": as_int(name, "axis", axis),
        "ret_type": ret_type,
        "largest": _as_bool(name, "largest", largest),
        "dtype": dtype_attr(name, dtype),
    }
    return make_call(name, [data], attrs)


def einsum(operands: RelaxExpr | Sequence[RelaxExpr], subscripts: str) -> Call:
    """Einstein summation of ``operands`` with numpy ``subscripts``.

    Parameters
    ----------
    operands : RelaxExpr or sequence of RelaxExpr
        A tuple of tensors of one dtype (a list is made a Tuple).
    subscripts : str
        Such as ``"ij,jk->ik"`` (explicit output), ``"ij,jk"`` (implicit: the labels used once,
        in ASCII order), ``"ii->i"`` (a diagonal) or ``"...ij,...jk->...ik"`` (broadcast).

    Returns
    -------
    Call
        A tensor of the operands' dtype.
    """
    name = "relax.einsum"
    if not isinstance(subscripts, str):
        raise OpError(f"{name}: subscripts must be a str, got {subscripts!r}")
    if not isinstance(operands, RelaxExpr):
        operands = Tuple(list(operands))
    return make_call(name, [operands], {"subscripts": subscripts})
