"""Conformance templates of ``relax.image.resize2d`` (see :mod:`.cases`), with a numpy
reference of the coordinate mapping, rounding, clamping and bilinear blend."""

from __future__ import annotations

from collections.abc import Callable

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
    for label in ("linear-half", "linear-corners", "linear-asym-down")
}

_IN = (2, 3, 5)


def _coords(out_size: int, in_size: int, mode: str) -> np.ndarray:
    o = np.arange(out_size, dtype="float64")
    scale = in_size / out_size
    if mode == "asymmetric":
        return o * scale
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


def resize2d_ref(
    x: np.ndarray, size: tuple[int, int], method: str, mode: str, rounding: str = "round"
) -> np.ndarray:
    """numpy ``image.resize2d`` of NCHW ``x`` to ``size``."""
    h, w = x.shape[2:]
    fy, fx = _coords(size[0], h, mode), _coords(size[1], w, mode)
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
    ]
