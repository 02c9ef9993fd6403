"""Printer test calls (op name -> builder) of the nn activations, normalizations and statistics, for test_print_ops.py.

The operands are constants: they print as ``R.const(...)`` and rebuild without needing the
test module's variables in the evaluation namespace.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relaxvm.ir import relax as rx
from relaxvm.ir.relax import op


def _x() -> rx.Constant:
    return rx.const(np.array([[0.5, -1.5, 2.0], [-0.25, 3.0, -4.0]], "float32"))


def _vec() -> rx.Constant:
    return rx.const(np.array([1.0, 0.5, 2.0], "float32"))


def _chan() -> rx.Constant:
    return rx.const(np.array([1.0, -1.0], "float32"))


CALLS: dict[str, Callable[[], Any]] = {
    "relax.nn.leakyrelu": lambda: op.nn.leakyrelu(_x(), alpha=0.2),
    "relax.nn.softplus": lambda: op.nn.softplus(_x(), beta=2.0, threshold=10.0),
    "relax.nn.gelu_tanh": lambda: op.nn.gelu_tanh(_x()),
    "relax.nn.prelu": lambda: op.nn.prelu(_x(), _vec(), axis=-1),
    "relax.nn.dropout": lambda: op.nn.dropout(_x(), rate=0.1),
    "relax.nn.pad": lambda: op.nn.pad(_x(), [1, 0, 2, 3], pad_mode="constant", pad_value=-1.5),
    "relax.nn.group_norm": lambda: op.nn.group_norm(_x(), _chan(), _chan(), 2, 0, [1], 1e-3),
    "relax.nn.instance_norm": lambda: op.nn.instance_norm(
        _x(), _chan(), _chan(), 0, [1], center=False
    ),
    "relax.std": lambda: op.std(_x(), axis=[1], keepdims=True),
    "relax.cumprod": lambda: op.cumprod(_x(), axis=1, dtype="float64", exclusive=True),
    "relax.median": lambda: op.median(_x(), axis=0, keepdims=True),
}
