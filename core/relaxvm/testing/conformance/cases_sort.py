"""Conformance templates of the sorting, searching, einsum, data-dependent and qdq ops (see
:mod:`.cases`).

The oracle of the sorting ops is numpy's stable sort. Descending order is defined as the
stable sort under the reversed order with NaN the greatest value (NaN first, equal keys in
their original order), which is numpy's stable ascending sort of the reversed line, reversed
back (:func:`stable_argsort`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...ir.relax import const
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
        *_datadep_templates(),
        *_qdq_templates(),
    ]


# ---- data-dependent shapes (unique, nonzero) and quantize / dequantize ---------------------
# unique and nonzero run as R.call_pure_packed of numpy-backed runtime functions whose results
# are match_cast to fresh extents, so the matrix checks the whole path (legalization, VM
# shape lowering of the fresh extents, ops after them) against numpy.


def _small(shape: Callable[[int], tuple[int, ...]]) -> Callable[..., Arrays]:
    """Small integers (as float or int), so that values repeat and zeros occur."""
    return lambda rng, n, dt: [rng.integers(-2, 3, size=shape(n)).astype(dt)]


def _unique_unsorted(x: np.ndarray) -> tuple[np.ndarray, ...]:
    values, index, inverse, counts = np.unique(
        x, return_index=True, return_inverse=True, return_counts=True
    )
    order = np.argsort(index, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return (
        values[order],
        index[order].astype("int64"),
        rank[inverse.reshape(-1)].astype("int64"),
        counts[order].astype("int64"),
    )


def _datadep_templates() -> list[OpTemplate]:
    rows = _small(lambda n: (n, 4))

    def params(d: Dim, dt: str) -> list[Param]:
        return [("x", (d, 4), dt)]

    return [
        OpTemplate("relax.unique", "sorted", "datadep", FLOAT_INT, params,
                   _plain(lambda x: op.unique(x)), rows, lambda x: np.unique(x)),
        OpTemplate("relax.unique", "unsorted-all", "datadep", FLOAT_INT, params,
                   _plain(lambda x: op.unique(x, sorted=False, return_index=True,
                                              return_inverse=True, return_counts=True)),
                   rows, _unique_unsorted),
        OpTemplate("relax.unique", "rows", "datadep", FLOAT_INT, params,
                   _plain(lambda x: op.unique(x, axis=0)), rows, lambda x: np.unique(x, axis=0)),
        OpTemplate("relax.unique", "then-sum", "datadep", FLOAT_INT, params,
                   _plain(lambda x: op.sum(op.unique(x))), rows,
                   lambda x: np.sum(np.unique(x)).astype(x.dtype)),
        OpTemplate("relax.nonzero", "", "datadep", FLOAT_INT, params,
                   _plain(lambda x: op.nonzero(x)), rows,
                   lambda x: np.stack(np.nonzero(x)).astype("int64")),
    ]  # fmt: skip


_QSCALE = np.array([0.5, 1.0, 0.25], "float32")
_QZERO = np.array([1, -2, 0], "int8")


def _quantize_ref(scale: Any, zero: Any, axis: int, dtype: str) -> Callable[..., np.ndarray]:
    info = np.iinfo(dtype)

    def ref(x: np.ndarray) -> np.ndarray:
        s = np.asarray(scale, "float32")
        z = np.asarray(zero, "float64")
        if s.ndim and axis != -1:
            shape = [1] * x.ndim
            shape[axis] = -1
            s, z = s.reshape(shape), z.reshape(shape)
        q = np.round(x.astype("float32") / s).astype("float64") + z
        return np.clip(q, info.min, info.max).astype(dtype)

    return ref


def _dequantize_ref(x: np.ndarray) -> np.ndarray:
    shifted = x.astype("int64") - _QZERO.astype("int64")
    return shifted.astype("float32") * _QSCALE


def _qdq_templates() -> list[OpTemplate]:
    def params(d: Dim, dt: str) -> list[Param]:
        return [("x", (d, 3), dt)]

    def wide(rng: np.random.Generator, n: int, dt: str) -> Arrays:
        return [random_values(rng, (n, 3), dt) * 100]

    def ints(rng: np.random.Generator, n: int, dt: str) -> Arrays:
        return [rng.integers(-128, 128, size=(n, 3)).astype(dt)]

    scale, zero = (lambda: rconst(_QSCALE)), (lambda: rconst(_QZERO))
    return [
        OpTemplate("relax.quantize", "per-axis-int8", "qdq", ("float32",), params,
                   _plain(lambda x: op.quantize(x, scale(), zero(), axis=1)), wide,
                   _quantize_ref(_QSCALE, _QZERO, 1, "int8")),
        OpTemplate("relax.quantize", "scalar-uint8", "qdq", ("float32",), params,
                   _plain(lambda x: op.quantize(x, rconst(np.float32(0.75)),
                                                rconst(np.int32(7)), out_dtype="uint8")),
                   wide, _quantize_ref(0.75, 7, -1, "uint8")),
        OpTemplate("relax.quantize", "scalar-int32", "qdq", ("float32",), params,
                   _plain(lambda x: op.quantize(x, rconst(np.float32(1e-7)),
                                                rconst(np.int32(-3)), out_dtype="int32")),
                   wide, _quantize_ref(1e-7, -3, -1, "int32")),
        # Float32 input through both ops (the matrix runs every op in float32).
        OpTemplate("relax.dequantize", "roundtrip", "qdq", ("float32",), params,
                   _plain(lambda x: op.dequantize(op.quantize(x, scale(), zero(), axis=1),
                                                  scale(), zero(), axis=1)), wide,
                   lambda x: _dequantize_ref(_quantize_ref(_QSCALE, _QZERO, 1, "int8")(x))),
        OpTemplate("relax.dequantize", "per-axis", "qdq", ("int32",), params,
                   _plain(lambda x: op.dequantize(x, scale(), zero(), axis=1)), ints,
                   _dequantize_ref),
    ]  # fmt: skip


def rconst(value: Any) -> Any:
    """A Relax constant of ``value`` (operands that edge values must not reach)."""
    return const(np.asarray(value))


_QUANTIZE_NAN = "quantize of NaN is unspecified (TVM rounds, clips and casts a NaN)"
EXCLUSIONS.update(
    {
        f"{name}[{label}]-float32": {"nan": _QUANTIZE_NAN}
        for name, label in (
            ("quantize", "per-axis-int8"),
            ("quantize", "scalar-uint8"),
            ("quantize", "scalar-int32"),
            ("dequantize", "roundtrip"),
        )
    }
)
