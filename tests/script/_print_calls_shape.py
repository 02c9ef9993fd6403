"""Printer test calls (op name -> builder) of the manipulation and creation ops, for test_print_ops.py.

The operands are constants: they print as ``R.const(...)`` and rebuild without needing the
test module's variables in the evaluation namespace.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relaxvm.ir import relax as rx
from relaxvm.ir.relax import op


def _mat() -> rx.Constant:
    return rx.const(np.arange(6, dtype="float32").reshape(2, 3))


def _vec() -> rx.Constant:
    return rx.const(np.arange(3, dtype="int32"))


CALLS: dict[str, Callable[[], Any]] = {
    "relax.tril": lambda: op.tril(_mat(), 1),
    "relax.triu": lambda: op.triu(_mat(), -1),
    "relax.flip": lambda: op.flip(_mat(), axis=-1),
    "relax.layout_transform": lambda: op.layout_transform(
        _mat(), lambda i, j: (j // 2, i, j % 2), pad_value=1.5
    ),
    "relax.tile": lambda: op.tile(_mat(), [2, 1, 3]),
    "relax.repeat": lambda: op.repeat(_mat(), 2, axis=1),
    "relax.stack": lambda: op.stack([_mat(), _mat()], axis=1),
    "relax.meshgrid": lambda: op.meshgrid([_vec(), _vec()], indexing="xy"),
    "relax.collapse_sum_like": lambda: op.collapse_sum_like(_mat(), _vec()),
    "relax.collapse_sum_to": lambda: op.collapse_sum_to(_mat(), (1, 3)),
    "relax.eye": lambda: op.eye(2, 3, k=1, dtype="int32"),
    "relax.eye_like": lambda: op.eye_like(_mat(), -1, dtype="float16"),
}
