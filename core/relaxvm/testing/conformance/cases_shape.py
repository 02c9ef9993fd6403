"""Conformance templates of the manipulation and creation ops (see :mod:`.cases`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .cases import (
    FLOAT_INT,
    Arrays,
    Dim,
    OpTemplate,
    Param,
    one_input,
    op,
    random_values,
    row_param,
)

__all__ = ["EXCLUSIONS", "templates"]

#: Edge-value exclusions of these templates, as :data:`.test_edges.EXCLUSIONS`.
EXCLUSIONS: dict[str, dict[str, str]] = {}


def _pair(d: Dim, dt: str) -> list[Param]:
    return [("a", (d, 4), dt), ("b", (d, 4), dt)]


def _pair_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
    return [random_values(rng, (n, 4), dt), random_values(rng, (n, 4), dt)]


def _vectors(d: Dim, dt: str) -> list[Param]:
    return [("a", (d,), dt), ("b", (3,), dt)]


def _vector_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
    return [random_values(rng, (n,), dt), random_values(rng, (3,), dt)]


def _collapse_like(d: Dim, dt: str) -> list[Param]:
    return [("x", (d, 4), dt), ("t", (1, 4), dt)]


def _collapse_like_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
    return [random_values(rng, (n, 4), dt), random_values(rng, (1, 4), dt)]


def _summed(x: np.ndarray, axis: Any, keepdims: bool = False) -> np.ndarray:
    # numpy sums int32 in int64; the kernel accumulates in the tensor's dtype (wrapping).
    return x.sum(axis=axis, keepdims=keepdims).astype(x.dtype)


def _dtype_of(var: Any) -> str:
    return str(var.struct_info.dtype)


def _blocked_rows(x: np.ndarray, pad_value: float) -> np.ndarray:
    """numpy reference of ``layout_transform(x, lambda i, j: (i // 2, j, i % 2))``."""
    rows = -(-x.shape[0] // 2) * 2
    padded = np.full((rows, x.shape[1]), pad_value, x.dtype)
    padded[: x.shape[0]] = x
    return padded.reshape(rows // 2, 2, x.shape[1]).transpose(0, 2, 1)


def templates() -> list[OpTemplate]:
    """The templates of this family."""
    row = one_input(lambda n: (n, 4))
    cube = one_input(lambda n: (n, 2, 3))
    cube_param = lambda d, dt: [("x", (d, 2, 3), dt)]  # noqa: E731
    return [
        OpTemplate("relax.tril", "", "shape_extra", FLOAT_INT, row_param,
                   lambda d, x: op.tril(x, 1), row, lambda x: np.tril(x, 1)),
        OpTemplate("relax.tril", "batched", "shape_extra", FLOAT_INT, cube_param,
                   lambda d, x: op.tril(x), cube, np.tril),
        OpTemplate("relax.triu", "", "shape_extra", FLOAT_INT, row_param,
                   lambda d, x: op.triu(x, -1), row, lambda x: np.triu(x, -1)),
        OpTemplate("relax.layout_transform", "", "shape_extra", FLOAT_INT, row_param,
                   lambda d, x: op.layout_transform(x, lambda i, j: (i // 2, j, i % 2),
                                                    pad_value=7),
                   row, lambda x: _blocked_rows(x, 7)),
        OpTemplate("relax.layout_transform", "transpose", "shape_extra", FLOAT_INT, row_param,
                   lambda d, x: op.layout_transform(x, lambda i, j: (j, i)), row,
                   lambda x: np.ascontiguousarray(x.T)),
        OpTemplate("relax.flip", "", "shape_extra", FLOAT_INT, row_param,
                   lambda d, x: op.flip(x, 0), row, lambda x: np.flip(x, 0)),
        OpTemplate("relax.flip", "last", "shape_extra", FLOAT_INT, cube_param,
                   lambda d, x: op.flip(x, -1), cube, lambda x: np.flip(x, -1)),
        OpTemplate("relax.tile", "", "shape_extra", FLOAT_INT, row_param,
                   lambda d, x: op.tile(x, [2, 1, 3]), row, lambda x: np.tile(x, [2, 1, 3])),
        OpTemplate("relax.repeat", "", "shape_extra", FLOAT_INT, row_param,
                   lambda d, x: op.repeat(x, 2, axis=0), row, lambda x: np.repeat(x, 2, axis=0)),
        OpTemplate("relax.repeat", "flat", "shape_extra", FLOAT_INT, row_param,
                   lambda d, x: op.repeat(x, 3), row, lambda x: np.repeat(x, 3)),
        OpTemplate("relax.stack", "", "shape_extra", FLOAT_INT, _pair,
                   lambda d, a, b: op.stack([a, b], axis=1), _pair_inputs,
                   lambda a, b: np.stack([a, b], axis=1)),
        OpTemplate("relax.meshgrid", "", "shape_extra", FLOAT_INT, _vectors,
                   lambda d, a, b: op.meshgrid([a, b]), _vector_inputs,
                   lambda a, b: tuple(np.meshgrid(a, b, indexing="ij"))),
        OpTemplate("relax.meshgrid", "xy", "shape_extra", FLOAT_INT, _vectors,
                   lambda d, a, b: op.meshgrid([a, b], indexing="xy"), _vector_inputs,
                   lambda a, b: tuple(np.meshgrid(a, b, indexing="xy"))),
        OpTemplate("relax.collapse_sum_to", "", "shape_extra", FLOAT_INT, cube_param,
                   lambda d, x: op.collapse_sum_to(x, (2, 1)), cube,
                   lambda x: _summed(x, (0, 2)).reshape(2, 1)),
        OpTemplate("relax.collapse_sum_like", "", "shape_extra", FLOAT_INT, _collapse_like,
                   lambda d, x, t: op.collapse_sum_like(x, t), _collapse_like_inputs,
                   lambda x, t: _summed(x, 0, keepdims=True)),
        OpTemplate("relax.eye", "", "shape_extra", FLOAT_INT, lambda d, dt: [("x", (d,), dt)],
                   lambda d, x: op.eye(d, 4, 1, dtype=_dtype_of(x)), one_input(lambda n: (n,)),
                   lambda x: np.eye(x.shape[0], 4, 1, dtype=x.dtype)),
        OpTemplate("relax.eye_like", "", "shape_extra", FLOAT_INT, row_param,
                   lambda d, x: op.eye_like(x, -1), row,
                   lambda x: np.eye(x.shape[0], 4, -1, dtype=x.dtype)),
    ]  # fmt: skip
