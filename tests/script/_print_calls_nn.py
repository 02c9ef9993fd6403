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


def _ncw() -> rx.Constant:
    return rx.const(np.arange(12, dtype="float32").reshape(1, 2, 6))


def _oiw() -> rx.Constant:
    return rx.const(np.ones((4, 1, 3), "float32"))


def _nchw() -> rx.Constant:
    return rx.const(np.arange(8, dtype="float32").reshape(1, 2, 2, 2))


def _iohw() -> rx.Constant:
    return rx.const(np.ones((2, 3, 2, 2), "float32"))


def _bsnh(seq: int, dim: int) -> rx.Constant:
    return rx.const(np.linspace(-1.0, 1.0, 2 * seq * dim, dtype="float32").reshape(1, seq, 2, dim))


def _ncdhw() -> rx.Constant:
    return rx.const(np.arange(16, dtype="float32").reshape(1, 2, 2, 2, 2))


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
    "relax.nn.conv1d": lambda: op.nn.conv1d(
        _ncw(), _oiw(), strides=2, padding=(1, 0), dilation=1, groups=2, out_dtype="float64"
    ),
    "relax.nn.max_pool1d": lambda: op.nn.max_pool1d(_ncw(), 3, 2, 1, ceil_mode=True),
    "relax.nn.avg_pool1d": lambda: op.nn.avg_pool1d(_ncw(), 2, 1, (0, 1), count_include_pad=True),
    "relax.nn.adaptive_avg_pool1d": lambda: op.nn.adaptive_avg_pool1d(_ncw(), 4),
    "relax.nn.conv1d_transpose": lambda: op.nn.conv1d_transpose(
        _ncw(), rx.const(np.ones((2, 2, 3), "float32")), strides=2, output_padding=1
    ),
    "relax.nn.conv2d_transpose": lambda: op.nn.conv2d_transpose(
        _nchw(), _iohw(), strides=(2, 1), padding=(1, 0, 0, 1), dilation=2
    ),
    "relax.nn.attention": lambda: op.nn.attention(
        _bsnh(2, 3),
        _bsnh(3, 3),
        _bsnh(3, 2),
        rx.const(np.zeros((1, 2, 3), "float32")),
        scale=0.5,
        causal_mask="BottomRight",
        window_size=2,
    ),
    "relax.nn.attention_var_len": lambda: op.nn.attention_var_len(
        _bsnh(5, 4),
        _bsnh(4, 4),
        _bsnh(4, 3),
        rx.const(np.array([0, 2, 5], "int32")),
        rx.const(np.array(3, "int32")),
        rx.const(np.array([0, 1, 4], "int32")),
        causal_mask="TopLeft",
    ),
    "relax.nn.nll_loss": lambda: op.nn.nll_loss(
        _x(), rx.const(np.array([2, 0], "int64")), _vec(), reduction="sum", ignore_index=1
    ),
    "relax.nn.cross_entropy_with_logits": lambda: op.nn.cross_entropy_with_logits(_x(), _x()),
    "relax.image.resize2d": lambda: op.image.resize2d(
        _nchw(),
        (3, 5),
        method="nearest_neighbor",
        coordinate_transformation_mode="align_corners",
        rounding_method="floor",
        out_dtype="float64",
    ),
    "relax.nn.conv3d": lambda: op.nn.conv3d(
        _ncdhw(), rx.const(np.ones((2, 2, 1, 2, 1), "float32")), strides=(1, 1, 2), padding=1
    ),
    "relax.nn.max_pool3d": lambda: op.nn.max_pool3d(_ncdhw(), 2, 1, (1, 0, 0, 0, 1, 1)),
    "relax.nn.avg_pool3d": lambda: op.nn.avg_pool3d(
        _ncdhw(), (1, 2, 2), ceil_mode=True, count_include_pad=True
    ),
    "relax.nn.adaptive_avg_pool3d": lambda: op.nn.adaptive_avg_pool3d(_ncdhw(), (1, 2, 1)),
    "relax.nn.conv3d_transpose": lambda: op.nn.conv3d_transpose(
        _ncdhw(), rx.const(np.ones((2, 3, 1, 2, 2), "float32")), strides=2, output_padding=1
    ),
    "relax.nn.selu": lambda: op.nn.selu(_x()),
    "relax.nn.pixel_shuffle": lambda: op.nn.pixel_shuffle(_ncdhw(), 1),
}
