"""Printer test calls (op name -> builder) of the gather/scatter/one_hot ops, for test_print_ops.py.

The operands are constants: the test's namespace knows only its own variables by name, and a
constant prints as ``R.const(...)``, which the namespace rebuilds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relaxvm.ir import FloatImm
from relaxvm.ir import relax as rx
from relaxvm.ir.relax import op


def _data() -> Any:
    return rx.const(np.array([[0.5, -1.5, 3.0], [2.0, 0.25, -4.0]], "float32"))


def _index() -> Any:
    return rx.const(np.array([[1, 0, -1], [0, 1, 1]], "int64"))


def _tuples() -> Any:
    return rx.const(np.array([[1, 2], [0, -1]], "int32"))


CALLS: dict[str, Callable[[], Any]] = {
    "relax.gather_elements": lambda: op.gather_elements(_data(), _index(), axis=-2),
    "relax.gather_nd": lambda: op.gather_nd(_data(), _tuples(), batch_dims=0),
    "relax.scatter_elements": lambda: op.scatter_elements(
        _data(), _index(), _data(), axis=1, reduction="mean"
    ),
    "relax.scatter_nd": lambda: op.scatter_nd(
        _data(), _tuples(), rx.const(np.array([1.0, 2.0], "float32")), reduction="max"
    ),
    "relax.one_hot": lambda: op.one_hot(
        _index(),
        rx.PrimValue(FloatImm("float32", 1.0)),
        rx.PrimValue(FloatImm("float32", 0.0)),
        depth=3,
        axis=0,
    ),
}
