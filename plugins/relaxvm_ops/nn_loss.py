"""Loss legalizations: ``relax.nn.nll_loss`` (gather, weight, mask, reduce) and
``relax.nn.cross_entropy_with_logits`` (one sum of products, scaled)."""

from __future__ import annotations

from typing import Any

from relaxvm.ir import PrimExpr, cast
from relaxvm.ir import op as sop
from relaxvm.ir.relax import BlockBuilder, Call, RelaxExpr
from relaxvm.ir.tir import intrin as T
from relaxvm.ir.tir import te

from ._kernel import OpPattern, attr, call_te, legalizes, op_name, shape_of, tensor_arg

__all__: list[str] = []


@legalizes("relax.nn.nll_loss")
def legalize_nll_loss(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``loss = -weights[t] * predictions[n, t, d...]`` (0 where ``t == ignore_index``);
    ``"sum"`` adds the losses, ``"mean"`` divides that by the summed weights of the counted
    targets."""
    tensor_arg(call, 0, "predictions")
    t_shape = shape_of(tensor_arg(call, 1, "targets"))
    if len(call.args) > 2:
        tensor_arg(call, 2, "weights")
    reduction = attr(call, "reduction", "mean")
    ignore = int(attr(call, "ignore_index", -100))

    def kernel(pred: te.Tensor, targets: te.Tensor, *rest: te.Tensor) -> te.Tensor:
        dtype = pred.dtype
        zero = sop.const(0, dtype)

        def kept(t: PrimExpr) -> PrimExpr:
            return sop.not_equal(t, sop.const(ignore, targets.dtype))

        def weight_at(idx: tuple[Any, ...]) -> tuple[PrimExpr, PrimExpr]:
            t = targets[idx] if idx else targets[()]
            w = rest[0][t] if rest else sop.const(1, dtype)
            return t, T.if_then_else(kept(t), w, zero)

        def loss_body(*idx: Any) -> PrimExpr:
            t, w = weight_at(idx)
            at = (idx[0], t, *idx[1:]) if idx else (t,)
            value = pred[at]
            return T.if_then_else(kept(t), sop.neg(w * value), zero)

        losses = te.compute(t_shape, loss_body, name="nll_loss")
        if reduction == "none":
            return losses

        def total_of(tensor: te.Tensor, name: str) -> te.Tensor:
            def body() -> Any:
                axes = [te.reduce_axis((0, e), name=f"r{a}") for a, e in enumerate(t_shape)]
                if not axes:
                    return tensor[()]
                return te.sum(tensor[tuple(axes)], axis=axes)

            return te.compute([], body, name=name)

        total = total_of(losses, "nll_loss_sum")
        if reduction == "sum":
            return total
        weights = te.compute(t_shape, lambda *i: weight_at(i)[1], name="nll_loss_weights")
        count = total_of(weights, "nll_loss_weight_sum")
        return te.compute([], lambda: total[()] / count[()], name="nll_loss_mean")

    return call_te(
        bb, kernel, *call.args, primfunc_name_hint="nll_loss",
        op_pattern=OpPattern.OUT_EWISE_FUSABLE, op=op_name(call),
    )  # fmt: skip


@legalizes("relax.nn.cross_entropy_with_logits")
def legalize_cross_entropy_with_logits(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``-sum(predictions * labels)``, divided by the extent of axis 0 unless 1-d."""
    shape = shape_of(tensor_arg(call, 0, "predictions"))
    tensor_arg(call, 1, "labels")

    def kernel(pred: te.Tensor, labels: te.Tensor) -> te.Tensor:
        def body() -> Any:
            axes = [te.reduce_axis((0, e), name=f"r{a}") for a, e in enumerate(shape)]
            if not axes:
                return sop.neg(pred[()] * labels[()])
            return te.sum(sop.neg(pred[tuple(axes)] * labels[tuple(axes)]), axis=axes)

        total = te.compute([], body, name="cross_entropy_sum")
        if len(shape) < 2:
            return total
        batch = cast(shape[0], pred.dtype)
        return te.compute([], lambda: total[()] / batch, name="cross_entropy")

    return call_te(
        bb, kernel, *call.args, primfunc_name_hint="cross_entropy_with_logits",
        op_pattern=OpPattern.COMM_REDUCE, op=op_name(call),
    )  # fmt: skip
