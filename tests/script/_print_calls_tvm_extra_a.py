"""Printer test calls (op name -> builder) of log_add_exp, outer, ewise_fma, bucketize,
hamming_window, wrap_param, nn.relu6 and nn.batch_flatten, for test_print_ops.py (constants as operands, as in the other
families)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relaxvm.ir import relax as rx
from relaxvm.ir.relax import op


def _row() -> Any:
    return rx.const(np.array([0.5, -1.5, 3.0], "float32"))


def _grid() -> Any:
    return rx.const(np.arange(12, dtype="float32").reshape(2, 2, 3))


CALLS: dict[str, Callable[[], Any]] = {
    "relax.log_add_exp": lambda: op.log_add_exp(_row(), _row()),
    "relax.outer": lambda: op.outer(_row(), _row()),
    "relax.ewise_fma": lambda: op.ewise_fma(_row(), _row(), _row()),
    "relax.bucketize": lambda: op.bucketize(_row(), _row(), out_int32=True, right=True),
    "relax.hamming_window": lambda: op.hamming_window(5, False, 0.54, 0.46, "float32"),
    "relax.wrap_param": lambda: op.wrap_param(_row(), "float16"),
    "relax.nn.relu6": lambda: op.nn.relu6(_row()),
    "relax.nn.batch_flatten": lambda: op.nn.batch_flatten(_grid()),
}
