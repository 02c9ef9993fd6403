"""Printer test calls (op name -> builder) of nn.attention_bias, hint_on_device,
call_inplace_packed and dynamic_strided_slice, for test_print_ops.py (constants as operands, as
in the other families)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relaxvm.ir import relax as rx
from relaxvm.ir.relax import op
from relaxvm.runtime import cpu


def _bsnh(n: int, d: int) -> Any:
    return rx.const(np.zeros((1, n, 2, d), "float32"))


def _row() -> Any:
    return rx.const(np.array([0.5, -1.5], "float32"))


def _ints() -> Any:
    return rx.const(np.array([0, 1], "int64"))


CALLS: dict[str, Callable[[], Any]] = {
    "relax.nn.attention_bias": lambda: op.nn.attention_bias(
        _bsnh(2, 3),
        _bsnh(3, 3),
        _bsnh(3, 2),
        rx.const(np.zeros((1, 2, 3), "float32")),
        scale=0.5,
        causal_mask="TopLeft",
    ),
    "relax.hint_on_device": lambda: op.hint_on_device(
        rx.const(np.array([0.5, -1.5], "float32")), cpu(0), "global"
    ),
    "relax.call_inplace_packed": lambda: op.call_inplace_packed(
        "ext",
        _row(),
        _row(),
        inplace_indices=[1, -1],
        sinfo_args=[rx.TensorStructInfo([2], "float32"), rx.TensorStructInfo([3], "int32")],
    ),
    "relax.dynamic_strided_slice": lambda: op.dynamic_strided_slice(
        rx.const(np.zeros((2, 3), "float32")), _ints(), _ints(), _ints()
    ),
}
