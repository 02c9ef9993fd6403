"""Printer test calls (op name -> builder) of the unary/binary math, bitwise and shift ops, for test_print_ops.py.

The operands are constants: the test's namespace knows only its own variables by name, and a
constant prints as ``R.const(...)``, which the namespace rebuilds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relaxvm.ir import relax as rx
from relaxvm.ir.relax import op


def _floats() -> Any:
    return rx.const(np.array([[0.5, -1.5], [2.0, 0.25]], "float32"))


def _ints() -> Any:
    return rx.const(np.array([[5, -7], [12, 3]], "int32"))


def _counts() -> Any:
    return rx.const(np.array([1, 3], "int32"))


def _mask() -> Any:
    return rx.const(np.array([True, False]))


_FLOAT_UNARY = (
    "sin cos tan asin acos atan sinh cosh asinh acosh atanh sign square trunc isnan isinf"
)

CALLS: dict[str, Callable[[], Any]] = {
    **{
        f"relax.{name}": (lambda name=name: getattr(op, name)(_floats()))
        for name in _FLOAT_UNARY.split()
    },
    "relax.isfinite": lambda: op.isfinite(_ints()),
    "relax.bitwise_not": lambda: op.bitwise_not(_mask()),
    "relax.mod": lambda: op.mod(_floats(), rx.const(2.5, "float32")),
    "relax.floor_mod": lambda: op.floor_mod(_ints(), _counts()),
    "relax.bitwise_and": lambda: op.bitwise_and(_ints(), _counts()),
    "relax.bitwise_or": lambda: op.bitwise_or(_mask(), _mask()),
    "relax.bitwise_xor": lambda: op.bitwise_xor(_ints(), _counts()),
    "relax.left_shift": lambda: op.left_shift(_ints(), _counts()),
    "relax.right_shift": lambda: op.right_shift(_ints(), rx.PrimValue(3)),
}
