"""Conformance templates of ``slice_scatter``, ``index_tensor``, ``index_put``,
``multinomial_from_uniform`` and ``shape_to_tensor`` (see :mod:`.cases`).

Index tensors are int64 with values in the valid range of the axis they index, negative ones
included (so the edge-value test, which fills only the parameters of the case's dtype, leaves
them valid). Out-of-range indices and positions are tested in
``tests/plugins/ops/test_tvm_extra_b.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .cases import FLOAT_INT, Arrays, OpTemplate, op, random_values

__all__ = ["templates"]


def _indices(rng: np.random.Generator, shape: tuple[int, ...], extent: int) -> np.ndarray:
    """int64 indices valid for an axis of ``extent``, negative ones included."""
    return rng.integers(-extent, extent, size=shape).astype("int64")


def _slice_scatter_ref(
    x: np.ndarray, src: np.ndarray, start: int, end: int, step: int, axis: int
) -> np.ndarray:
    out = x.copy()
    where: list[Any] = [slice(None)] * x.ndim
    where[axis] = slice(start, end, step)
    out[tuple(where)] = src
    return out


def _slice_scatters() -> list[OpTemplate]:
    def cols_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
        return [random_values(rng, (n, 6), dt), random_values(rng, (n, 2), dt)]

    def rows_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
        return [random_values(rng, (2 * n, 3), dt), random_values(rng, (n, 3), dt)]

    def rows_build(d: Any, x: Any, s: Any) -> Any:
        # Symbolic bounds: every other row of a (2n, 3) tensor.
        return op.slice_scatter(x, s, 1, 2 * d, 2, axis=0)

    return [
        OpTemplate("relax.slice_scatter", "", "index", FLOAT_INT,
                   lambda d, dt: [("x", (d, 6), dt), ("s", (d, 2), dt)],
                   lambda d, x, s: op.slice_scatter(x, s, 1, 5, 2, axis=1), cols_inputs,
                   lambda x, s: _slice_scatter_ref(x, s, 1, 5, 2, 1)),
        OpTemplate("relax.slice_scatter", "rows", "index", FLOAT_INT,
                   lambda d, dt: [("x", (d * 2, 3), dt), ("s", (d, 3), dt)],
                   rows_build, rows_inputs,
                   lambda x, s: _slice_scatter_ref(x, s, 1, x.shape[0], 2, 0)),
    ]  # fmt: skip


def _index_tensors() -> list[OpTemplate]:
    def pair_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
        x = random_values(rng, (4, 3, n), dt)
        return [x, _indices(rng, (5,), 4), _indices(rng, (5,), 3)]

    def outer_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
        x = random_values(rng, (4, n), dt)
        return [x, _indices(rng, (2, 1), 4), _indices(rng, (n,), n)]

    def rows_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
        return [random_values(rng, (n, 4), dt), _indices(rng, (n, 2), n)]

    return [
        OpTemplate("relax.index_tensor", "", "index", FLOAT_INT,
                   lambda d, dt: [("x", (4, 3, d), dt), ("i", (5,), "int64"),
                                  ("j", (5,), "int64")],
                   lambda d, x, i, j: op.index_tensor(x, [i, j]), pair_inputs,
                   lambda x, i, j: x[i, j]),
        OpTemplate("relax.index_tensor", "broadcast", "index", FLOAT_INT,
                   lambda d, dt: [("x", (4, d), dt), ("i", (2, 1), "int64"),
                                  ("j", (d,), "int64")],
                   lambda d, x, i, j: op.index_tensor(x, [i, j]), outer_inputs,
                   lambda x, i, j: x[i, j]),
        OpTemplate("relax.index_tensor", "rows", "index", FLOAT_INT,
                   lambda d, dt: [("x", (d, 4), dt), ("i", (d, 2), "int64")],
                   lambda d, x, i: op.index_tensor(x, [i]), rows_inputs,
                   lambda x, i: x[i]),
    ]  # fmt: skip


def _index_put_ref(
    x: np.ndarray, i: np.ndarray, j: np.ndarray, v: np.ndarray, accumulate: bool
) -> np.ndarray:
    out = x.copy()
    if accumulate:
        np.add.at(out, (i, j), np.broadcast_to(v, np.broadcast_shapes(i.shape, j.shape)))
    else:
        out[i, j] = v  # repeated positions: numpy keeps the last, as the kernel does
    return out


def _index_puts() -> list[OpTemplate]:
    def rows_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
        x, v = random_values(rng, (n, 4), dt), random_values(rng, (n,), dt)
        return [x, _indices(rng, (n,), n), _indices(rng, (n,), 4), v]

    def grid_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
        x, v = random_values(rng, (4, n), dt), random_values(rng, (n,), dt)
        return [x, _indices(rng, (2, 1), 4), _indices(rng, (n,), n), v]

    return [
        OpTemplate("relax.index_put", "", "index", FLOAT_INT,
                   lambda d, dt: [("x", (d, 4), dt), ("i", (d,), "int64"), ("j", (d,), "int64"),
                                  ("v", (d,), dt)],
                   lambda d, x, i, j, v: op.index_put(x, [i, j], v), rows_inputs,
                   lambda x, i, j, v: _index_put_ref(x, i, j, v, False)),
        OpTemplate("relax.index_put", "accumulate", "index", FLOAT_INT,
                   lambda d, dt: [("x", (4, d), dt), ("i", (2, 1), "int64"), ("j", (d,), "int64"),
                                  ("v", (d,), dt)],
                   lambda d, x, i, j, v: op.index_put(x, [i, j], v, accumulate=True),
                   grid_inputs, lambda x, i, j, v: _index_put_ref(x, i, j, v, True)),
    ]  # fmt: skip


def _multinomial_ref(prob: np.ndarray, u: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The first category whose running probability exceeds the sample, else the last one."""
    # Sequential float32 sums, in the kernel's order.
    running = np.cumsum(prob[rows[:, 0]], axis=1, dtype=prob.dtype)
    hit = u < running
    return np.where(hit.any(axis=1), hit.argmax(axis=1), prob.shape[1] - 1)[:, None].astype("int64")


def _multinomials() -> list[OpTemplate]:
    def inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
        prob = rng.random((n, 5)).astype(dt) + np.asarray(0.05, dt)
        prob /= prob.sum(axis=1, keepdims=True)
        return [prob, rng.random((n, 1)).astype(dt), _indices(rng, (n, 1), n)]

    def build(d: Any, p: Any, u: Any, r: Any) -> Any:
        return op.multinomial_from_uniform(p, u, r)

    return [
        OpTemplate("relax.multinomial_from_uniform", "", "index", ("float32",),
                   lambda d, dt: [("p", (d, 5), dt), ("u", (d, 1), dt), ("r", (d, 1), "int64")],
                   build, inputs, _multinomial_ref),
    ]  # fmt: skip


def _shape_to_tensor() -> OpTemplate:
    def inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
        return [random_values(rng, (n, 4), dt)]

    return OpTemplate(
        "relax.shape_to_tensor", "", "index", FLOAT_INT,
        lambda d, dt: [("x", (d, 4), dt)],
        lambda d, x: op.shape_to_tensor(op.shape_of(x)), inputs,
        lambda x: np.array(x.shape, "int64"),
    )  # fmt: skip


def templates() -> list[OpTemplate]:
    """The templates of this module."""
    return [
        *_slice_scatters(),
        *_index_tensors(),
        *_index_puts(),
        *_multinomials(),
        _shape_to_tensor(),
    ]
