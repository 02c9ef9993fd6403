"""``relax.nn.relu6`` and ``relax.nn.batch_flatten``, as TVM's ``relax.op.nn``.

:mod:`.nn` re-exports both (``op.nn.relu6``, ``R.nn.relu6``).
"""

from __future__ import annotations

from .._base import RelaxExpr
from ..expr import Call
from ..struct_info import StructInfo
from ._common import make_call, product, same_shape, tensor
from .registry import InferContext, register_op

__all__ = ["batch_flatten", "relu6"]


def _infer_relu6(call: Call, ctx: InferContext) -> StructInfo:
    # As TVM's (and relu's): any dtype, the result is like the input.
    info = ctx.tensor_arg(call, 0, "data")
    return same_shape(info, info.dtype)


def _infer_batch_flatten(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "data")
    if info.ndim == -1:
        return tensor(None, info.dtype, 2, like=info)
    if info.ndim < 2:
        raise ctx.error(f"data must have rank >= 2 (batch, ...), got rank {info.ndim}")
    if info.ndim == 2:
        return same_shape(info, info.dtype)
    values = info.shape_values
    if values is None:
        return tensor(None, info.dtype, 2, like=info)
    rest = ctx.analyzer.simplify(product(values[1:]))
    return tensor([values[0], rest], info.dtype, like=info)


register_op(
    "relax.nn.relu6",
    num_inputs=1,
    infer=_infer_relu6,
    doc="``min(max(data, 0), 6)``",
)
register_op(
    "relax.nn.batch_flatten",
    num_inputs=1,
    infer=_infer_batch_flatten,
    doc="``(N, d1, d2, ...) -> (N, d1 * d2 * ...)``",
)


def relu6(data: RelaxExpr) -> Call:
    """ReLU capped at 6, ``min(max(data, 0), 6)`` (any numeric dtype; NaN stays NaN).

    Parameters
    ----------
    data : RelaxExpr
        The input tensor.

    Returns
    -------
    Call
        A ``relax.nn.relu6`` call.
    """
    return make_call("relax.nn.relu6", [data])


def batch_flatten(data: RelaxExpr) -> Call:
    """Flatten every axis but the first: ``(N, d1, d2, ...)`` becomes ``(N, d1 * d2 * ...)``.

    Parameters
    ----------
    data : RelaxExpr
        A tensor of rank >= 2 (a 2-d tensor is returned as it is).

    Returns
    -------
    Call
        A ``relax.nn.batch_flatten`` call.
    """
    return make_call("relax.nn.batch_flatten", [data])
