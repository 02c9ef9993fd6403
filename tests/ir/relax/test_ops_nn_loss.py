"""relax.nn.nll_loss and relax.nn.cross_entropy_with_logits: builders, StructInfo inference
(dtypes, symbolic shapes, unknown ranks, errors) and the numpy reference."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from relaxvm.ir import Analyzer
from relaxvm.ir import Var as SymVar
from relaxvm.ir import relax as rx
from relaxvm.ir.relax import TensorStructInfo, op
from relaxvm.ir.relax.op import OpError, infer
from relaxvm.testing.conformance.cases_nn_loss import nll_loss_ref

N = SymVar("n")


def tvar(shape: Sequence[Any] | None, dtype: str | None = "float32", ndim: int = -1) -> rx.Var:
    return rx.Var("t", TensorStructInfo(shape, dtype, ndim=ndim))


def same(sinfo: Any, expected: Sequence[Any]) -> bool:
    assert isinstance(sinfo, TensorStructInfo) and sinfo.shape_values is not None, sinfo
    analyzer = Analyzer()
    values = list(sinfo.shape_values)
    return len(values) == len(expected) and all(
        analyzer.can_prove_equal(a, b) for a, b in zip(values, expected, strict=True)
    )


def test_nll_loss_shapes_and_attrs() -> None:
    pred, targets = tvar((N, 5, 3)), tvar((N, 3), "int64")
    call = op.nn.nll_loss(pred, targets)
    assert call.attrs == {"reduction": "mean", "ignore_index": -100}
    mean = infer(call)
    assert same(mean, []) and str(mean.dtype) == "float32"
    assert same(infer(op.nn.nll_loss(pred, targets, tvar((5,)), "none")), [N, 3])
    assert same(infer(op.nn.nll_loss(tvar((5,)), tvar((), "int32"), reduction="none")), [])
    unknown = infer(
        op.nn.nll_loss(tvar(None, "float32", ndim=4), tvar(None, "int64"), None, "none")
    )
    assert isinstance(unknown, TensorStructInfo) and unknown.ndim == 3
    derived = infer(op.nn.nll_loss(tvar((N, 5, 2)), tvar(None, "int64"), reduction="none"))
    assert same(derived, [N, 2])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([(2, 5), ((2,), "float32")], r"targets must have an integer dtype, got float32"),
        ([((2, 5), "int32"), (2,)], r"predictions must have a float dtype, got int32"),
        ([(2, 5, 3), (2,)], r"targets must have rank 2 for predictions with shape \(2, 5, 3\), "
         r"got shape \(2,\)"),
        ([(2, 5, 3), (2, 4)], r"targets with shape \(2, 4\) does not match predictions with "
         r"shape \(2, 5, 3\)"),
        ([(2, 5), (2,), (4,)], r"weights with shape \(4,\) does not match the 5 classes"),
        ([(2, 5), (2,), (5, 1)], r"weights must be 1-d \(C,\), got shape \(5, 1\)"),
        ([(2, 5), (2,), ((5,), "float16")], r"predictions and weights must have the same dtype"),
        ([(), ()], r"predictions must have rank >= 1"),
    ],
    ids=["target-dtype", "pred-dtype", "rank", "extent", "weights", "weights-rank",
         "weights-dtype", "scalar"],
)  # fmt: skip
def test_nll_loss_errors(args: list[Any], message: str) -> None:
    def var(spec: Any, default: str) -> rx.Var:
        return tvar(*spec) if spec and isinstance(spec[0], tuple) else tvar(spec, default)

    operands = [var(args[0], "float32"), var(args[1], "int64")]
    operands += [var(a, "float32") for a in args[2:]]
    with pytest.raises(OpError, match=r"relax\.nn\.nll_loss: " + message):
        infer(op.nn.nll_loss(*operands))


def test_nll_loss_builder_errors() -> None:
    with pytest.raises(OpError, match=r"relax\.nn\.nll_loss: reduction must be 'mean', 'sum' "
                       r"or 'none', got 'max'"):  # fmt: skip
        op.nn.nll_loss(tvar((2, 5)), tvar((2,), "int64"), reduction="max")
    with pytest.raises(OpError, match=r"relax\.nn\.nll_loss: ignore_index must be an int"):
        op.nn.nll_loss(tvar((2, 5)), tvar((2,), "int64"), ignore_index=1.5)  # type: ignore[arg-type]


def test_cross_entropy_with_logits() -> None:
    sinfo = infer(op.nn.cross_entropy_with_logits(tvar((N, 4)), tvar((N, 4))))
    assert same(sinfo, []) and str(sinfo.dtype) == "float32"
    with pytest.raises(OpError, match=r"relax\.nn\.cross_entropy_with_logits: predictions and "
                       r"labels must have the same rank, got shapes \(2, 4\) and \(4,\)"):  # fmt: skip
        infer(op.nn.cross_entropy_with_logits(tvar((2, 4)), tvar((4,))))
    with pytest.raises(OpError, match=r"labels with shape \(2, 3\) does not match predictions"):
        infer(op.nn.cross_entropy_with_logits(tvar((2, 4)), tvar((2, 3))))
    with pytest.raises(OpError, match=r"predictions must have a float dtype, got int32"):
        infer(op.nn.cross_entropy_with_logits(tvar((2,), "int32"), tvar((2,), "int32")))


def test_nll_loss_reference_matches_the_definition() -> None:
    pred = np.log(np.array([[0.2, 0.8], [0.6, 0.4], [0.5, 0.5]]))
    targets = np.array([1, 0, 1])
    weights = np.array([2.0, 1.0])
    losses = -np.array([1.0 * pred[0, 1], 2.0 * pred[1, 0], 1.0 * pred[2, 1]])
    np.testing.assert_allclose(nll_loss_ref(pred, targets, weights, "none"), losses)
    np.testing.assert_allclose(nll_loss_ref(pred, targets, weights), losses.sum() / 4.0)
    ignored = nll_loss_ref(pred, targets, weights, "mean", ignore_index=0)
    np.testing.assert_allclose(ignored, (losses[0] + losses[2]) / 2.0)
