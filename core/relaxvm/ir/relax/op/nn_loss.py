"""Loss functions: ``relax.nn.nll_loss`` and ``relax.nn.cross_entropy_with_logits``, with TVM
v0.23's signatures, shapes and reductions."""

from __future__ import annotations

from ....runtime.dtype import DataTypeCode
from ...expr import PrimExpr
from .._base import RelaxExpr
from ..expr import Call
from ..struct_info import StructInfo, TensorStructInfo
from ._common import (
    as_int,
    dims_text,
    make_call,
    prove_equal,
    prove_not_equal,
    tensor,
    unify_dtypes,
)
from .registry import InferContext, OpError, register_op

__all__ = ["cross_entropy_with_logits", "nll_loss"]

REDUCTIONS = ("mean", "sum", "none")


def _require_float(ctx: InferContext, info: TensorStructInfo, what: str) -> None:
    if info.dtype is not None and info.dtype.code not in (DataTypeCode.FLOAT, DataTypeCode.BFLOAT):
        raise ctx.type_error(f"{what} must have a float dtype, got {info.dtype}")


def _check_extent(
    ctx: InferContext, got: PrimExpr, want: PrimExpr, what: str, info: TensorStructInfo, why: str
) -> None:
    if not prove_equal(ctx, got, want) and prove_not_equal(ctx, got, want):
        raise ctx.error(f"{what} with shape {dims_text(info)} does not match {why}")


def _infer_nll_loss(call: Call, ctx: InferContext) -> StructInfo:
    pred = ctx.tensor_arg(call, 0, "predictions")
    targets = ctx.tensor_arg(call, 1, "targets")
    weights = ctx.tensor_arg(call, 2, "weights") if len(call.args) > 2 else None
    _require_float(ctx, pred, "predictions")
    if targets.dtype is not None and targets.dtype.code not in (
        DataTypeCode.INT,
        DataTypeCode.UINT,
    ):
        raise ctx.type_error(f"targets must have an integer dtype, got {targets.dtype}")
    dtype = pred.dtype
    if weights is not None:
        dtype = unify_dtypes(ctx, [pred, weights], "predictions and weights")
        if weights.ndim not in (-1, 1):
            raise ctx.error(f"weights must be 1-d (C,), got shape {dims_text(weights)}")
    if pred.ndim == 0:
        raise ctx.error(
            "predictions must have rank >= 1 ((C,) or (N, C, d1, ...)), got a 0-d tensor"
        )
    if pred.ndim != -1 and targets.ndim != -1:
        expected = 0 if pred.ndim == 1 else pred.ndim - 1
        if targets.ndim != expected:
            raise ctx.error(
                f"targets must have rank {expected} for predictions with shape "
                f"{dims_text(pred)}, got shape {dims_text(targets)}"
            )
    p, t = pred.shape_values, targets.shape_values
    if p is not None and t is not None and len(p) > 1:
        why = f"predictions with shape {dims_text(pred)} (its batch and spatial extents)"
        for got, want in zip(t, [p[0], *p[2:]], strict=True):
            _check_extent(ctx, got, want, "targets", targets, why)
    if p is not None and weights is not None and weights.shape_values is not None:
        channels = p[0] if len(p) == 1 else p[1]
        why = f"the {channels} classes of predictions with shape {dims_text(pred)}"
        _check_extent(ctx, weights.shape_values[0], channels, "weights", weights, why)
    if ctx.attr(call, "reduction", "mean") != "none":
        return tensor([], dtype, like=pred)
    if t is not None:
        return tensor(t, dtype, like=pred)
    if p is not None:
        return tensor([] if len(p) == 1 else [p[0], *p[2:]], dtype, like=pred)
    ndim = (
        targets.ndim if targets.ndim != -1 else (-1 if pred.ndim == -1 else max(pred.ndim - 1, 0))
    )
    return tensor(None, dtype, ndim, like=pred)


def _infer_cross_entropy(call: Call, ctx: InferContext) -> StructInfo:
    pred = ctx.tensor_arg(call, 0, "predictions")
    labels = ctx.tensor_arg(call, 1, "labels")
    dtype = unify_dtypes(ctx, [pred, labels], "predictions and labels")
    _require_float(ctx, pred, "predictions")
    if pred.ndim != -1 and labels.ndim != -1 and pred.ndim != labels.ndim:
        raise ctx.error(
            f"predictions and labels must have the same rank, got shapes {dims_text(pred)} and "
            f"{dims_text(labels)}"
        )
    p, lab = pred.shape_values, labels.shape_values
    if p is not None and lab is not None:
        for got, want in zip(lab, p, strict=True):
            _check_extent(
                ctx, got, want, "labels", labels, f"predictions with shape {dims_text(pred)}"
            )
    return tensor([], dtype, like=pred)


register_op(
    "relax.nn.nll_loss",
    num_inputs=(2, 3),
    infer=_infer_nll_loss,
    attrs={"reduction": '"mean", "sum" or "none"', "ignore_index": "target value to skip"},
    doc="negative log likelihood loss",
)
register_op(
    "relax.nn.cross_entropy_with_logits",
    num_inputs=2,
    infer=_infer_cross_entropy,
    doc="-sum(predictions * labels), divided by the batch size (axis 0) unless 1-d",
)


def nll_loss(
    predictions: RelaxExpr,
    targets: RelaxExpr,
    weights: RelaxExpr | None = None,
    reduction: str = "mean",
    ignore_index: int = -100,
) -> Call:
    """Negative log likelihood: ``-weights[t] * predictions[n, t, d...]`` per target ``t``.

    Parameters
    ----------
    predictions : RelaxExpr
        ``(C,)`` or ``(N, C, d1, ..., dk)`` float log-probabilities.
    targets : RelaxExpr
        ``()`` or ``(N, d1, ..., dk)`` integer class indices.
    weights : RelaxExpr, optional
        ``(C,)`` class weights; all ones by default.
    reduction : {"mean", "sum", "none"}
        ``"mean"`` divides the sum by the summed weights of the counted targets.
    ignore_index : int
        Targets equal to it count neither in the loss nor in the mean's divisor.

    Returns
    -------
    Call
        A ``relax.nn.nll_loss`` call: a scalar, or the targets' shape with ``"none"``.
    """
    name = "relax.nn.nll_loss"
    if reduction not in REDUCTIONS:
        raise OpError(f"{name}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    args = [predictions, targets] if weights is None else [predictions, targets, weights]
    attrs = {"reduction": reduction, "ignore_index": as_int(name, "ignore_index", ignore_index)}
    return make_call(name, args, attrs)


def cross_entropy_with_logits(predictions: RelaxExpr, labels: RelaxExpr) -> Call:
    """``-sum(predictions * labels)``, divided by the batch size (the extent of axis 0) unless
    the operands are 1-d, as TVM's legalization.

    Parameters
    ----------
    predictions, labels : RelaxExpr
        Float tensors of one shape and dtype, typically ``(N, C)``.

    Returns
    -------
    Call
        A ``relax.nn.cross_entropy_with_logits`` call of shape ``()``.
    """
    return make_call("relax.nn.cross_entropy_with_logits", [predictions, labels])
