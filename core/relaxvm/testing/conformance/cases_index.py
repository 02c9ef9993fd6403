"""Conformance templates of the gather/scatter/one_hot ops (see :mod:`.cases`).

Index tensors are int64 (so the edge-value test, which fills the parameters of the case's
dtype, leaves them valid) with values in the valid range of the axis they index, negative ones
included; scatters repeat indices on purpose, and the references apply updates in row-major
order like the kernels. Out-of-range indices are tested in ``tests/plugins/ops/test_index_ops.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...ir.op import const
from ...ir.relax import PrimValue
from .cases import FLOAT_INT, Arrays, OpTemplate, op, random_values

__all__ = ["EXCLUSIONS", "templates"]

#: Edge-value exclusions of these templates, as :data:`.test_edges.EXCLUSIONS`.
EXCLUSIONS: dict[str, dict[str, str]] = {
    "scatter_elements[mean]-int32": {
        "int-extremes": "old + update overflows int32 before the halving (signed overflow, "
        "undefined in TVM's C kernel): numpy wraps the sum, a target need not"
    },
}

Combine = Callable[[Any, Any], Any]

#: numpy's version of each scatter reduction (TVM's ``mean`` averages pairwise per update).
COMBINE: dict[str, Combine] = {
    "update": lambda old, new: new,
    "add": lambda old, new: old + new,
    "mul": lambda old, new: old * new,
    "mean": lambda old, new: _halve(old + new),
    "max": np.maximum,
    "min": np.minimum,
}


def _halve(total: Any) -> Any:
    """``total / 2`` in ``total``'s dtype: truncating for integers (TIR's integer division)."""
    if np.issubdtype(total.dtype, np.integer):
        return total.dtype.type(np.fix(total / 2))
    return total / total.dtype.type(2)


def _indices(rng: np.random.Generator, shape: tuple[int, ...], extent: int) -> np.ndarray:
    """int64 indices valid for an axis of ``extent``, negative ones included."""
    if extent == 0:
        return np.zeros(shape, "int64")
    return rng.integers(-extent, extent, size=shape).astype("int64")


def _wrap(i: np.ndarray, extent: int) -> np.ndarray:
    return np.where(i < 0, i + extent, i)


def _scatter_elements_ref(
    x: np.ndarray, i: np.ndarray, u: np.ndarray, axis: int, how: str
) -> np.ndarray:
    out = x.copy()
    combine = COMBINE[how]
    wrapped = _wrap(i, x.shape[axis])
    with np.errstate(all="ignore"):
        for pos in np.ndindex(*i.shape):
            at = list(pos)
            at[axis] = int(wrapped[pos])
            out[tuple(at)] = combine(out[tuple(at)], u[pos])
    return out


def _scatter_nd_ref(x: np.ndarray, i: np.ndarray, u: np.ndarray, how: str) -> np.ndarray:
    out = x.copy()
    combine = COMBINE[how]
    depth = i.shape[-1]
    with np.errstate(all="ignore"):
        for pos in np.ndindex(*i.shape[:-1]):
            at = tuple(int(_wrap(i[pos][j], x.shape[j])) for j in range(depth))
            out[at] = combine(out[at], u[pos])
    return out


def _one_hot_ref(i: np.ndarray, depth: int, axis: int, on: Any, off: Any) -> np.ndarray:
    hot = i[..., None] == np.arange(depth)
    out = np.where(hot, on, off)
    return np.moveaxis(out, -1, axis)


def _on_off(dt: str) -> tuple[PrimValue, PrimValue, Any, Any]:
    on, off = (3.5, -1.25) if dt.startswith("float") else (7, -2)
    return PrimValue(const(on, dt)), PrimValue(const(off, dt)), on, off


def _gathers() -> list[OpTemplate]:
    def elements_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
        return [random_values(rng, (n, 4), dt), _indices(rng, (n, 3), 4)]

    def elements0_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
        return [random_values(rng, (n, 4), dt), _indices(rng, (n, 4), n)]

    def nd_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
        rows, cols = _indices(rng, (n, 1), n), _indices(rng, (n, 1), 4)
        return [random_values(rng, (n, 4), dt), np.concatenate([rows, cols], axis=1)]

    def nd_batch_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
        return [random_values(rng, (n, 4, 3), dt), _indices(rng, (n, 2, 1), 4)]

    def nd_ref(x: np.ndarray, i: np.ndarray) -> np.ndarray:
        return x[_wrap(i[:, 0], x.shape[0]), _wrap(i[:, 1], 4)]

    def nd_batch_ref(x: np.ndarray, i: np.ndarray) -> np.ndarray:
        return x[np.arange(x.shape[0])[:, None], _wrap(i[..., 0], 4)]

    return [
        OpTemplate("relax.gather_elements", "", "index", FLOAT_INT,
                   lambda d, dt: [("x", (d, 4), dt), ("i", (d, 3), "int64")],
                   lambda d, x, i: op.gather_elements(x, i, axis=1), elements_inputs,
                   lambda x, i: np.take_along_axis(x, _wrap(i, 4), axis=1)),
        OpTemplate("relax.gather_elements", "axis0", "index", FLOAT_INT,
                   lambda d, dt: [("x", (d, 4), dt), ("i", (d, 4), "int64")],
                   lambda d, x, i: op.gather_elements(x, i, axis=0), elements0_inputs,
                   lambda x, i: np.take_along_axis(x, _wrap(i, x.shape[0]), axis=0)),
        OpTemplate("relax.gather_nd", "", "index", FLOAT_INT,
                   lambda d, dt: [("x", (d, 4), dt), ("i", (d, 2), "int64")],
                   lambda d, x, i: op.gather_nd(x, i), nd_inputs, nd_ref),
        OpTemplate("relax.gather_nd", "batch1", "index", FLOAT_INT,
                   lambda d, dt: [("x", (d, 4, 3), dt), ("i", (d, 2, 1), "int64")],
                   lambda d, x, i: op.gather_nd(x, i, batch_dims=1), nd_batch_inputs,
                   nd_batch_ref),
    ]  # fmt: skip


def _scatter_elements(how: str, dtypes: tuple[str, ...]) -> OpTemplate:
    def inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
        kind = "unit" if how == "mul" else ""
        x, u = random_values(rng, (n, 4), dt), random_values(rng, (n, 3), dt, kind)
        return [x, _indices(rng, (n, 3), 4), u]

    return OpTemplate(
        "relax.scatter_elements", "" if how == "update" else how, "index", dtypes,
        lambda d, dt: [("x", (d, 4), dt), ("i", (d, 3), "int64"), ("u", (d, 3), dt)],
        lambda d, x, i, u: op.scatter_elements(x, i, u, axis=1, reduction=how), inputs,
        lambda x, i, u: _scatter_elements_ref(x, i, u, 1, how),
    )  # fmt: skip


def _scatters() -> list[OpTemplate]:
    def axis0_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
        x, u = random_values(rng, (n, 4), dt), random_values(rng, (n, 4), dt)
        return [x, _indices(rng, (n, 4), n), u]

    def rows_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
        x, u = random_values(rng, (n, 4), dt), random_values(rng, (n, 4), dt)
        return [x, _indices(rng, (n, 1), n), u]

    def points_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
        rows, cols = _indices(rng, (n, 1), n), _indices(rng, (n, 1), 4)
        x, u = random_values(rng, (n, 4), dt), random_values(rng, (n,), dt)
        return [x, np.concatenate([rows, cols], axis=1), u]

    def nd(how: str) -> Callable[..., Any]:
        return lambda x, i, u: _scatter_nd_ref(x, i, u, how)

    return [
        *(_scatter_elements(how, FLOAT_INT) for how in ("update", "add", "mul", "max", "min")),
        _scatter_elements("mean", FLOAT_INT),
        OpTemplate("relax.scatter_elements", "axis0", "index", FLOAT_INT,
                   lambda d, dt: [("x", (d, 4), dt), ("i", (d, 4), "int64"), ("u", (d, 4), dt)],
                   lambda d, x, i, u: op.scatter_elements(x, i, u, axis=0), axis0_inputs,
                   lambda x, i, u: _scatter_elements_ref(x, i, u, 0, "update")),
        OpTemplate("relax.scatter_nd", "", "index", FLOAT_INT,
                   lambda d, dt: [("x", (d, 4), dt), ("i", (d, 1), "int64"), ("u", (d, 4), dt)],
                   lambda d, x, i, u: op.scatter_nd(x, i, u), rows_inputs, nd("update")),
        OpTemplate("relax.scatter_nd", "add", "index", FLOAT_INT,
                   lambda d, dt: [("x", (d, 4), dt), ("i", (d, 2), "int64"), ("u", (d,), dt)],
                   lambda d, x, i, u: op.scatter_nd(x, i, u, reduction="add"), points_inputs,
                   nd("add")),
        OpTemplate("relax.scatter_nd", "mul", "index", FLOAT_INT,
                   lambda d, dt: [("x", (d, 4), dt), ("i", (d, 1), "int64"), ("u", (d, 4), dt)],
                   lambda d, x, i, u: op.scatter_nd(x, i, u, reduction="mul"), rows_inputs,
                   nd("mul")),
    ]  # fmt: skip


def _one_hot(axis: int) -> OpTemplate:
    # The builder sees only the parameters, so a one-element ``like`` tensor of the case's
    # dtype carries the dtype of on_value/off_value (the op does not read it).
    def inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
        # -2..5 with depth 4: negative and too-large indices give all-off rows (TVM's rule).
        return [rng.integers(-2, 6, size=(n, 3)).astype("int64"), np.zeros((1,), dt)]

    def build(d: Any, i: Any, like: Any) -> Any:
        on, off, _, _ = _on_off(str(like.struct_info.dtype))
        return op.one_hot(i, on, off, depth=4, axis=axis)

    def ref(i: np.ndarray, like: np.ndarray) -> np.ndarray:
        _, _, on, off = _on_off(str(like.dtype))
        return _one_hot_ref(i, 4, axis, on, off).astype(like.dtype)

    return OpTemplate(
        "relax.one_hot", "" if axis == -1 else f"axis{axis}", "index", FLOAT_INT,
        lambda d, dt: [("i", (d, 3), "int64"), ("like", (1,), dt)], build, inputs, ref,
    )  # fmt: skip


def templates() -> list[OpTemplate]:
    """The templates of this family."""
    return [*_gathers(), *_scatters(), _one_hot(-1), _one_hot(0)]
