"""Ops whose result extents depend on the data: ``unique`` and ``nonzero``.

Signatures and inference follow TVM v0.23 (``relax.op.unique``, ``relax.op.nonzero``). No
kernel can allocate its output before it has read its input, so, as in TVM, both ops lower to
``R.call_pure_packed`` of a runtime function (``relax.run.unique`` / ``relax.run.nonzero``)
that computes the result and allocates it. Inference therefore knows only ranks and dtypes:

* ``unique`` gives a tensor of the input's dtype, of rank 1 (``axis=None``, the flattened
  input) or of the input's rank (``axis`` given); each of ``return_index``, ``return_inverse``
  and ``return_counts`` appends an int64 tensor of rank 1 and makes the result a tuple;
* ``nonzero`` gives an int64 tensor of rank 2, ``(ndim, number of nonzero elements)``.

Unlike TVM, which passes the flags as ``PrimValue`` arguments, they are attributes here
(constants at compile time, which is all TVM's runtime function accepts as well).
"""

from __future__ import annotations

from .._base import RelaxExpr
from ..expr import Call
from ..struct_info import StructInfo, TupleStructInfo
from ._common import as_int, make_call, normalize_axis, tensor
from .registry import InferContext, OpError, register_op

__all__ = ["nonzero", "unique"]

_FLAGS = ("sorted", "return_index", "return_inverse", "return_counts")


def _infer_unique(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "x")
    axis = ctx.attr(call, "axis")
    if axis is None:
        ndim = 1
    else:
        if info.ndim != -1:
            normalize_axis(ctx, axis, info.ndim)
        ndim = info.ndim
    values = tensor(None, info.dtype, ndim, like=info)
    extras = [
        tensor(None, "int64", 1, like=info) for flag in _FLAGS[1:] if ctx.attr(call, flag, False)
    ]
    if not extras:
        return values
    return TupleStructInfo([values, *extras])


def _infer_nonzero(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "x")
    return tensor(None, "int64", 2, like=info)


register_op(
    "relax.unique",
    num_inputs=1,
    infer=_infer_unique,
    attrs={
        "sorted": "the unique values in ascending order when True, else in order of first "
        "occurrence",
        "return_index": "also return the index of each value's first occurrence",
        "return_inverse": "also return, for each input element, the index of its value",
        "return_counts": "also return how often each value occurs",
        "axis": "the axis whose slices are compared; None flattens the input",
    },
    doc="the unique elements of a tensor (extents known at run time only)",
)
register_op(
    "relax.nonzero",
    num_inputs=1,
    infer=_infer_nonzero,
    doc="the indices of the nonzero elements, shape (ndim, count) (known at run time only)",
)


def _as_bool(param: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise OpError(f"relax.unique: {param} must be a bool, got {value!r}")
    return value


def unique(
    x: RelaxExpr,
    sorted: bool = True,
    return_index: bool = False,
    return_inverse: bool = False,
    return_counts: bool = False,
    axis: int | None = None,
) -> Call:
    """The unique elements of ``x`` (numpy's ``np.unique``), optionally with indices and counts.

    Parameters
    ----------
    x : RelaxExpr
        The input tensor.
    sorted : bool
        The unique values in ascending order when True, else in the order in which they first
        occur in ``x`` (the extra outputs follow the same order).
    return_index : bool
        Also return the index (into the flattened input, or along ``axis``) of each unique
        value's first occurrence.
    return_inverse : bool
        Also return, for each input element (or slice along ``axis``), the index of its value
        in the unique values.
    return_counts : bool
        Also return how many times each unique value occurs.
    axis : int or None
        The axis whose slices are compared; None flattens ``x`` first.

    Returns
    -------
    Call
        A tensor of ``x``'s dtype (rank 1, or ``x``'s rank with ``axis``), or a tuple of it
        followed by one int64 rank-1 tensor per requested extra output. The extents are known
        only at run time.
    """
    name = "relax.unique"
    attrs: dict[str, object] = {
        "sorted": _as_bool("sorted", sorted),
        "return_index": _as_bool("return_index", return_index),
        "return_inverse": _as_bool("return_inverse", return_inverse),
        "return_counts": _as_bool("return_counts", return_counts),
        "axis": None if axis is None else as_int(name, "axis", axis),
    }
    return make_call(name, [x], attrs)


def nonzero(x: RelaxExpr) -> Call:
    """The indices of the nonzero elements of ``x``, one row per dimension.

    Parameters
    ----------
    x : RelaxExpr
        The input tensor (any dtype; NaN counts as nonzero, as in numpy).

    Returns
    -------
    Call
        An int64 tensor of shape ``(ndim, count)`` (``np.nonzero`` stacked); ``count`` is known
        only at run time. A 0-d input is treated as a 1-d tensor of one element.
    """
    return make_call("relax.nonzero", [x])
