"""Conformance templates of the spatial ops in TVM's packed layouts (``NCHW4c``, ``OIHW4i4o``,
see :mod:`.cases`): inputs are made canonical (NCHW/OIHW), packed by :func:`pack`, and the
reference is the canonical numpy result packed the same way."""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from .cases import FLOAT, FLOAT_INT, Arrays, Dim, OpTemplate, Param, op, random_values
from .cases_image import resize2d_ref

__all__ = ["pack", "templates", "unpack"]


def _axes(layout: str) -> list[tuple[str, int]]:
    return [(letter, int(f or 0)) for f, letter in re.findall(r"(\d*)([A-Za-z])", layout)]


def pack(x: np.ndarray, canonical: str, layout: str) -> np.ndarray:
    """``x`` (in ``canonical``, e.g. NCHW) in ``layout`` (a permutation, maybe packed: NCHW4c);
    a packed axis whose extent is not a multiple of its factor is zero-filled, as
    relaxvm's legalization fills the tail of the last block."""
    axes = _axes(layout)
    factors = {letter.upper(): f for letter, f in axes if f}
    shape: list[int] = []
    labels: list[str] = []
    for letter, extent in zip(canonical, x.shape, strict=True):
        f = factors.get(letter)
        if f:
            outer = -(-extent // f)
            if outer * f != extent:
                widths = [(0, 0)] * x.ndim
                widths[canonical.index(letter)] = (0, outer * f - extent)
                x = np.pad(x, widths)
            shape += [outer, f]
            labels += [letter, letter.lower()]
        else:
            shape.append(extent)
            labels.append(letter)
    order = [labels.index(letter) for letter, _ in axes]
    return np.ascontiguousarray(x.reshape(shape).transpose(order))


def unpack(x: np.ndarray, layout: str, canonical: str) -> np.ndarray:
    """The inverse of :func:`pack` (for extents that are multiples of their factors)."""
    labels = [letter for letter, _ in _axes(layout)]
    order: list[int] = []
    shape: list[int] = []
    for letter in canonical:
        outer = labels.index(letter)
        order.append(outer)
        extent = x.shape[outer]
        if letter.lower() in labels:
            inner = labels.index(letter.lower())
            order.append(inner)
            extent *= x.shape[inner]
        shape.append(extent)
    return np.ascontiguousarray(x.transpose(order).reshape(shape))


def _inputs(*shapes: tuple[tuple[int, ...], str, str], kind: str = "") -> Callable[..., Arrays]:
    """Canonical random inputs packed per ``(canonical shape after n, canonical, layout)``;
    the first one has the leading extent ``n``."""

    def make(rng: np.random.Generator, n: int, dt: str) -> Arrays:
        out = []
        for index, (shape, canonical, layout) in enumerate(shapes):
            full = (n, *shape) if index == 0 else shape
            out.append(pack(random_values(rng, full, dt, kind), canonical, layout))
        return out

    return make


def _params(*shapes: tuple[tuple[int, ...], str, str]) -> Callable[[Dim, str], list[Param]]:
    def params(d: Dim, dt: str) -> list[Param]:
        out: list[Param] = []
        for index, (shape, canonical, layout) in enumerate(shapes):
            packed = pack(np.zeros((1, *shape) if index == 0 else shape), canonical, layout).shape
            out.append(("xw"[index], (d, *packed[1:]) if index == 0 else packed, dt))
        return out

    return params


def _acc(x: np.ndarray) -> str:
    # int64 sums wrap modulo 2**64, so cast back to int32 they equal the kernel's int32 sums
    # (which wrap modulo 2**32): an exact reference even for the int-extremes edge inputs.
    return "int64" if x.dtype.kind == "i" else "float64"


def _mean(total: np.ndarray, count: int, like: np.ndarray) -> np.ndarray:
    """The kernel's average: the (wrapped) sum floor-divided for ints."""
    if like.dtype.kind == "i":
        return np.floor_divide(total.astype(like.dtype), like.dtype.type(count))
    return (total / count).astype(like.dtype)


def _conv(x: np.ndarray, w: np.ndarray, pad: int) -> np.ndarray:
    """Channel-first convolution (any rank, stride and dilation 1, one group)."""
    rank = x.ndim - 2
    acc = _acc(x)
    xp = np.pad(x.astype(acc), [(0, 0), (0, 0)] + [(pad, pad)] * rank)
    kernel = w.shape[2:]
    outs = [xp.shape[2 + a] - kernel[a] + 1 for a in range(rank)]
    out = np.zeros((x.shape[0], w.shape[0], *outs), acc)
    for pos in np.ndindex(*kernel):
        lead = (slice(None), slice(None))
        window = xp[lead + tuple(slice(p, p + o) for p, o in zip(pos, outs, strict=True))]
        tap = w[lead + tuple(pos)].astype(acc)
        out += np.einsum("nc...,oc->no...", window, tap)
    return out.astype(x.dtype)


def _pool2d(kind: str, size: int, stride: int, pad: int) -> Callable[[np.ndarray], np.ndarray]:
    """Square windows, floor mode, padding excluded from averages; NCHW in and out."""

    def ref(x: np.ndarray) -> np.ndarray:
        h, w = x.shape[2:]
        oh, ow = (h + 2 * pad - size) // stride + 1, (w + 2 * pad - size) // stride + 1
        out = np.empty((*x.shape[:2], oh, ow), x.dtype)
        for i in range(oh):
            for j in range(ow):
                r0, c0 = i * stride - pad, j * stride - pad
                block = x[:, :, max(r0, 0) : r0 + size, max(c0, 0) : c0 + size]
                if kind == "max":
                    out[:, :, i, j] = block.max(axis=(2, 3))
                else:
                    total = block.astype(_acc(x)).sum(axis=(2, 3))
                    out[:, :, i, j] = _mean(total, block.shape[2] * block.shape[3], x)
        return out

    return ref


def _adaptive2d(size: int) -> Callable[[np.ndarray], np.ndarray]:
    def ref(x: np.ndarray) -> np.ndarray:
        h, w = x.shape[2:]
        out = np.empty((*x.shape[:2], size, size), x.dtype)
        for i in range(size):
            for j in range(size):
                block = x[
                    :,
                    :,
                    i * h // size : -(-(i + 1) * h // size),
                    j * w // size : -(-(j + 1) * w // size),
                ]
                total = block.astype(_acc(x)).sum(axis=(2, 3))
                out[:, :, i, j] = _mean(total, block.shape[2] * block.shape[3], x)
        return out

    return ref


def _nchw(
    ref: Callable[[np.ndarray], np.ndarray], layout: str, out: str
) -> Callable[[np.ndarray], np.ndarray]:
    """``ref`` (NCHW to NCHW) for data in ``layout`` and a result in ``out``."""
    return lambda x: pack(ref(unpack(x, layout, "NCHW")), "NCHW", out)


def templates() -> list[OpTemplate]:
    """The templates of this family."""
    conv_in = ((4, 3, 3), "NCHW", "NCHW4c")
    conv_w = ((4, 4, 2, 2), "OIHW", "OIHW4i4o")
    pool_in = ((8, 4, 4), "NCHW", "NCHW8c")
    avg_in = ((4, 4, 5), "NCHW", "NCHW4c")
    return [
        OpTemplate("relax.nn.conv2d", "NCHW4c-OIHW4i4o", "nn_packed", FLOAT_INT,
                   _params(conv_in, conv_w),
                   lambda d, x, w: op.nn.conv2d(x, w, padding=1, data_layout="NCHW4c",
                                                kernel_layout="OIHW4i4o"),
                   _inputs(conv_in, conv_w, kind="small"),
                   lambda x, w: pack(_conv(unpack(x, "NCHW4c", "NCHW"),
                                           unpack(w, "OIHW4i4o", "OIHW"), 1), "NCHW", "NCHW4c")),
        OpTemplate("relax.nn.conv2d", "out-NCHW4c-tail", "nn_packed", FLOAT_INT,
                   _params(((3, 3, 3), "NCHW", "NCHW"), ((6, 3, 2, 2), "OIHW", "HWIO")),
                   lambda d, x, w: op.nn.conv2d(x, w, kernel_layout="HWIO",
                                                out_layout="NCHW4c"),
                   _inputs(((3, 3, 3), "NCHW", "NCHW"), ((6, 3, 2, 2), "OIHW", "HWIO"),
                           kind="small"),
                   lambda x, w: pack(_conv(x, unpack(w, "HWIO", "OIHW"), 0), "NCHW", "NCHW4c")),
        OpTemplate("relax.nn.conv1d", "NCW4c-OIW4i", "nn_packed", FLOAT_INT,
                   _params(((4, 5), "NCW", "NCW4c"), ((3, 4, 2), "OIW", "OIW4i")),
                   lambda d, x, w: op.nn.conv1d(x, w, data_layout="NCW4c",
                                                kernel_layout="OIW4i", out_layout="NWC"),
                   _inputs(((4, 5), "NCW", "NCW4c"), ((3, 4, 2), "OIW", "OIW4i"), kind="small"),
                   lambda x, w: _conv(unpack(x, "NCW4c", "NCW"), unpack(w, "OIW4i", "OIW"),
                                      0).transpose(0, 2, 1)),
        OpTemplate("relax.nn.max_pool2d", "NCHW8c", "nn_packed", FLOAT_INT,
                   _params(pool_in),
                   lambda d, x: op.nn.max_pool2d(x, 2, 2, layout="NCHW8c"),
                   _inputs(pool_in), _nchw(_pool2d("max", 2, 2, 0), "NCHW8c", "NCHW8c")),
        OpTemplate("relax.nn.avg_pool2d", "NCHW4c-NHWC", "nn_packed", FLOAT_INT,
                   _params(avg_in),
                   lambda d, x: op.nn.avg_pool2d(x, 3, 1, 1, layout="NCHW4c",
                                                 out_layout="NHWC"),
                   _inputs(avg_in), _nchw(_pool2d("avg", 3, 1, 1), "NCHW4c", "NHWC")),
        OpTemplate("relax.nn.adaptive_avg_pool2d", "NCHW4c", "nn_packed", FLOAT_INT,
                   _params(avg_in),
                   lambda d, x: op.nn.adaptive_avg_pool2d(x, 2, layout="NCHW4c"),
                   _inputs(avg_in), _nchw(_adaptive2d(2), "NCHW4c", "NCHW4c")),
        OpTemplate("relax.image.resize2d", "NCHW4c", "nn_packed", FLOAT,
                   _params(avg_in),
                   lambda d, x: op.image.resize2d(x, (3, 6), layout="NCHW4c"),
                   _inputs(avg_in),
                   _nchw(lambda x: resize2d_ref(x, (3, 6), "linear", "half_pixel"), "NCHW4c",
                         "NCHW4c")),
    ]  # fmt: skip
