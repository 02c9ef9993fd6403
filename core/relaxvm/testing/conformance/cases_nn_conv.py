"""Conformance templates of the 1-d convolution and pooling and the transposed convolutions
(see :mod:`.cases`), with direct-loop numpy references accumulated in float64."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .cases import FLOAT_INT, Arrays, OpTemplate, op, random_values

__all__ = ["EXCLUSIONS", "templates"]

_WIDENED = (
    "the reference accumulates in float64 and casts back, where the kernel accumulates in "
    "int32 with wrap-around: numpy defines no int32 result to compare with"
)

#: Edge-value exclusions of these templates, as :data:`.test_edges.EXCLUSIONS`.
EXCLUSIONS: dict[str, dict[str, str]] = {
    key: {"int-extremes": _WIDENED}
    for key in (
        "nn.conv1d[pad-stride]-int32",
        "nn.conv1d[groups-dilation]-int32",
        "nn.conv1d_transpose[stride-outpad]-int32",
        "nn.conv2d_transpose[groups]-int32",
        "nn.avg_pool1d[pad-include]-int32",
        "nn.avg_pool1d[ceil]-int32",
        "nn.adaptive_avg_pool1d-int32",
        "nn.conv3d[pad-stride-groups]-int32",
        "nn.avg_pool3d[pad-include]-int32",
        "nn.avg_pool3d[pad]-int32",
        "nn.adaptive_avg_pool3d-int32",
        "nn.conv3d_transpose[stride-pad]-int32",
    )
}


def _back(out: np.ndarray, like: np.ndarray) -> np.ndarray:
    return out if like.dtype.kind == "f" else out.astype(like.dtype)


def conv_nd(
    x: np.ndarray,
    w: np.ndarray,
    strides: tuple[int, ...],
    pads: tuple[int, ...],
    dilation: tuple[int, ...],
    groups: int = 1,
) -> np.ndarray:
    """N-d convolution of channel-first ``x`` with an OI... ``w``; pads are (begin..., end...)."""
    rank = x.ndim - 2
    widths = [(0, 0), (0, 0)] + [(pads[a], pads[rank + a]) for a in range(rank)]
    xp = np.pad(x.astype("float64"), widths)
    o, ci = w.shape[:2]
    kernel = w.shape[2:]
    out_sizes = [
        (xp.shape[2 + a] - dilation[a] * (kernel[a] - 1) - 1) // strides[a] + 1 for a in range(rank)
    ]
    out = np.zeros((x.shape[0], o, *out_sizes))
    per_group = o // groups
    for k in np.ndindex(*kernel):
        window = tuple(
            slice(k[a] * dilation[a], k[a] * dilation[a] + strides[a] * (out_sizes[a] - 1) + 1,
                  strides[a])
            for a in range(rank)
        )  # fmt: skip
        for g in range(groups):
            patch_index = (slice(None), slice(g * ci, (g + 1) * ci), *window)
            weight_index = (slice(g * per_group, (g + 1) * per_group), slice(None), *k)
            patch, wk = xp[patch_index], w[weight_index].astype("float64")
            out[:, g * per_group : (g + 1) * per_group] += np.einsum("nc...,oc->no...", patch, wk)
    return _back(out, x)


def conv_transpose_nd(
    x: np.ndarray,
    w: np.ndarray,
    strides: tuple[int, ...],
    pads: tuple[int, ...],
    output_padding: tuple[int, ...],
    dilation: tuple[int, ...],
    groups: int = 1,
) -> np.ndarray:
    """N-d transposed convolution (the scatter form) of ``x`` with an IO... ``w``."""
    rank = x.ndim - 2
    c, per_group = w.shape[:2]
    kernel = w.shape[2:]
    ci = c // groups
    full = [
        (x.shape[2 + a] - 1) * strides[a] + dilation[a] * (kernel[a] - 1) + 1 + output_padding[a]
        for a in range(rank)
    ]
    out = np.zeros((x.shape[0], per_group * groups, *full))
    for k in np.ndindex(*kernel):
        window = tuple(
            slice(k[a] * dilation[a], k[a] * dilation[a] + strides[a] * (x.shape[2 + a] - 1) + 1,
                  strides[a])
            for a in range(rank)
        )  # fmt: skip
        for g in range(groups):
            xs = x[:, g * ci : (g + 1) * ci].astype("float64")
            weight_index = (slice(g * ci, (g + 1) * ci), slice(None), *k)
            wk = w[weight_index].astype("float64")
            target = (slice(None), slice(g * per_group, (g + 1) * per_group), *window)
            out[target] += np.einsum("nc...,co->no...", xs, wk)
    crop = tuple(slice(pads[a], full[a] - pads[rank + a]) for a in range(rank))
    kept = (slice(None), slice(None), *crop)
    return _back(out[kept], x)


def _pool1d(
    kind: str, size: int, stride: int, pads: tuple[int, int], ceil: bool, include: bool
) -> Callable[[np.ndarray], np.ndarray]:
    def ref(x: np.ndarray) -> np.ndarray:
        n, c, w = x.shape
        left, right = pads
        numer = w + left + right - size
        out_w = (numer + (stride - 1 if ceil else 0)) // stride + 1
        out = np.empty((n, c, out_w), "float64" if kind == "avg" else x.dtype)
        for j in range(out_w):
            lo, hi = j * stride - left, j * stride - left + size
            cols = [i for i in range(lo, hi) if 0 <= i < w]
            if kind == "max":
                out[:, :, j] = x[:, :, cols].max(axis=2)
                continue
            total = x[:, :, cols].astype("float64").sum(axis=2)
            count = (
                len([i for i in range(lo, hi) if -left <= i < w + right]) if include else len(cols)
            )
            if x.dtype.kind == "i":
                out[:, :, j] = np.floor(total / max(count, 1))
            else:
                out[:, :, j] = total / max(count, 1)
        return _back(out, x)

    return ref


def _pool3d(
    kind: str, size: int, stride: int, pads: tuple[int, ...], include: bool
) -> Callable[[np.ndarray], np.ndarray]:
    """Cubic windows, floor mode; pads are (begin..., end...) per spatial axis."""

    def ref(x: np.ndarray) -> np.ndarray:
        spatial = x.shape[2:]
        outs = [(spatial[a] + pads[a] + pads[3 + a] - size) // stride + 1 for a in range(3)]
        out = np.empty((*x.shape[:2], *outs), "float64" if kind == "avg" else x.dtype)
        for pos in np.ndindex(*outs):
            lows = [pos[a] * stride - pads[a] for a in range(3)]
            window = tuple(
                slice(max(lo, 0), min(lo + size, spatial[a])) for a, lo in enumerate(lows)
            )
            block_at = (slice(None), slice(None), *window)
            block = x[block_at]
            at = (slice(None), slice(None), *pos)
            if kind == "max":
                out[at] = block.max(axis=(2, 3, 4))
                continue
            total = block.astype("float64").sum(axis=(2, 3, 4))
            if include:
                count = 1
                for a, lo in enumerate(lows):
                    count *= min(lo + size, spatial[a] + pads[3 + a]) - max(lo, -pads[a])
            else:
                count = int(np.prod([w.stop - w.start for w in window]))
            out[at] = np.floor(total / count) if x.dtype.kind == "i" else total / count
        return _back(out, x)

    return ref


def _adaptive3d(sizes: tuple[int, int, int]) -> Callable[[np.ndarray], np.ndarray]:
    def ref(x: np.ndarray) -> np.ndarray:
        spatial = x.shape[2:]
        out = np.empty((*x.shape[:2], *sizes))
        for pos in np.ndindex(*sizes):
            window = tuple(
                slice(p * spatial[a] // sizes[a], -(-(p + 1) * spatial[a] // sizes[a]))
                for a, p in enumerate(pos)
            )
            block_at = (slice(None), slice(None), *window)
            block = x[block_at].astype("float64")
            mean = block.sum(axis=(2, 3, 4)) / int(np.prod([w.stop - w.start for w in window]))
            at = (slice(None), slice(None), *pos)
            out[at] = np.floor(mean) if x.dtype.kind == "i" else mean
        return _back(out, x)

    return ref


def _adaptive1d(size: int) -> Callable[[np.ndarray], np.ndarray]:
    def ref(x: np.ndarray) -> np.ndarray:
        w = x.shape[2]
        out = np.empty((*x.shape[:2], size))
        for j in range(size):
            lo, hi = j * w // size, -(-(j + 1) * w // size)
            total = x[:, :, lo:hi].astype("float64").sum(axis=2)
            out[:, :, j] = np.floor(total / (hi - lo)) if x.dtype.kind == "i" else total / (hi - lo)
        return _back(out, x)

    return ref


def _rows(*shapes: tuple[int, ...], kind: str = "") -> Callable[..., Arrays]:
    return lambda rng, n, dt: (
        [random_values(rng, (n, *shapes[0]), dt, kind)]
        + [random_values(rng, s, dt, kind) for s in shapes[1:]]
    )


def templates() -> list[OpTemplate]:
    """The templates of this family."""
    x1 = (4, 7)
    return [
        OpTemplate("relax.nn.conv1d", "pad-stride", "nn_conv", FLOAT_INT,
                   lambda d, dt: [("x", (d, *x1), dt), ("w", (3, 4, 3), dt)],
                   lambda d, x, w: op.nn.conv1d(x, w, strides=2, padding=(1, 2)),
                   _rows(x1, (3, 4, 3), kind="small"),
                   lambda x, w: conv_nd(x, w, (2,), (1, 2), (1,))),
        OpTemplate("relax.nn.conv1d", "groups-dilation", "nn_conv", FLOAT_INT,
                   lambda d, dt: [("x", (d, *x1), dt), ("w", (6, 2, 2), dt)],
                   lambda d, x, w: op.nn.conv1d(x, w, dilation=2, groups=2),
                   _rows(x1, (6, 2, 2), kind="small"),
                   lambda x, w: conv_nd(x, w, (1,), (0, 0), (2,), groups=2)),
        OpTemplate("relax.nn.conv1d_transpose", "stride-outpad", "nn_conv", FLOAT_INT,
                   lambda d, dt: [("x", (d, *x1), dt), ("w", (4, 3, 3), dt)],
                   lambda d, x, w: op.nn.conv1d_transpose(x, w, strides=2, padding=(1, 2),
                                                          output_padding=1, dilation=2),
                   _rows(x1, (4, 3, 3), kind="small"),
                   lambda x, w: conv_transpose_nd(x, w, (2,), (1, 2), (1,), (2,))),
        OpTemplate("relax.nn.conv2d_transpose", "groups", "nn_conv", FLOAT_INT,
                   lambda d, dt: [("x", (d, 4, 3, 4), dt), ("w", (4, 1, 3, 2), dt)],
                   lambda d, x, w: op.nn.conv2d_transpose(x, w, strides=(2, 1), padding=(1, 0),
                                                          groups=2),
                   _rows((4, 3, 4), (4, 1, 3, 2), kind="small"),
                   lambda x, w: conv_transpose_nd(x, w, (2, 1), (1, 0, 1, 0), (0, 0), (1, 1), 2)),
        OpTemplate("relax.nn.conv3d_transpose", "stride-pad", "nn_conv", FLOAT_INT,
                   lambda d, dt: [("x", (d, 2, 2, 3, 2), dt), ("w", (2, 3, 2, 2, 2), dt)],
                   lambda d, x, w: op.nn.conv3d_transpose(x, w, strides=(2, 1, 2), padding=1),
                   _rows((2, 2, 3, 2), (2, 3, 2, 2, 2), kind="small"),
                   lambda x, w: conv_transpose_nd(x, w, (2, 1, 2), (1,) * 6, (0,) * 3, (1,) * 3)),
        OpTemplate("relax.nn.max_pool1d", "pad-ceil", "nn_conv", FLOAT_INT,
                   lambda d, dt: [("x", (d, *x1), dt)],
                   lambda d, x: op.nn.max_pool1d(x, 3, 2, (1, 0), ceil_mode=True),
                   _rows(x1), _pool1d("max", 3, 2, (1, 0), True, False)),
        OpTemplate("relax.nn.avg_pool1d", "pad-include", "nn_conv", FLOAT_INT,
                   lambda d, dt: [("x", (d, *x1), dt)],
                   lambda d, x: op.nn.avg_pool1d(x, 3, 2, 1, count_include_pad=True),
                   _rows(x1), _pool1d("avg", 3, 2, (1, 1), False, True)),
        OpTemplate("relax.nn.avg_pool1d", "ceil", "nn_conv", FLOAT_INT,
                   lambda d, dt: [("x", (d, *x1), dt)],
                   lambda d, x: op.nn.avg_pool1d(x, 2, 2, (1, 0), ceil_mode=True),
                   _rows(x1), _pool1d("avg", 2, 2, (1, 0), True, False)),
        OpTemplate("relax.nn.adaptive_avg_pool1d", "", "nn_conv", FLOAT_INT,
                   lambda d, dt: [("x", (d, *x1), dt)],
                   lambda d, x: op.nn.adaptive_avg_pool1d(x, 3),
                   _rows(x1), _adaptive1d(3)),
        *_templates3d(),
    ]  # fmt: skip


def _templates3d() -> list[OpTemplate]:
    x3 = (2, 3, 4, 3)
    return [
        OpTemplate("relax.nn.conv3d", "pad-stride-groups", "nn_conv", FLOAT_INT,
                   lambda d, dt: [("x", (d, *x3), dt), ("w", (4, 1, 2, 3, 2), dt)],
                   lambda d, x, w: op.nn.conv3d(x, w, strides=(1, 2, 1), padding=1, groups=2),
                   _rows(x3, (4, 1, 2, 3, 2), kind="small"),
                   lambda x, w: conv_nd(x, w, (1, 2, 1), (1,) * 6, (1, 1, 1), groups=2)),
        OpTemplate("relax.nn.max_pool3d", "pad", "nn_conv", FLOAT_INT,
                   lambda d, dt: [("x", (d, *x3), dt)],
                   lambda d, x: op.nn.max_pool3d(x, 2, 1, (1, 0, 0, 0, 1, 1)),
                   _rows(x3), _pool3d("max", 2, 1, (1, 0, 0, 0, 1, 1), False)),
        OpTemplate("relax.nn.avg_pool3d", "pad-include", "nn_conv", FLOAT_INT,
                   lambda d, dt: [("x", (d, *x3), dt)],
                   lambda d, x: op.nn.avg_pool3d(x, 2, 2, 1, count_include_pad=True),
                   _rows(x3), _pool3d("avg", 2, 2, (1,) * 6, True)),
        OpTemplate("relax.nn.avg_pool3d", "pad", "nn_conv", FLOAT_INT,
                   lambda d, dt: [("x", (d, *x3), dt)],
                   lambda d, x: op.nn.avg_pool3d(x, 2, 2, 1),
                   _rows(x3), _pool3d("avg", 2, 2, (1,) * 6, False)),
        OpTemplate("relax.nn.adaptive_avg_pool3d", "", "nn_conv", FLOAT_INT,
                   lambda d, dt: [("x", (d, *x3), dt)],
                   lambda d, x: op.nn.adaptive_avg_pool3d(x, (2, 3, 2)),
                   _rows(x3), _adaptive3d((2, 3, 2))),
    ]  # fmt: skip
