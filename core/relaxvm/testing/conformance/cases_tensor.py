"""The second half of the op matrix's case table: reductions, linear algebra and nn, layout and
indexing, impure ops, and a few ops again on rows wide enough for vectorized kernels.

See :mod:`.cases` for what a template is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .cases import (
    F32_NORM,
    F32_TRANSCENDENTAL,
    FLOAT,
    FLOAT_INT,
    Arrays,
    OpTemplate,
    one_input,
    op,
    random_values,
    row_param,
)

__all__ = ["tensor_templates"]

# ---------------------------------------------------------------------------------------------
# Reductions, scans, softmax


def _mean_ref(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind == "i":
        # Integer mean: the sum divided by the count with truncating integer division.
        return np.trunc(x.sum(axis=1) / x.shape[1]).astype(x.dtype)
    return x.mean(axis=1)


def _variance_ref(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind == "i":
        # Integer variance: both divisions by the count truncate (the deviations use the
        # truncated mean).
        mean = np.trunc(x.sum(axis=1, keepdims=True) / x.shape[1]).astype(x.dtype)
        return ((x - mean) ** 2).sum(axis=1, dtype=x.dtype) // x.shape[1]
    return x.var(axis=1)


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _reduction() -> list[OpTemplate]:
    unit = one_input(lambda n: (n, 4), "unit")
    small = one_input(lambda n: (n, 4), "small")
    row = one_input(lambda n: (n, 4))
    return [
        OpTemplate("relax.sum", "axis1", "reduce", FLOAT_INT, row_param,
                   lambda d, x: op.sum(x, axis=1), row, lambda x: x.sum(axis=1, dtype=x.dtype)),
        OpTemplate("relax.sum", "all-keepdims", "reduce", FLOAT_INT, row_param,
                   lambda d, x: op.sum(x, keepdims=True), row,
                   lambda x: x.sum(keepdims=True, dtype=x.dtype)),
        OpTemplate("relax.mean", "axis1", "reduce", FLOAT_INT, row_param,
                   lambda d, x: op.mean(x, axis=1), row, _mean_ref),
        OpTemplate("relax.max", "axis0", "reduce", FLOAT_INT, row_param,
                   lambda d, x: op.max(x, axis=0), row, lambda x: x.max(axis=0)),
        OpTemplate("relax.min", "axis1-keepdims", "reduce", FLOAT_INT, row_param,
                   lambda d, x: op.min(x, axis=1, keepdims=True), row,
                   lambda x: x.min(axis=1, keepdims=True)),
        OpTemplate("relax.prod", "axis1", "reduce", FLOAT_INT, row_param,
                   lambda d, x: op.prod(x, axis=1), small, lambda x: x.prod(axis=1, dtype=x.dtype)),
        OpTemplate("relax.variance", "axis1", "reduce", FLOAT_INT, row_param,
                   lambda d, x: op.variance(x, axis=1), row, _variance_ref),
        OpTemplate("relax.argmax", "axis1", "reduce", FLOAT_INT, row_param,
                   lambda d, x: op.argmax(x, axis=1), unit,
                   lambda x: np.argmax(x, axis=1)),
        OpTemplate("relax.argmin", "all", "reduce", FLOAT_INT, row_param,
                   lambda d, x: op.argmin(x), row, lambda x: np.argmin(x)),
        OpTemplate("relax.cumsum", "axis1", "reduce", FLOAT_INT, row_param,
                   lambda d, x: op.cumsum(x, axis=1), row,
                   lambda x: np.cumsum(x, axis=1, dtype=x.dtype)),
        OpTemplate("relax.nn.softmax", "", "reduce", FLOAT, row_param,
                   lambda d, x: op.nn.softmax(x, axis=-1), row, _softmax, F32_TRANSCENDENTAL),
        OpTemplate("relax.nn.log_softmax", "", "reduce", FLOAT, row_param,
                   lambda d, x: op.nn.log_softmax(x, axis=-1), row,
                   lambda x: np.log(_softmax(x.astype("float64"))), F32_TRANSCENDENTAL),
    ]  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Linear algebra and nn


def _norm(x: np.ndarray, axis: int = -1) -> np.ndarray:
    x = x.astype("float64")
    mean = x.mean(axis=axis, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axis=axis, keepdims=True) + 1e-5)


def _conv_ref(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """3x3 convolution, stride 1, padding 1 (NCHW, OIHW), accumulated in float64 (exact for
    the small integers used)."""
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    n, _, h, wd = x.shape
    out = np.zeros((n, w.shape[0], h, wd), dtype=np.float64)
    for ky in range(3):
        for kx in range(3):
            patch = xp[:, :, ky:ky + h, kx:kx + wd]  # fmt: skip
            out += np.einsum("nchw,oc->nohw", patch.astype("float64"), w[:, :, ky, kx])
    return out if x.dtype.kind == "f" else out.astype(x.dtype)


def _pool_ref(x: np.ndarray, kind: str) -> np.ndarray:
    n, c, h, w = x.shape
    windows = x.reshape(n, c, h // 2, 2, w // 2, 2)
    if kind == "max":
        return windows.max(axis=(3, 5))
    if x.dtype.kind == "i":
        # Integer average pooling floors the window sum divided by the count.
        return windows.sum(axis=(3, 5), dtype=x.dtype) // 4
    return windows.astype("float64").mean(axis=(3, 5))


def _padded_avg_ref(x: np.ndarray, include_pad: bool) -> np.ndarray:
    """avg_pool2d, 2 x 2 windows, stride 2, one row/column of padding on every side."""
    n, c, h, w = x.shape
    # Integer windows sum in the data's own type, wrapping as the kernels do.
    padded = np.zeros((n, c, h + 2, w + 2), x.dtype if x.dtype.kind == "i" else "float64")
    padded[:, :, 1:-1, 1:-1] = x
    inside = np.zeros((h + 2, w + 2))
    inside[1:-1, 1:-1] = 1
    sums = padded.reshape(n, c, h // 2 + 1, 2, w // 2 + 1, 2).sum(axis=(3, 5), dtype=padded.dtype)
    counts = inside.reshape(h // 2 + 1, 2, w // 2 + 1, 2).sum(axis=(1, 3))
    divisor = np.full_like(counts, 4) if include_pad else counts
    if x.dtype.kind == "i":
        # Integer average pooling floors the window sum divided by the count.
        return np.floor_divide(sums.astype(x.dtype), divisor.astype(x.dtype))
    return sums / divisor


def _linalg_nn() -> list[OpTemplate]:
    def rows(*shapes: tuple[int, ...], kind: str = "") -> Callable[..., Arrays]:
        return lambda rng, n, dt: (
            [random_values(rng, (n, *shapes[0]), dt, kind)]
            + [random_values(rng, s, dt, kind) for s in shapes[1:]]
        )

    return [
        OpTemplate("relax.matmul", "", "linalg", FLOAT_INT,
                   lambda d, dt: [("a", (d, 3), dt), ("b", (3, 4), dt)],
                   lambda d, a, b: op.matmul(a, b), rows((3,), (3, 4)), np.matmul),
        OpTemplate("relax.matmul", "batched", "linalg", FLOAT_INT,
                   lambda d, dt: [("a", (d, 2, 3), dt), ("b", (3, 2), dt)],
                   lambda d, a, b: op.matmul(a, b), rows((2, 3), (3, 2)), np.matmul),
        OpTemplate("relax.linear", "", "linalg", FLOAT_INT,
                   lambda d, dt: [("x", (d, 3), dt), ("w", (4, 3), dt), ("b", (4,), dt)],
                   lambda d, x, w, b: op.linear(x, w, b), rows((3,), (4, 3), (4,)),
                   lambda x, w, b: x @ w.T + b),
        OpTemplate("relax.nn.layer_norm", "", "nn", FLOAT,
                   lambda d, dt: [("x", (d, 4), dt), ("g", (4,), dt), ("b", (4,), dt)],
                   lambda d, x, g, b: op.nn.layer_norm(x, g, b, axes=-1),
                   rows((4,), (4,), (4,)), lambda x, g, b: _norm(x) * g + b, F32_NORM),
        OpTemplate("relax.nn.rms_norm", "", "nn", FLOAT,
                   lambda d, dt: [("x", (d, 4), dt), ("w", (4,), dt)],
                   lambda d, x, w: op.nn.rms_norm(x, w), rows((4,), (4,)),
                   lambda x, w: x / np.sqrt((x.astype("float64") ** 2).mean(-1, keepdims=True)
                                            + 1e-5) * w, F32_NORM),
        OpTemplate("relax.nn.batch_norm", "", "nn", FLOAT,
                   lambda d, dt: [("x", (d, 3, 2, 2), dt)] + [(k, (3,), dt) for k in "gbmv"],
                   lambda d, *a: op.nn.batch_norm(*a), _batch_norm_inputs, _batch_norm_ref,
                   F32_NORM),
        OpTemplate("relax.nn.conv2d", "", "nn", FLOAT_INT,
                   lambda d, dt: [("x", (d, 2, 4, 4), dt), ("w", (3, 2, 3, 3), dt)],
                   lambda d, x, w: op.nn.conv2d(x, w, padding=1),
                   rows((2, 4, 4), (3, 2, 3, 3), kind="small"), _conv_ref),
        OpTemplate("relax.nn.conv2d", "nhwc", "nn", FLOAT_INT,
                   lambda d, dt: [("x", (d, 4, 4, 2), dt), ("w", (3, 3, 2, 3), dt)],
                   lambda d, x, w: op.nn.conv2d(x, w, padding=1, data_layout="NHWC",
                                                kernel_layout="HWIO"),
                   rows((4, 4, 2), (3, 3, 2, 3), kind="small"),
                   lambda x, w: _conv_ref(x.transpose(0, 3, 1, 2),
                                          w.transpose(3, 2, 0, 1)).transpose(0, 2, 3, 1)),
        OpTemplate("relax.nn.max_pool2d", "nhwc", "nn", FLOAT_INT,
                   lambda d, dt: [("x", (d, 4, 4, 2), dt)],
                   lambda d, x: op.nn.max_pool2d(x, pool_size=2, strides=2, layout="NHWC"),
                   rows((4, 4, 2)),
                   lambda x: _pool_ref(x.transpose(0, 3, 1, 2), "max").transpose(0, 2, 3, 1)),
        OpTemplate("relax.nn.max_pool2d", "", "nn", FLOAT_INT,
                   lambda d, dt: [("x", (d, 2, 4, 4), dt)],
                   lambda d, x: op.nn.max_pool2d(x, pool_size=2, strides=2),
                   rows((2, 4, 4)), lambda x: _pool_ref(x, "max")),
        OpTemplate("relax.nn.avg_pool2d", "", "nn", FLOAT_INT,
                   lambda d, dt: [("x", (d, 2, 4, 4), dt)],
                   lambda d, x: op.nn.avg_pool2d(x, pool_size=2, strides=2),
                   rows((2, 4, 4)), lambda x: _pool_ref(x, "avg")),
        OpTemplate("relax.nn.avg_pool2d", "pad-include", "nn", FLOAT_INT,
                   lambda d, dt: [("x", (d, 2, 4, 4), dt)],
                   lambda d, x: op.nn.avg_pool2d(x, 2, 2, padding=1, count_include_pad=True),
                   rows((2, 4, 4)), lambda x: _padded_avg_ref(x, True)),
        OpTemplate("relax.nn.avg_pool2d", "pad-exclude", "nn", FLOAT_INT,
                   lambda d, dt: [("x", (d, 2, 4, 4), dt)],
                   lambda d, x: op.nn.avg_pool2d(x, 2, 2, padding=1),
                   rows((2, 4, 4)), lambda x: _padded_avg_ref(x, False)),
        OpTemplate("relax.nn.adaptive_avg_pool2d", "", "nn", FLOAT_INT,
                   lambda d, dt: [("x", (d, 2, 4, 4), dt)],
                   lambda d, x: op.nn.adaptive_avg_pool2d(x, 2),
                   rows((2, 4, 4)), lambda x: _pool_ref(x, "avg")),
    ]  # fmt: skip


def _batch_norm_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
    x = random_values(rng, (n, 3, 2, 2), dt)
    g, b, m = (random_values(rng, (3,), dt) for _ in range(3))
    return [x, g, b, m, random_values(rng, (3,), dt, "pos")]


def _batch_norm_ref(x: np.ndarray, g: Any, b: Any, m: Any, v: Any) -> np.ndarray:
    c = (slice(None), None, None)
    return (x - m[c]) / np.sqrt(v[c].astype("float64") + 1e-5) * g[c] + b[c]


# ---------------------------------------------------------------------------------------------
# Layout and indexing


def _manipulate() -> list[OpTemplate]:
    row = one_input(lambda n: (n, 4))
    three = one_input(lambda n: (n, 1, 4))
    return [
        OpTemplate("relax.reshape", "", "layout", FLOAT_INT, row_param,
                   lambda d, x: op.reshape(x, (d * 2, 2)), row, lambda x: x.reshape(-1, 2)),
        OpTemplate("relax.flatten", "", "layout", FLOAT_INT, row_param,
                   lambda d, x: op.flatten(x), row, lambda x: x.reshape(-1)),
        OpTemplate("relax.expand_dims", "", "layout", FLOAT_INT, row_param,
                   lambda d, x: op.expand_dims(x, [0, -1]), row, lambda x: x[None, ..., None]),
        OpTemplate("relax.squeeze", "", "layout", FLOAT_INT,
                   lambda d, dt: [("x", (d, 1, 4), dt)], lambda d, x: op.squeeze(x, 1), three,
                   lambda x: x.squeeze(1)),
        OpTemplate("relax.permute_dims", "", "layout", FLOAT_INT,
                   lambda d, dt: [("x", (d, 1, 4), dt)],
                   lambda d, x: op.permute_dims(x, [2, 0, 1]), three,
                   lambda x: x.transpose(2, 0, 1)),
        OpTemplate("relax.broadcast_to", "", "layout", FLOAT_INT,
                   lambda d, dt: [("x", (d, 1), dt)], lambda d, x: op.broadcast_to(x, (2, d, 4)),
                   one_input(lambda n: (n, 1)), lambda x: np.broadcast_to(x, (2, x.shape[0], 4))),
        OpTemplate("relax.concat", "", "layout", FLOAT_INT,
                   lambda d, dt: [("a", (d, 4), dt), ("b", (2, 4), dt)],
                   lambda d, a, b: op.concat([a, b], axis=0), _concat_inputs,
                   lambda a, b: np.concatenate([a, b], axis=0)),
        OpTemplate("relax.split", "", "layout", FLOAT_INT, row_param,
                   lambda d, x: op.split(x, [1, 3], axis=1), row,
                   lambda x: tuple(np.split(x, [1, 3], axis=1))),
        OpTemplate("relax.strided_slice", "", "layout", FLOAT_INT, row_param,
                   lambda d, x: op.strided_slice(x, [0, 1], [0, 3], [100, 0], [2, -1]), row,
                   lambda x: x[0:100:2, 3:0:-1]),
        OpTemplate("relax.take", "", "layout", FLOAT_INT,
                   lambda d, dt: [("x", (d, 4), dt), ("i", (3,), "int64")],
                   lambda d, x, i: op.take(x, i, axis=1), _take_inputs,
                   lambda x, i: np.take(x, i, axis=1)),
    ]  # fmt: skip


def _concat_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
    return [random_values(rng, (n, 4), dt), random_values(rng, (2, 4), dt)]


def _take_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
    return [random_values(rng, (n, 4), dt), np.array([3, 0, -1], dtype="int64")]


# ---------------------------------------------------------------------------------------------
# Impure ops: run for their effect, the function returns its first parameter.


def _structural() -> list[OpTemplate]:
    row = one_input(lambda n: (n, 4))
    return [
        OpTemplate("relax.print", "", "impure", FLOAT_INT, row_param,
                   lambda d, x: op.print(x, format="matrix print"), row, lambda x: x),
        OpTemplate("relax.assert_op", "", "impure", ("bool",),
                   lambda d, dt: [("x", (d, 4), "float32"), ("c", (), "bool")],
                   lambda d, x, c: op.assert_op(c, [x], format="matrix assert {}"),
                   _assert_inputs, lambda x, c: x),
    ]  # fmt: skip


def _assert_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
    return [random_values(rng, (n, 4), "float32"), np.array(True)]


# ---------------------------------------------------------------------------------------------
# Wide rows: the tiny shapes above fit in one vector register, so a few ops also run on rows
# long enough for the native targets' vectorized loop bodies, remainders and blocked tiles.

WIDE = 37  # prime: never a multiple of a vector width, so a remainder loop always runs


def _wide() -> list[OpTemplate]:
    row = one_input(lambda n: (n, WIDE))
    wide = lambda d, dt: [("x", (d, WIDE), dt)]  # noqa: E731
    return [
        OpTemplate("relax.add", "wide", "wide", FLOAT_INT,
                   lambda d, dt: [("a", (d, WIDE), dt), ("b", (WIDE,), dt)],
                   lambda d, a, b: op.add(a, b),
                   lambda rng, n, dt: [random_values(rng, (n, WIDE), dt), random_values(rng, (WIDE,), dt)],
                   np.add),
        OpTemplate("relax.exp", "wide", "wide", FLOAT, wide, lambda d, x: op.exp(x), row, np.exp,
                   F32_TRANSCENDENTAL),
        # A 37-term float32 sum, possibly reassociated: a few ulps of the partial sums.
        OpTemplate("relax.sum", "wide", "wide", FLOAT_INT, wide, lambda d, x: op.sum(x, axis=1),
                   row, lambda x: x.astype("float64").sum(axis=1).astype(x.dtype), (1e-5, 1e-4)),
        OpTemplate("relax.nn.softmax", "wide", "wide", FLOAT, wide,
                   lambda d, x: op.nn.softmax(x), row, _softmax, F32_TRANSCENDENTAL),
        OpTemplate("relax.matmul", "wide", "wide", FLOAT_INT,
                   lambda d, dt: [("a", (d, WIDE), dt), ("b", (WIDE, 19), dt)],
                   lambda d, a, b: op.matmul(a, b),
                   lambda rng, n, dt: [random_values(rng, (n, WIDE), dt, "small"),
                                       random_values(rng, (WIDE, 19), dt, "small")],
                   lambda a, b: (a.astype("float64") @ b).astype(a.dtype), (1e-5, 1e-4)),
    ]  # fmt: skip


def tensor_templates() -> list[OpTemplate]:
    """The templates of this half of the table."""
    return _reduction() + _linalg_nn() + _manipulate() + _structural() + _wide()
