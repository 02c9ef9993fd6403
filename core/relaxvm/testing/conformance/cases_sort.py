"""Conformance templates of the sorting, searching and einsum ops (see :mod:`.cases`).

The oracle of the sorting ops is numpy's stable sort. Descending order is defined as the
stable sort under the reversed order with NaN the greatest value (NaN first, equal keys in
their original order), which is numpy's stable ascending sort of the reversed line, reversed
back (:func:`stable_argsort`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .cases import FLOAT_INT, Arrays, Dim, OpTemplate, Param, _plain, op, random_values

__all__ = ["EXCLUSIONS", "stable_argsort", "templates"]

#: Edge-value exclusions of these templates, as :data:`.test_edges.EXCLUSIONS`.
EXCLUSIONS: dict[str, dict[str, str]] = {}


def stable_argsort(x: np.ndarray, axis: int = -1, descending: bool = False) -> np.ndarray:
    """Stable argsort along ``axis``; descending keeps equal keys (and NaNs, which come
    first) in their original order."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    flipped = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return n - 1 - np.flip(flipped, axis)


def _sorted(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    return np.take_along_axis(x, stable_argsort(x, axis, descending), axis)


def _topk(x: np.ndarray, k: int, axis: int, largest: bool) -> tuple[np.ndarray, np.ndarray]:
    order = np.take(stable_argsort(x, axis, largest), np.arange(min(k, x.shape[axis])), axis)
    return np.take_along_axis(x, order, axis), order.astype("int32")


def _tied(shape: Callable[[int], tuple[int, ...]]) -> Callable[..., Arrays]:
    """Inputs with many equal keys, so that stability is visible."""

    def make(rng: np.random.Generator, n: int, dt: str) -> Arrays:
        if dt.startswith("int"):
            return [random_values(rng, shape(n), dt, "small")]
        return [(rng.integers(-2, 3, size=shape(n)) * 0.5).astype(dt)]

    return make


def _rows(d: Dim, dt: str) -> list[Param]:
    return [("x", (d, 5), dt)]


def _sort_templates() -> list[OpTemplate]:
    rows = _tied(lambda n: (n, 5))
    return [
        OpTemplate("relax.sort", "axis1", "sort", FLOAT_INT, _rows,
                   _plain(lambda x: op.sort(x, axis=1)), rows,
                   lambda x: _sorted(x, 1, False)),
        OpTemplate("relax.sort", "axis0-desc", "sort", FLOAT_INT, _rows,
                   _plain(lambda x: op.sort(x, axis=0, descending=True)), rows,
                   lambda x: _sorted(x, 0, True)),
        OpTemplate("relax.argsort", "axis1", "sort", FLOAT_INT, _rows,
                   _plain(lambda x: op.argsort(x)), rows,
                   lambda x: stable_argsort(x, 1).astype("int32")),
        OpTemplate("relax.argsort", "axis0-desc-int64", "sort", FLOAT_INT, _rows,
                   _plain(lambda x: op.argsort(x, axis=0, descending=True, dtype="int64")), rows,
                   lambda x: stable_argsort(x, 0, True).astype("int64")),
        OpTemplate("relax.topk", "k2", "sort", FLOAT_INT, _rows,
                   _plain(lambda x: op.topk(x, k=2)), rows, lambda x: _topk(x, 2, 1, True)),
        OpTemplate("relax.topk", "k3-smallest-values", "sort", FLOAT_INT, _rows,
                   _plain(lambda x: op.topk(x, k=3, ret_type="values", largest=False)), rows,
                   lambda x: _topk(x, 3, 1, False)[0]),
        OpTemplate("relax.topk", "axis0-all-indices", "sort", FLOAT_INT, _rows,
                   _plain(lambda x: op.topk(x, k=0, axis=0, ret_type="indices")), rows,
                   lambda x: _topk(x, x.shape[0], 0, True)[1]),
    ]  # fmt: skip


def _einsum_inputs(*shapes: Callable[[int], tuple[int, ...]]) -> Callable[..., Arrays]:
    return lambda rng, n, dt: [random_values(rng, s(n), dt, "small") for s in shapes]


def _einsum(
    label: str, subscripts: str, shapes: list[Callable[[Any], tuple[Any, ...]]]
) -> OpTemplate:
    names = "abcdefgh"

    def params(d: Dim, dt: str) -> list[Param]:
        return [(names[i], shape(d), dt) for i, shape in enumerate(shapes)]

    return OpTemplate(
        "relax.einsum", label, "einsum", FLOAT_INT, params,
        lambda d, *vs: op.einsum(list(vs), subscripts), _einsum_inputs(*shapes),
        lambda *xs: np.einsum(subscripts, *xs).astype(xs[0].dtype),
    )  # fmt: skip


def templates() -> list[OpTemplate]:
    """The templates of this family."""
    return [
        *_sort_templates(),
        _einsum("matmul", "ij,jk->ik", [lambda d: (d, 3), lambda d: (3, 4)]),
        _einsum("rowdot", "ij,ij->i", [lambda d: (d, 4), lambda d: (d, 4)]),
        _einsum("batch", "...ij,jk", [lambda d: (d, 2, 3), lambda d: (3, 2)]),
        _einsum("transpose", "ij->ji", [lambda d: (d, 3)]),
        _einsum("outer", "i,j->ij", [lambda d: (d,), lambda d: (3,)]),
    ]
