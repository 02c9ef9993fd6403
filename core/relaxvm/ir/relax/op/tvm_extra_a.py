"""TVM ops without a family of their own here: ``log_add_exp`` (a broadcasting binary op),
``outer`` (the outer product of two vectors), ``ewise_fma`` (``x1 * x2 + x3`` on operands of
one shape), ``bucketize`` (torch's, a search of sorted boundaries), ``hamming_window``,
``wrap_param`` (a cast that marks a parameter for mixed precision) and ``masked_fill`` (not an
op in TVM either: a builder of ``where`` and ``full_like``).

Signatures, inference rules and error kinds follow TVM's ``relax.op`` (ValueError for shapes and
ranks, TypeError for dtypes); where relaxvm is stricter the builder's docstring says so.
"""

from __future__ import annotations

from typing import Any

from ....runtime.device import Device
from ....runtime.dtype import DataType, DataTypeCode
from ...expr import IntImm, PrimExpr
from ...op import const
from .._base import RelaxExpr
from ..expr import Call, PrimValue
from ..struct_info import PrimStructInfo, StructInfo, TensorStructInfo
from ._common import (
    as_prim_value,
    dims_text,
    dtype_attr,
    make_call,
    prove_equal,
    tensor,
    unify_dtypes,
)
from ._elementwise_common import binary_dtype, binary_operands, broadcast_result
from .create import full_like
from .elementwise import where
from .registry import InferContext, OpError, register_op

__all__ = [
    "bucketize",
    "ewise_fma",
    "hamming_window",
    "log_add_exp",
    "masked_fill",
    "outer",
    "wrap_param",
]


# ---- inference ----------------------------------------------------------------------------------
def _infer_log_add_exp(call: Call, ctx: InferContext) -> StructInfo:
    # TVM registers log_add_exp with the other broadcasting arithmetic ops: equal dtypes (any
    # kind), R.Prim operands broadcast as shape [1], two scalars give a scalar.
    infos = binary_operands(call, ctx)
    return broadcast_result(ctx, infos, binary_dtype(ctx, infos))


def _rank_text(info: TensorStructInfo) -> str:
    return "unknown rank" if info.ndim == -1 else f"shape {dims_text(info)}"


def _infer_outer(call: Call, ctx: InferContext) -> StructInfo:
    x1 = ctx.tensor_arg(call, 0, "x1")
    x2 = ctx.tensor_arg(call, 1, "x2")
    for what, info in (("x1", x1), ("x2", x2)):
        # As TVM: the rank must be known to be 1 (an unknown rank is refused too).
        if info.ndim != 1:
            raise ctx.error(f"{what} must be a 1-d tensor, got {_rank_text(info)}")
    # TVM takes x1's dtype without comparing; the kernel multiplies the two, so a mismatch is
    # refused here (x1 * x2 would otherwise promote to a third dtype).
    dtype = unify_dtypes(ctx, [x1, x2], "x1 and x2")
    if dtype is None:
        dtype = x1.dtype
    v1, v2 = x1.shape_values, x2.shape_values
    if v1 is None or v2 is None:
        return tensor(None, dtype, 2, like=x1)
    return tensor([v1[0], v2[0]], dtype, like=x1)


def _fma_vdevice(infos: list[TensorStructInfo]) -> Device | None:
    # As TVM's ewise_fma: the first vdevice given wins; a conflicting targeted one drops it.
    chosen: Device | None = None
    for info in infos:
        if info.vdevice is None:
            continue
        if chosen is None:
            chosen = info.vdevice
        elif getattr(info.vdevice, "target", True) is not None and info.vdevice != chosen:
            return None
    return chosen


def _infer_ewise_fma(call: Call, ctx: InferContext) -> StructInfo:
    infos = [ctx.tensor_arg(call, i, name) for i, name in enumerate(("x1", "x2", "x3"))]
    ranks = {info.ndim for info in infos if info.ndim != -1}
    if len(ranks) > 1:
        shown = ", ".join(dims_text(info) for info in infos)
        raise ctx.error(f"x1, x2 and x3 must have the same rank (no broadcasting), got {shown}")
    ndim = ranks.pop() if ranks else -1
    dtype = unify_dtypes(ctx, infos, "x1, x2 and x3")
    vdevice = _fma_vdevice(infos)
    values = [info.shape_values for info in infos]
    if all(v is not None for v in values):
        first, second, third = values
        assert first is not None and second is not None and third is not None
        for axis, (a, b, c) in enumerate(zip(first, second, third, strict=True)):
            if not (prove_equal(ctx, a, b) and prove_equal(ctx, b, c)):
                shown = ", ".join(dims_text(info) for info in infos)
                raise ctx.error(
                    f"x1, x2 and x3 must have the same shape (no broadcasting), got {shown}: "
                    f"axis {axis} differs"
                )
        return TensorStructInfo(list(first), dtype, vdevice=vdevice)
    shape = infos[0].shape
    if shape is not None and all(info.shape is shape for info in infos):
        return TensorStructInfo(shape, dtype, ndim=ndim, vdevice=vdevice)
    return TensorStructInfo(None, dtype, ndim=ndim, vdevice=vdevice)


def _infer_bucketize(call: Call, ctx: InferContext) -> StructInfo:
    data = ctx.tensor_arg(call, 0, "input_tensor")
    boundaries = ctx.tensor_arg(call, 1, "boundaries")
    if boundaries.ndim not in (-1, 1):
        raise ctx.error(f"boundaries must be a 1-d tensor, got shape {dims_text(boundaries)}")
    # TVM compares the dtypes of neither; the kernel compares after TIR's usual promotion.
    dtype = "int32" if ctx.attr(call, "out_int32", False) else "int64"
    return TensorStructInfo(data.shape, dtype, ndim=data.ndim, vdevice=data.vdevice)


_WINDOW_ARGS = ("window_size", "periodic", "alpha", "beta")


def _infer_hamming_window(call: Call, ctx: InferContext) -> StructInfo:
    dtype = ctx.attr(call, "dtype")
    if dtype is not None and DataType(dtype).code not in (DataTypeCode.FLOAT, DataTypeCode.BFLOAT):
        raise ctx.type_error(f"dtype must be a float dtype, got {dtype}")
    values: list[PrimExpr | None] = []
    for index, what in enumerate(_WINDOW_ARGS):
        sinfo = ctx.arg_sinfo(call, index)
        if not isinstance(sinfo, PrimStructInfo):
            raise ctx.type_error(f"{what} must be a scalar (PrimValue), got {sinfo}")
        values.append(sinfo.value)
    size = values[0]
    if size is None:
        return tensor(None, dtype, 1)
    if ctx.analyzer.const_int_bound(size).max_value < 1:
        raise ctx.error(f"window_size must be at least 1, got {size}")
    return tensor([ctx.analyzer.simplify(size)], dtype)


def _infer_wrap_param(call: Call, ctx: InferContext) -> StructInfo:
    # As TVM: the input's struct info (shape, rank, vdevice) with the dtype attribute.
    info = ctx.tensor_arg(call, 0, "data")
    return TensorStructInfo(
        info.shape, ctx.attr(call, "dtype"), ndim=info.ndim, vdevice=info.vdevice
    )


register_op(
    "relax.log_add_exp",
    num_inputs=2,
    infer=_infer_log_add_exp,
    doc="``log(exp(x1) + exp(x2))`` with numpy broadcasting",
)
register_op(
    "relax.outer",
    num_inputs=2,
    infer=_infer_outer,
    doc="the outer product ``out[i, j] = x1[i] * x2[j]`` of two vectors",
)
register_op(
    "relax.ewise_fma",
    num_inputs=3,
    infer=_infer_ewise_fma,
    doc="``x1 * x2 + x3`` elementwise, on operands of one shape",
)

register_op(
    "relax.bucketize",
    num_inputs=2,
    infer=_infer_bucketize,
    attrs={
        "out_int32": "int32 indices instead of int64",
        "right": "the index after equal boundaries instead of before them",
    },
    doc="the index of the bucket of each element among sorted boundaries",
)

register_op(
    "relax.hamming_window",
    num_inputs=4,
    infer=_infer_hamming_window,
    attrs={"dtype": "the (float) dtype of the window"},
    doc="``alpha - beta * cos(2 pi n / (N - 1))`` (``N`` for a periodic window)",
)

register_op(
    "relax.wrap_param",
    num_inputs=1,
    infer=_infer_wrap_param,
    attrs={"dtype": "the dtype the parameter is cast to"},
    doc="cast a model parameter to ``dtype`` (mixed precision never changes it)",
)


# ---- builders -----------------------------------------------------------------------------------
def log_add_exp(x1: RelaxExpr, x2: RelaxExpr) -> Call:
    """``log(exp(x1) + exp(x2))`` elementwise, computed without overflow, with numpy
    broadcasting (numpy's ``logaddexp``).

    Parameters
    ----------
    x1, x2 : RelaxExpr
        Tensors (or ``R.Prim`` scalars) of one dtype. Integer operands are computed in float64
        and the result truncated to the integer dtype.

    Returns
    -------
    Call
        A ``relax.log_add_exp`` call.
    """
    return make_call("relax.log_add_exp", [x1, x2])


def outer(x1: RelaxExpr, x2: RelaxExpr) -> Call:
    """The outer product of two vectors, ``out[i, j] = x1[i] * x2[j]``.

    Parameters
    ----------
    x1 : RelaxExpr
        A 1-d tensor of length ``m``.
    x2 : RelaxExpr
        A 1-d tensor of length ``n`` with ``x1``'s dtype (TVM does not compare the dtypes and
        takes ``x1``'s; relaxvm refuses a mismatch).

    Returns
    -------
    Call
        A ``(m, n)`` tensor.
    """
    return make_call("relax.outer", [x1, x2])


def ewise_fma(x1: RelaxExpr, x2: RelaxExpr, x3: RelaxExpr) -> Call:
    """``x1 * x2 + x3`` elementwise.

    Parameters
    ----------
    x1, x2, x3 : RelaxExpr
        Tensors of one dtype and one shape (no broadcasting, as TVM).

    Returns
    -------
    Call
        A tensor of the common shape and dtype.
    """
    return make_call("relax.ewise_fma", [x1, x2, x3])


def bucketize(
    input_tensor: RelaxExpr, boundaries: RelaxExpr, out_int32: bool = False, right: bool = False
) -> Call:
    """The bucket of each element of ``input_tensor`` among ``boundaries`` (torch's
    ``bucketize``, numpy's ``searchsorted(boundaries, input_tensor, side)``).

    With ``right=False`` the index ``i`` satisfies ``boundaries[i-1] < x <= boundaries[i]``
    (side ``"left"``); with ``right=True``, ``boundaries[i-1] <= x < boundaries[i]``. A NaN
    element sorts after every boundary, as in numpy.

    Parameters
    ----------
    input_tensor : RelaxExpr
        The values to place, of any shape.
    boundaries : RelaxExpr
        A 1-d tensor in increasing order (otherwise the result is unspecified).
    out_int32 : bool
        Return int32 indices instead of int64.
    right : bool
        Which side of equal boundaries the index falls on.

    Returns
    -------
    Call
        A tensor of ``input_tensor``'s shape holding indices in ``[0, len(boundaries)]``.
    """
    name = "relax.bucketize"
    for param, flag in (("out_int32", out_int32), ("right", right)):
        if not isinstance(flag, bool):
            raise OpError(f"{name}: {param} must be a bool, got {flag!r}")
    return make_call(name, [input_tensor, boundaries], {"out_int32": out_int32, "right": right})


def masked_fill(x: RelaxExpr, mask: RelaxExpr, value: Any) -> Call:
    """``value`` where ``mask`` holds, else ``x``: as TVM, the call
    ``where(mask, full_like(x, value, dtype=<value's dtype>), x)`` (there is no
    ``relax.masked_fill`` op).

    Parameters
    ----------
    x : RelaxExpr
        The tensor to fill.
    mask : RelaxExpr
        A bool tensor that broadcasts with ``x``.
    value : RelaxExpr or number
        The fill value: a 0-d tensor or ``R.Prim`` of ``x``'s dtype (a Python number is made a
        PrimValue and takes ``x``'s dtype).

    Returns
    -------
    Call
        A ``relax.where`` call.
    """
    name = "relax.masked_fill"
    fill = as_prim_value(name, value)
    sinfo = fill.struct_info if isinstance(value, RelaxExpr) else None
    dtype = getattr(sinfo, "dtype", None)
    return where(mask, full_like(x, fill, dtype=dtype), x)


def _window_arg(name: str, what: str, value: Any) -> RelaxExpr:
    if isinstance(value, bool):
        return PrimValue(const(value, "bool"))
    if isinstance(value, IntImm) or (isinstance(value, int) and what == "window_size"):
        return as_prim_value(name, value)
    if isinstance(value, (int, float)):
        # A Python float is a float32 PrimValue, as TVM converts it.
        return PrimValue(const(float(value), "float32"))
    return as_prim_value(name, value)


def hamming_window(
    window_size: Any, periodic: Any, alpha: Any, beta: Any, dtype: str | DataType
) -> Call:
    """A Hamming window of ``window_size`` points (torch's ``hamming_window``):
    ``alpha - beta * cos(2 * pi * n / d)`` with ``d = window_size`` for a periodic window and
    ``window_size - 1`` for a symmetric one; a window of one point is ``[1]``.

    Parameters
    ----------
    window_size : int, PrimExpr or PrimValue
        The number of points, at least 1 (may be symbolic).
    periodic : bool, int, PrimExpr or PrimValue
        Nonzero for a periodic window (for spectral analysis), zero for a symmetric one.
    alpha, beta : float, PrimExpr or PrimValue
        The coefficients (torch's defaults are 0.54 and 0.46).
    dtype : str or DataType
        A float dtype (TVM refuses int and uint; relaxvm refuses bool too).

    Returns
    -------
    Call
        A 1-d tensor of ``window_size`` elements.
    """
    name = "relax.hamming_window"
    args = [
        _window_arg(name, what, value)
        for what, value in zip(_WINDOW_ARGS, (window_size, periodic, alpha, beta), strict=True)
    ]
    return make_call(name, args, {"dtype": dtype_attr(name, dtype)})


def wrap_param(data: RelaxExpr, dtype: str | DataType = "float32") -> Call:
    """``data`` cast to ``dtype``, marking a model parameter (TVM's mixed-precision pass leaves
    the op's dtype alone, where it would rewrite an ``astype``).

    Parameters
    ----------
    data : RelaxExpr
        The parameter, usually a constant.
    dtype : str or DataType
        The dtype of the result.

    Returns
    -------
    Call
        A tensor like ``data`` of ``dtype``.
    """
    name = "relax.wrap_param"
    attr = dtype_attr(name, dtype)
    if attr is None:
        raise OpError(f"{name}: dtype must be a known dtype, got {dtype!r}")
    return make_call(name, [data], {"dtype": attr})
