"""Conformance templates of ``relax.image.resize2d`` (see :mod:`.cases`), with a numpy
reference of the coordinate mapping, rounding, clamping and bilinear blend."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .cases import FLOAT, FLOAT_INT, OpTemplate, Param, one_input, op

__all__ = ["EXCLUSIONS", "resize2d_ref", "templates"]

_BLEND = (
    "the bilinear blend a * (1 - t) + b * t meets inf * 0 where a weight is 0; the llvm "
    "target may contract or reassociate it (fastmath, docs/llvm_target.md), so which "
    "non-finite results appear depends on the evaluation order"
)

#: Edge-value exclusions of these templates, as :data:`.test_edges.EXCLUSIONS`.
EXCLUSIONS: dict[str, dict[str, str]] = {
    f"image.resize2d[{label}]-float32": {"inf": _BLEND}
    for label in ("linear-half", "linear-corners", "linear-asym-down", "linear-crop")
}

_IN = (2, 3, 5)


def _coords(
    out_size: int, in_size: int, mode: str, roi: tuple[float, float] = (0.0, 0.0)
) -> np.ndarray:
    o = np.arange(out_size, dtype="float64")
    scale = in_size / out_size
    if mode == "asymmetric":
        return o * scale
    if mode == "tf_half_pixel_for_nn":
        return (o + 0.5) * scale
    if mode == "tf_crop_and_resize":
        start, end = roi
        if out_size == 1:
            return np.full(1, 0.5 * (start + end) * (in_size - 1))
        return start * (in_size - 1) + o * (end - start) * (in_size - 1) / (out_size - 1)
    if mode == "align_corners":
        return o * (in_size - 1) / (out_size - 1) if out_size > 1 else np.zeros(out_size)
    if mode == "pytorch_half_pixel" and out_size == 1:
        return np.zeros(1)
    return (o + 0.5) * scale - 0.5


def _round(coord: np.ndarray, rounding: str) -> np.ndarray:
    table: dict[str, Callable[[np.ndarray], np.ndarray]] = {
        "round": np.round,
        "": lambda c: np.ceil(c - 0.5),
        "round_prefer_floor": lambda c: np.ceil(c - 0.5),
        "round_prefer_ceil": lambda c: np.floor(c + 0.5),
        "floor": lambda c: np.floor(c + 1e-5),
        "ceil": lambda c: np.ceil(c - 1e-5),
    }
    return table[rounding](coord).astype("int64")


def _cubic_weights(t: np.ndarray, alpha: float) -> list[np.ndarray]:
    def near(d: np.ndarray) -> np.ndarray:
        return ((alpha + 2) * d - (alpha + 3)) * d * d + 1

    def far(d: np.ndarray) -> np.ndarray:
        return ((alpha * d - 5 * alpha) * d + 8 * alpha) * d - 4 * alpha

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _cubic(
    x: np.ndarray, fy: np.ndarray, fx: np.ndarray, alpha: float, exclude: bool
) -> np.ndarray:
    h, w = x.shape[2:]
    y0, x0 = np.floor(fy), np.floor(fx)
    wy, wx = _cubic_weights(fy - y0, alpha), _cubic_weights(fx - x0, alpha)
    iy = [y0.astype("int64") + k - 1 for k in range(4)]
    ix = [x0.astype("int64") + k - 1 for k in range(4)]
    if exclude:
        wy = [np.where((i >= 0) & (i < h), wk, 0.0) for i, wk in zip(iy, wy, strict=True)]
        wx = [np.where((i >= 0) & (i < w), wk, 0.0) for i, wk in zip(ix, wx, strict=True)]
        wy = [wk / sum(wy) for wk in wy]
        wx = [wk / sum(wx) for wk in wx]
    out = np.zeros((*x.shape[:2], len(fy), len(fx)), "float64")
    for dy in range(4):
        for dx in range(4):
            rows, cols = np.clip(iy[dy], 0, h - 1), np.clip(ix[dx], 0, w - 1)
            weight = wy[dy][:, None] * wx[dx][None, :]
            out += weight * x[:, :, rows[:, None], cols[None, :]]
    return out.astype(x.dtype)


def resize2d_ref(
    x: np.ndarray,
    size: tuple[int, int],
    method: str,
    mode: str,
    rounding: str = "round",
    roi: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0),
    cubic_alpha: float = -0.75,
    cubic_exclude: bool = False,
    extrapolation_value: float = 0.0,
) -> np.ndarray:
    """numpy ``image.resize2d`` of NCHW ``x`` to ``size``."""
    h, w = x.shape[2:]
    fy = _coords(size[0], h, mode, (roi[0], roi[2]))
    fx = _coords(size[1], w, mode, (roi[1], roi[3]))
    if mode == "tf_crop_and_resize":
        result = _sample(x, fy, fx, method, rounding, cubic_alpha, cubic_exclude)
        outside = ((fy < 0) | (fy > h - 1))[:, None] | ((fx < 0) | (fx > w - 1))[None, :]
        return np.where(outside, x.dtype.type(extrapolation_value), result)
    return _sample(x, fy, fx, method, rounding, cubic_alpha, cubic_exclude)


def _sample(
    x: np.ndarray,
    fy: np.ndarray,
    fx: np.ndarray,
    method: str,
    rounding: str,
    cubic_alpha: float,
    cubic_exclude: bool,
) -> np.ndarray:
    h, w = x.shape[2:]
    if method == "cubic":
        return _cubic(x, fy, fx, cubic_alpha, cubic_exclude)
    if method == "nearest_neighbor":
        iy = np.clip(_round(fy, rounding), 0, h - 1)
        ix = np.clip(_round(fx, rounding), 0, w - 1)
        return x[:, :, iy[:, None], ix[None, :]]
    y0, x0 = np.floor(fy), np.floor(fx)
    ty = (fy - y0).astype(x.dtype)[:, None]
    tx = (fx - x0).astype(x.dtype)[None, :]
    one = x.dtype.type(1)

    def pixel(dy: int, dx: int) -> np.ndarray:
        iy = np.clip(y0.astype("int64") + dy, 0, h - 1)
        ix = np.clip(x0.astype("int64") + dx, 0, w - 1)
        return x[:, :, iy[:, None], ix[None, :]]

    with np.errstate(invalid="ignore", over="ignore"):
        top = pixel(0, 0) * (one - tx) + pixel(0, 1) * tx
        bottom = pixel(1, 0) * (one - tx) + pixel(1, 1) * tx
        return top * (one - ty) + bottom * ty


#: (label, output size, method, resize2d keyword arguments; "mode" is the coordinate mode).
_EXTRA_VARIANTS: list[tuple[str, tuple[int, int], str, dict[str, Any]]] = [
    ("cubic-exclude-tf-alpha", (4, 9), "cubic", {"cubic_alpha": -0.5, "cubic_exclude": 1}),
    ("linear-crop", (4, 6), "linear",
     {"mode": "tf_crop_and_resize", "roi": (0.2, -0.3, 0.9, 1.4), "extrapolation_value": -5.0}),
    ("cubic-crop-one", (1, 3), "cubic",
     {"mode": "tf_crop_and_resize", "roi": (0.1, 0.0, 0.7, 0.5)}),
]  # fmt: skip


def _params(d: object, dt: str) -> list[Param]:
    return [("x", (d, *_IN), dt)]  # type: ignore[list-item]


def templates() -> list[OpTemplate]:
    """The templates of this family."""
    # (label, dtypes, output size, method, mode, rounding); the sizes avoid exact .5 ties.
    variants = [
        ("nearest-half-round", FLOAT_INT, (5, 3), "nearest_neighbor", "half_pixel", "round"),
        ("nearest-asym-floor", FLOAT_INT, (6, 8), "nearest_neighbor", "asymmetric", "floor"),
        ("nearest-corners-ceil", FLOAT_INT, (4, 7), "nearest_neighbor", "align_corners",
         "round_prefer_ceil"),
        ("linear-half", FLOAT, (5, 3), "linear", "half_pixel", "round"),
        ("linear-corners", FLOAT, (4, 7), "linear", "align_corners", "round"),
        ("linear-asym-down", FLOAT, (2, 8), "linear", "asymmetric", "round"),
        ("linear-pytorch", FLOAT, (1, 4), "linear", "pytorch_half_pixel", "round"),
        ("nearest-tf-nn", FLOAT_INT, (5, 3), "nearest_neighbor", "tf_half_pixel_for_nn",
         "round_prefer_ceil"),
        ("cubic-half", FLOAT, (5, 7), "cubic", "half_pixel", "round"),
        ("cubic-asym-down", FLOAT, (2, 4), "cubic", "asymmetric", "round"),
    ]  # fmt: skip
    inputs = one_input(lambda n: (n, *_IN))
    return [
        OpTemplate(
            "relax.image.resize2d",
            label,
            "image",
            dtypes,
            _params,
            lambda d, x, s=size, m=method, c=mode, r=rounding: op.image.resize2d(
                x, s, method=m, coordinate_transformation_mode=c, rounding_method=r
            ),
            inputs,
            lambda x, s=size, m=method, c=mode, r=rounding: resize2d_ref(x, s, m, c, r),
        )
        for label, dtypes, size, method, mode, rounding in variants
    ] + [
        OpTemplate(
            "relax.image.resize2d",
            label,
            "image",
            FLOAT,
            _params,
            lambda d, x, s=size, m=method, k=extra: op.image.resize2d(
                x, s, method=m, coordinate_transformation_mode=k.get("mode", "half_pixel"),
                **{key: v for key, v in k.items() if key != "mode"},
            ),
            inputs,
            lambda x, s=size, m=method, k=extra: resize2d_ref(
                x, s, m, k.get("mode", "half_pixel"), "round",
                **{key: v for key, v in k.items() if key != "mode"},
            ),
        )
        for label, size, method, extra in _EXTRA_VARIANTS
    ]  # fmt: skip
