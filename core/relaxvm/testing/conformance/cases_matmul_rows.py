"""Matrix products at the row counts where targets switch schedules: one row (a matrix-vector
product), a few rows, and a whole register tile, with odd ``K`` and ``N`` so that every
remainder path runs; the right-hand operand as an input and as a model constant (which a
target may re-lay out at compile time).

The leading extent of the matrix (``d``) is a batch here: each case multiplies ``d`` stacks
of ``M`` rows, so the static and symbolic variants see the same row counts.

See :mod:`.cases` for what a template is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...ir.relax import const
from .cases import FLOAT_INT, Arrays, Dim, OpTemplate, Param, op, random_values

__all__ = ["templates"]

#: Row counts: a matrix-vector product, two, an odd few, and a full register tile.
ROWS = (1, 2, 7, 16)
#: Odd inner and output extents (no multiple of any vector width).
K, N = 19, 35
#: float32 sums of 19 products, possibly reassociated.
TOL = (1e-5, 1e-4)


def _weights(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """A constant operand of a template in ``dtype`` (fixed: the reference needs it too)."""
    rng = np.random.default_rng(sum(shape))
    if np.dtype(dtype).kind == "f":
        return (rng.standard_normal(shape) * 0.25).astype(dtype)
    return rng.integers(-3, 4, shape).astype(dtype)


def _dtype(var: Any) -> str:
    return str(var.struct_info.dtype)


def _stacks(rows: int) -> Callable[[np.random.Generator, int, str], Arrays]:
    return lambda rng, n, dt: [random_values(rng, (n, rows, K), dt, "small")]


def _product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind != "f":
        return (a.astype("int64") @ b.astype("int64")).astype(a.dtype)
    return (a.astype("float64") @ b.astype("float64")).astype(a.dtype)


def _matmul(rows: int) -> OpTemplate:
    def params(d: Dim, dt: str) -> list[Param]:
        return [("a", (d, rows, K), dt), ("b", (K, N), dt)]

    def inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
        return [*_stacks(rows)(rng, n, dt), random_values(rng, (K, N), dt, "small")]

    return OpTemplate("relax.matmul", f"rows{rows}", "matmul_rows", FLOAT_INT, params,
                      lambda d, a, b: op.matmul(a, b), inputs, _product, TOL)  # fmt: skip


def _matmul_const(rows: int) -> OpTemplate:
    return OpTemplate(
        "relax.matmul", f"rows{rows}-const", "matmul_rows", FLOAT_INT,
        lambda d, dt: [("a", (d, rows, K), dt)],
        lambda d, a: op.matmul(a, const(_weights((K, N), _dtype(a)))),
        _stacks(rows), lambda a: _product(a, _weights((K, N), str(a.dtype))), TOL,
    )  # fmt: skip


def _linear_const(rows: int) -> OpTemplate:
    def build(d: Dim, x: Any) -> Any:
        dt = _dtype(x)
        return op.linear(x, const(_weights((N, K), dt)), const(_weights((N,), dt)))

    def ref(x: np.ndarray) -> np.ndarray:
        dt = str(x.dtype)
        return _product(x, _weights((N, K), dt).T) + _weights((N,), dt)

    return OpTemplate("relax.linear", f"rows{rows}-const", "matmul_rows", FLOAT_INT,
                      lambda d, dt: [("x", (d, rows, K), dt)], build, _stacks(rows), ref, TOL)  # fmt: skip


def templates() -> list[OpTemplate]:
    """The templates of this family."""
    return (
        [_matmul(rows) for rows in ROWS]
        + [_matmul_const(rows) for rows in (1, 7)]
        + [_linear_const(rows) for rows in (1, 7)]
    )
