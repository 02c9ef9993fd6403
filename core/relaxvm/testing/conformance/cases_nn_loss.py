"""Conformance templates of ``relax.nn.nll_loss`` and ``relax.nn.cross_entropy_with_logits``
(see :mod:`.cases`), with float64 numpy references."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .cases import FLOAT, Arrays, Dim, OpTemplate, Param, op, random_values

__all__ = ["EXCLUSIONS", "nll_loss_ref", "templates"]

_C = 4
_IGNORE = 2

#: Edge-value exclusions of these templates, as :data:`.test_edges.EXCLUSIONS` (none: the edge
#: patterns replace only the float operands, never the int64 class indices).
EXCLUSIONS: dict[str, dict[str, str]] = {}


def nll_loss_ref(
    pred: np.ndarray,
    targets: np.ndarray,
    weights: np.ndarray | None = None,
    reduction: str = "mean",
    ignore_index: int = -100,
) -> np.ndarray:
    """``-weights[t] * pred[n, t, d...]``, 0 where ``t == ignore_index``, then reduced."""
    p = pred.astype("float64")
    w = np.ones(p.shape[0] if p.ndim == 1 else p.shape[1]) if weights is None else weights
    kept = targets != ignore_index
    safe = np.where(kept, targets, 0)
    if p.ndim == 1:
        picked = p[safe]
    else:
        picked = np.take_along_axis(p, np.expand_dims(safe, 1), axis=1).squeeze(1)
    tw = np.where(kept, np.asarray(w, "float64")[safe], 0.0)
    losses = np.where(kept, -tw * picked, 0.0)
    if reduction == "none":
        return losses.astype(pred.dtype)
    if reduction == "sum":
        return np.asarray(losses.sum(), pred.dtype)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(losses.sum() / tw.sum(), pred.dtype)


def _nll_params(spatial: tuple[int, ...], weights: bool) -> Callable[[Dim, str], list[Param]]:
    def params(d: Dim, dt: str) -> list[Param]:
        out: list[Param] = [("pred", (d, _C, *spatial), dt), ("t", (d, *spatial), "int64")]
        return out + ([("w", (_C,), dt)] if weights else [])

    return params


def _nll_inputs(spatial: tuple[int, ...], weights: bool) -> Callable[..., Arrays]:
    def inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
        pred = random_values(rng, (n, _C, *spatial), dt)
        targets = rng.integers(0, _C, size=(n, *spatial)).astype("int64")
        out = [pred, targets]
        return out + ([random_values(rng, (_C,), dt, "pos")] if weights else [])

    return inputs


def templates() -> list[OpTemplate]:
    """The templates of this family."""
    return [
        OpTemplate("relax.nn.nll_loss", "mean-weights", "nn_loss", FLOAT,
                   _nll_params((3,), True),
                   lambda d, p, t, w: op.nn.nll_loss(p, t, w, ignore_index=_IGNORE),
                   _nll_inputs((3,), True),
                   lambda p, t, w: nll_loss_ref(p, t, w, ignore_index=_IGNORE)),
        OpTemplate("relax.nn.nll_loss", "sum-2d", "nn_loss", FLOAT,
                   _nll_params((), False),
                   lambda d, p, t: op.nn.nll_loss(p, t, reduction="sum"),
                   _nll_inputs((), False),
                   lambda p, t: nll_loss_ref(p, t, reduction="sum")),
        OpTemplate("relax.nn.nll_loss", "none-1d", "nn_loss", FLOAT,
                   _nll_params((2,), True),
                   lambda d, p, t, w: op.nn.nll_loss(p, t, w, reduction="none",
                                                      ignore_index=_IGNORE),
                   _nll_inputs((2,), True),
                   lambda p, t, w: nll_loss_ref(p, t, w, "none", _IGNORE)),
        OpTemplate("relax.nn.cross_entropy_with_logits", "", "nn_loss", FLOAT,
                   lambda d, dt: [("x", (d, 4), dt), ("y", (d, 4), dt)],
                   lambda d, x, y: op.nn.cross_entropy_with_logits(x, y),
                   lambda rng, n, dt: [random_values(rng, (n, 4), dt) for _ in "xy"],
                   lambda x, y: np.asarray(-(x.astype("float64") * y).sum() / x.shape[0],
                                           x.dtype)),
    ]  # fmt: skip
