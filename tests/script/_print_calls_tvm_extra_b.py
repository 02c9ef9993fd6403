"""Printer test calls (op name -> builder) of slice_scatter, index_tensor, index_put,
multinomial_from_uniform and shape_to_tensor, for test_print_ops.py (constants as operands, as
in the other families)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relaxvm.ir import relax as rx
from relaxvm.ir.relax import op


def _grid() -> Any:
    return rx.const(np.arange(12, dtype="float32").reshape(3, 4))


def _ints(*values: int) -> Any:
    return rx.const(np.array(values, "int64"))


CALLS: dict[str, Callable[[], Any]] = {
    "relax.slice_scatter": lambda: op.slice_scatter(
        _grid(), rx.const(np.zeros((3, 2), "float32")), 0, 4, 2, axis=1
    ),
    "relax.index_tensor": lambda: op.index_tensor(_grid(), [_ints(0, 2), _ints(1, 3)]),
    "relax.index_put": lambda: op.index_put(
        _grid(), [_ints(0, 2), _ints(1, 3)], rx.const(np.ones(2, "float32")), accumulate=True
    ),
    "relax.multinomial_from_uniform": lambda: op.multinomial_from_uniform(
        rx.const(np.full((2, 3), 1 / 3, "float32")),
        rx.const(np.array([[0.2], [0.9]], "float32")),
        rx.const(np.array([[0], [1]], "int64")),
        dtype="int32",
    ),
    "relax.shape_to_tensor": lambda: op.shape_to_tensor(rx.ShapeExpr([2, 3])),
}
