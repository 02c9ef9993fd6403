"""Printer test calls (op name -> builder) of the sorting, searching, einsum, data-dependent and qdq ops, for test_print_ops.py.

The operands are constants: the test's namespace knows only its own variables by name, and a
constant prints as ``R.const(...)``, which the namespace rebuilds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relaxvm.ir import relax as rx
from relaxvm.ir.relax import op


def _data() -> Any:
    return rx.const(np.array([[0.5, -1.5, 3.0], [2.0, 0.25, -4.0]], "float32"))


def _square() -> Any:
    return rx.const(np.array([[1.0, 2.0], [3.0, 4.0]], "float32"))


def _scales() -> Any:
    return rx.const(np.array([0.5, 0.25], "float32"))


CALLS: dict[str, Callable[[], Any]] = {
    "relax.sort": lambda: op.sort(_data(), axis=0, descending=True),
    "relax.argsort": lambda: op.argsort(_data(), axis=-1, descending=False, dtype="int64"),
    "relax.topk": lambda: op.topk(_data(), k=2, axis=1, ret_type="values", largest=False),
    "relax.einsum": lambda: op.einsum([_data(), _square()], "ji,jk->ik"),
    "relax.unique": lambda: op.unique(
        _data(), sorted=False, return_index=True, return_counts=True, axis=1
    ),
    "relax.nonzero": lambda: op.nonzero(_data()),
    "relax.quantize": lambda: op.quantize(
        _data(), _scales(), rx.const(np.array([1, -1], "int8")), axis=0, out_dtype="uint8"
    ),
    "relax.dequantize": lambda: op.dequantize(
        rx.const(np.array([[1, -2, 3]], "int8")),
        rx.const(np.float32(0.5)),
        rx.const(np.int8(2)),
        out_dtype="float16",
    ),
}
