"""Conformance templates of ``relax.nn.attention`` (see :mod:`.cases`), with a float64 numpy
reference of the masked softmax."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .cases import F32_TRANSCENDENTAL, FLOAT, Arrays, Dim, OpTemplate, Param, op, random_values

__all__ = ["attention_ref", "templates"]

_Q, _K, _V = (3, 2, 4), (5, 2, 4), (5, 2, 3)


def attention_ref(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    bias: np.ndarray | None = None,
    scale: float | None = None,
    causal_mask: str | None = None,
    window_size: int | None = None,
) -> np.ndarray:
    """BSNH attention: ``softmax(q k^T * scale + bias over the visible keys) v``."""
    n, d = q.shape[1], q.shape[3]
    m = k.shape[1]
    scores = np.einsum("bnhd,bmhd->bhnm", q.astype("float64"), k.astype("float64"))
    scores = scores * (1 / np.sqrt(d) if scale is None else scale)
    if bias is not None:
        index: Any = {2: (slice(None), None, None), 3: (slice(None), None), 4: ()}[bias.ndim]
        scores = scores + bias.astype("float64")[index]
    visible = np.ones((n, m), bool)
    if causal_mask is not None:
        offset = 0 if causal_mask == "TopLeft" else m - n
        i, j = np.arange(n)[:, None], np.arange(m)[None, :]
        visible = j <= i + offset
        if window_size is not None:
            visible &= j > i + offset - window_size
    masked = np.where(visible, scores, -np.inf)
    with np.errstate(invalid="ignore", divide="ignore"):
        exps = np.where(visible, np.exp(masked - masked.max(axis=-1, keepdims=True)), 0.0)
        probs = exps / exps.sum(axis=-1, keepdims=True)
    return np.einsum("bhnm,bmhc->bnhc", probs, v.astype("float64")).astype(q.dtype)


def _params(bias: tuple[int, ...] | None) -> Callable[[Dim, str], list[Param]]:
    def params(d: Dim, dt: str) -> list[Param]:
        out: list[Param] = [("q", (d, *_Q), dt), ("k", (d, *_K), dt), ("v", (d, *_V), dt)]
        return out + ([("bias", (d, *bias), dt)] if bias is not None else [])

    return params


def _inputs(bias: tuple[int, ...] | None) -> Callable[[np.random.Generator, int, str], Arrays]:
    def inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
        shapes = [_Q, _K, _V] + ([bias] if bias is not None else [])
        return [random_values(rng, (n, *s), dt, "small") for s in shapes]

    return inputs


def templates() -> list[OpTemplate]:
    """The templates of this family."""
    # (label, bias shape without the batch, builder keywords)
    variants: list[tuple[str, tuple[int, ...] | None, dict[str, Any]]] = [
        ("plain", None, {}),
        ("bias3-scale", (3, 5), {"scale": 0.25}),
        ("topleft-bias4", (2, 3, 5), {"causal_mask": "TopLeft"}),
        ("bottomright-window", None, {"causal_mask": "BottomRight", "window_size": 2}),
        ("bias2-bottomright", (5,), {"causal_mask": "BottomRight"}),
    ]
    out = []
    for label, bias, kwargs in variants:
        out.append(
            OpTemplate(
                "relax.nn.attention",
                label,
                "nn_attention",
                FLOAT,
                _params(bias),
                lambda d, *args, kw=kwargs: op.nn.attention(*args, **kw),
                _inputs(bias),
                lambda *args, kw=kwargs: attention_ref(*args, **kw),
                F32_TRANSCENDENTAL,
            )
        )
    return out
