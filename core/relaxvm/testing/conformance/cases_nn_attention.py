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
    out.append(
        OpTemplate(
            "relax.nn.attention_var_len",
            "two-sequences-causal",
            "nn_attention",
            FLOAT,
            _var_len_params,
            lambda d, q, k, v, sq, mq: op.nn.attention_var_len(
                q, k, v, sq, mq, causal_mask="BottomRight"
            ),
            _var_len_inputs,
            _var_len_ref,
            F32_TRANSCENDENTAL,
        )
    )
    return out


# attention_var_len: the leading extent is the token count; two sequences split it.
def _var_len_params(d: Dim, dt: str) -> list[Param]:
    return [("q", (1, d, 2, 4), dt), ("k", (1, d, 2, 4), dt), ("v", (1, d, 2, 3), dt),
            ("sq", (3,), "int32"), ("mq", (), "int32")]  # fmt: skip


def _var_len_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
    tensors = [random_values(rng, (1, n, 2, c), dt, "small") for c in (4, 4, 3)]
    starts = np.array([0, n // 2, n], "int32")
    return [*tensors, starts, np.array(n - n // 2, "int32")]


def _var_len_ref(q: np.ndarray, k: np.ndarray, v: np.ndarray, sq: np.ndarray, mq: Any) -> Any:
    out = np.zeros((1, q.shape[1], 2, 3), q.dtype)
    for b in range(len(sq) - 1):
        tokens = q.shape[1]  # the empty-input edge keeps starts made for more tokens
        rows = slice(min(int(sq[b]), tokens), min(int(sq[b + 1]), tokens))
        if rows.stop > rows.start:
            out[:, rows] = attention_ref(q[:, rows], k[:, rows], v[:, rows], None, None,
                                         "BottomRight")  # fmt: skip
    return out
