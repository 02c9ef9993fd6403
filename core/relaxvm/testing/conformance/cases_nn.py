"""Conformance templates of the nn activations, normalizations and statistics (see :mod:`.cases`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from . import cases_image, cases_nn_attention, cases_nn_conv, cases_nn_loss
from .cases import (
    F32_NORM,
    F32_TRANSCENDENTAL,
    FLOAT,
    FLOAT_INT,
    Arrays,
    Dim,
    OpTemplate,
    Param,
    one_input,
    op,
    random_values,
    row_param,
)

__all__ = ["EXCLUSIONS", "templates"]

#: Edge-value exclusions of these templates, as :data:`.test_edges.EXCLUSIONS`.
EXCLUSIONS: dict[str, dict[str, str]] = {
    # As variance[axis1]-int32 (test_edges): the kernel's int32 sums wrap around where the
    # reference's int64 sums do not, so numpy defines no int32 result to compare with.
    **{
        key: {"int-extremes": "int32 accumulation wraps; the reference's does not"}
        for key in ("std[axis1]-int32", "std[all-keepdims]-int32")
    },
    **cases_nn_conv.EXCLUSIONS,
    **cases_nn_loss.EXCLUSIONS,
    **cases_image.EXCLUSIONS,
}


def _std(axis: int | None, keepdims: bool = False) -> Callable[[np.ndarray], np.ndarray]:
    def ref(x: np.ndarray) -> np.ndarray:
        if x.dtype.kind == "i":
            # The integer variance (both divisions truncate, as variance's), then the
            # truncated root.
            count = x.size if axis is None else x.shape[axis]
            total = x.sum(axis=axis, keepdims=True, dtype=x.dtype)
            mean = np.trunc(total / max(count, 1)).astype(x.dtype)
            sq = ((x - mean) ** 2).sum(axis=axis, keepdims=keepdims, dtype=x.dtype)
            var = sq // count if count else sq
            return np.floor(np.sqrt(var.astype("float64"))).astype(x.dtype)
        return x.std(axis=axis, keepdims=keepdims).astype(x.dtype)

    return ref


def _median(axis: int | None, keepdims: bool = False) -> Callable[..., Any]:
    """The lower median (TVM's and PyTorch's, not numpy's average of the middle two) by a
    stable argsort; a NaN in a line gives NaN at the first NaN; an empty line NaN (or 0)."""

    def ref(x: np.ndarray) -> Any:
        moved = x.reshape(1, x.size) if axis is None else np.moveaxis(x, axis, -1)
        count = moved.shape[-1]
        lines = moved.reshape(math.prod(moved.shape[:-1]), count)
        values = np.empty(lines.shape[0], x.dtype)
        indices = np.zeros(lines.shape[0], "int64")
        for row, line in enumerate(lines):
            if count == 0:
                values[row] = np.nan if x.dtype.kind == "f" else 0
                continue
            nan = np.flatnonzero(np.isnan(line) if x.dtype.kind == "f" else np.zeros(count, bool))
            if len(nan):
                indices[row] = nan[0]
            else:
                indices[row] = np.argsort(line, kind="stable")[(count - 1) // 2]
            values[row] = line[indices[row]]
        if axis is None:
            shape: tuple[int, ...] = (1,) * x.ndim if keepdims else ()
            return values.reshape(shape)
        rest = list(np.moveaxis(x, axis, -1).shape[:-1])
        values, indices = values.reshape(rest), indices.reshape(rest)
        if keepdims:
            values = np.expand_dims(values, axis)
            indices = np.expand_dims(indices, axis)
        return values, indices

    return ref


def _median_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
    x = random_values(rng, (n, 4), dt, "small")
    if n:
        x[0, 1] = x[0, 3]  # ties: the stable order decides the index
    return [x]


def _cumprod_flat_exclusive(x: np.ndarray) -> np.ndarray:
    flat = x.reshape(-1)
    out = np.ones_like(flat)
    if flat.size > 1:
        out[1:] = np.cumprod(flat[:-1], dtype=x.dtype)
    return out


def _leakyrelu(x: np.ndarray, alpha: float = 0.1) -> np.ndarray:
    # The comparison form (not max): NaN takes the scaled branch and stays NaN.
    return np.where(x > 0, x, x * np.asarray(alpha, x.dtype))


def _softplus(x: np.ndarray, beta: float = 2.0, threshold: float = 4.0) -> np.ndarray:
    scaled = x.astype("float64") * beta
    soft = np.log1p(np.exp(scaled)) / beta
    return np.where(scaled > threshold, x, soft).astype(x.dtype)


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    v = x.astype("float64")
    inner = math.sqrt(2 / math.pi) * (v + 0.044715 * v * v * v)
    return (0.5 * v * (1 + np.tanh(inner))).astype(x.dtype)


def _selu(x: np.ndarray) -> np.ndarray:
    v = x.astype("float64")
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    with np.errstate(invalid="ignore", over="ignore"):
        return (scale * np.where(v > 0, v, alpha * (np.exp(v) - 1))).astype(x.dtype)


def _pixel_shuffle(r: int) -> Callable[[np.ndarray], np.ndarray]:
    def ref(x: np.ndarray) -> np.ndarray:
        n, c, h, w = x.shape
        out = x.reshape(n, c // (r * r), r, r, h, w).transpose(0, 1, 4, 2, 5, 3)
        return out.reshape(n, c // (r * r), h * r, w * r)

    return ref


def _prelu_params(d: Dim, dt: str) -> list[Param]:
    return [("x", (d, 3, 2), dt), ("alpha", (3,), dt)]


def _prelu_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
    return [random_values(rng, (n, 3, 2), dt), random_values(rng, (3,), dt, "unit")]


def _prelu(x: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    return np.where(x > 0, x, x * alpha[None, :, None])


def _pad(mode: str, widths: tuple[int, ...], value: float = 0.0) -> Callable[..., Any]:
    pairs = [(widths[i], widths[i + 1]) for i in range(0, len(widths), 2)]

    def ref(x: np.ndarray) -> np.ndarray:
        if mode == "constant":
            fill = np.asarray(value).astype(x.dtype)
            return np.pad(x, pairs, mode="constant", constant_values=fill)
        pad_any: Any = np.pad  # numpy's stubs take the mode as a Literal
        return pad_any(x, pairs, mode=mode)

    return ref


def _norm_params(d: Dim, dt: str) -> list[Param]:
    return [("x", (d, 4, 3), dt), ("gamma", (4,), dt), ("beta", (4,), dt)]


def _norm_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
    return [random_values(rng, (n, 4, 3), dt)] + [random_values(rng, (4,), dt) for _ in "gb"]


def _group_norm(groups: int) -> Callable[..., np.ndarray]:
    """numpy group norm of (n, C, w) data over axis 2 and the channels of each group."""

    def ref(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> np.ndarray:
        n, c, w = x.shape
        v = x.astype("float64").reshape(n, groups, c // groups, w)
        mean = v.mean(axis=(2, 3), keepdims=True)
        var = ((v - mean) ** 2).mean(axis=(2, 3), keepdims=True)
        out = ((v - mean) / np.sqrt(var + 1e-5)).reshape(n, c, w)
        return (out * gamma[:, None] + beta[:, None]).astype(x.dtype)

    return ref


# Edge and reflect pad only the column axis (extent 4): numpy refuses to extend an empty axis,
# and the edge matrix runs every case on an empty leading axis.
_PADS: dict[str, tuple[str, tuple[int, ...], float]] = {
    "constant": ("constant", (1, 2, 0, 3), -1.5),
    "edge": ("edge", (0, 0, 2, 1), 0.0),
    "reflect": ("reflect", (0, 0, 3, 2), 0.0),
}


def templates() -> list[OpTemplate]:
    """The templates of this family."""
    row = one_input(lambda n: (n, 4))
    out = [
        OpTemplate("relax.nn.leakyrelu", "", "nn_act", FLOAT, row_param,
                   lambda d, x: op.nn.leakyrelu(x, alpha=0.1), row, _leakyrelu),
        OpTemplate("relax.nn.softplus", "", "nn_act", FLOAT, row_param,
                   lambda d, x: op.nn.softplus(x, beta=2.0, threshold=4.0), row, _softplus,
                   F32_TRANSCENDENTAL),
        OpTemplate("relax.nn.gelu_tanh", "", "nn_act", FLOAT, row_param,
                   lambda d, x: op.nn.gelu_tanh(x), row, _gelu_tanh, F32_TRANSCENDENTAL),
        OpTemplate("relax.nn.selu", "", "nn_act", FLOAT, row_param,
                   lambda d, x: op.nn.selu(x), row, _selu, F32_TRANSCENDENTAL),
        OpTemplate("relax.nn.pixel_shuffle", "", "nn_act", FLOAT_INT,
                   lambda d, dt: [("x", (d, 8, 2, 3), dt)],
                   lambda d, x: op.nn.pixel_shuffle(x, 2), one_input(lambda n: (n, 8, 2, 3)),
                   _pixel_shuffle(2)),
        OpTemplate("relax.nn.prelu", "", "nn_act", FLOAT, _prelu_params,
                   lambda d, x, a: op.nn.prelu(x, a, axis=1), _prelu_inputs, _prelu),
        OpTemplate("relax.nn.dropout", "", "nn_act", FLOAT_INT, row_param,
                   lambda d, x: op.nn.dropout(x, rate=0.25), row,
                   lambda x: (x, np.ones_like(x))),
        OpTemplate("relax.nn.group_norm", "", "nn_norm", FLOAT, _norm_params,
                   lambda d, x, g, b: op.nn.group_norm(x, g, b, num_groups=2, channel_axis=1,
                                                       axes=[2]),
                   _norm_inputs, _group_norm(2), F32_NORM),
        OpTemplate("relax.nn.instance_norm", "", "nn_norm", FLOAT, _norm_params,
                   lambda d, x, g, b: op.nn.instance_norm(x, g, b, channel_axis=1, axes=[-1]),
                   _norm_inputs, _group_norm(4), F32_NORM),
    ]  # fmt: skip
    small = one_input(lambda n: (n, 4), "small")
    out += [
        OpTemplate("relax.std", "axis1", "nn_stat", FLOAT_INT, row_param,
                   lambda d, x: op.std(x, axis=1), row, _std(1)),
        OpTemplate("relax.std", "all-keepdims", "nn_stat", FLOAT_INT, row_param,
                   lambda d, x: op.std(x, keepdims=True), row, _std(None, keepdims=True)),
        OpTemplate("relax.cumprod", "axis1", "nn_stat", FLOAT_INT, row_param,
                   lambda d, x: op.cumprod(x, axis=1), small,
                   lambda x: np.cumprod(x, axis=1, dtype=x.dtype)),
        OpTemplate("relax.cumprod", "flat-exclusive", "nn_stat", FLOAT_INT, row_param,
                   lambda d, x: op.cumprod(x, exclusive=True), small, _cumprod_flat_exclusive),
    ]  # fmt: skip
    out += [
        OpTemplate("relax.median", "axis1", "nn_stat", FLOAT_INT, row_param,
                   lambda d, x: op.median(x, axis=1), _median_inputs, _median(1)),
        OpTemplate("relax.median", "axis0-keepdims", "nn_stat", FLOAT_INT, row_param,
                   lambda d, x: op.median(x, axis=0, keepdims=True), _median_inputs,
                   _median(0, keepdims=True)),
        OpTemplate("relax.median", "all", "nn_stat", FLOAT_INT, row_param,
                   lambda d, x: op.median(x), _median_inputs, _median(None)),
    ]  # fmt: skip
    for label, (mode, widths, value) in _PADS.items():
        out.append(
            OpTemplate(
                "relax.nn.pad",
                label,
                "nn_pad",
                FLOAT_INT,
                row_param,
                lambda d, x, m=mode, w=widths, v=value: op.nn.pad(x, w, pad_mode=m, pad_value=v),
                row,
                _pad(mode, widths, value),
            )
        )
    # The 1-d convolution/pooling and transposed convolutions have their own module (size).
    return (
        out
        + cases_nn_conv.templates()
        + cases_nn_attention.templates()
        + cases_nn_loss.templates()
        + cases_image.templates()
    )
