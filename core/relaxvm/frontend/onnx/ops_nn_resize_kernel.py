"""A TE kernel for the ONNX Resize cases ``relax.image.resize2d`` cannot express: cubic
interpolation, the mapping by a scale whose output extent is fractional, ``tf_crop_and_resize``,
``tf_half_pixel_for_nearest``, resized N/C axes and ranks other than 4.

It follows the spec's evaluator: each resized axis maps output index ``y`` to an input
coordinate in float64, takes the interpolation taps around it (edge indices clamped), and the
result is the sum over the taps of every resized axis of ``data * prod(weights)``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...ir import op as sop
from ...ir import tir
from ...ir.tir import intrin as T
from ...ir.tir import te
from ._context import Context, Node

F64 = "float64"


@dataclass
class AxisResize:
    """How one axis is resized.

    ``scale`` is a float, or an int position into the run-time scales tensor; ``from_size``
    says the scale is ``out / in`` (sizes given), in which case the float output width is
    the output extent itself.
    """

    out: Any
    scale: float | int | str | None
    from_size: bool = False
    #: floats, or (with a run-time roi tensor) int positions into it
    roi: tuple[Any, Any] = (0.0, 1.0)


@dataclass
class ResizeSpec:
    mode: str  # nearest / linear / cubic
    coord: str
    nearest_mode: str
    cubic_a: float
    exclude_outside: bool
    extrapolation: float
    #: keep_aspect_ratio_policy with run-time sizes: ("not_larger" | "not_smaller",
    #: [(position in sizes, axis), ...]); axes whose scale is "policy" use it
    policy: tuple[str, list[tuple[int, int]]] | None = None


def _f(value: Any) -> Any:
    if isinstance(value, (int, float)):
        return sop.const(float(value), F64)
    return sop.cast(value, F64)


def _coordinate(
    spec: ResizeSpec, y: Any, size: Any, axis: AxisResize, scale: Any, roi: tuple[Any, Any]
) -> Any:
    """The input coordinate of output index ``y`` (float64), as the spec maps it."""
    length = _f(size)
    width = _f(axis.out) if axis.from_size else sop.mul(scale, length)
    one = _f(1)
    half = _f(0.5)
    coord = spec.coord
    if coord == "align_corners":
        ratio = sop.true_div(sop.sub(length, one), sop.sub(width, one))
        return sop.select(sop.equal(width, one), _f(0), sop.mul(y, ratio))
    if coord == "asymmetric":
        return sop.true_div(y, scale)
    centred = sop.sub(sop.true_div(sop.add(y, half), scale), half)
    if coord == "pytorch_half_pixel":
        return sop.select(sop.equal(width, one), _f(-0.5), centred)
    if coord == "half_pixel_symmetric":
        adjustment = sop.true_div(_f(axis.out), width)
        offset = sop.mul(sop.mul(length, half), sop.sub(one, adjustment))
        return sop.add(offset, centred)
    if coord == "tf_half_pixel_for_nearest":
        return sop.true_div(sop.add(y, half), scale)
    if coord == "tf_crop_and_resize":
        start, end = roi
        span = sop.mul(sop.sub(end, start), sop.sub(length, one))
        step = sop.mul(y, sop.true_div(span, sop.sub(width, one)))
        first = sop.mul(start, sop.sub(length, one))
        return sop.add(sop.select(sop.equal(width, one), sop.mul(span, half), step), first)
    return centred  # half_pixel


def _clamp(index: Any, size: Any) -> Any:
    top = sop.sub(sop.cast(size, "int64"), tir.const(1, "int64"))
    return sop.max_expr(sop.min_expr(index, top), tir.const(0, "int64"))


def _cubic_weights(r: Any, a: float) -> list[Any]:
    A = _f(a)

    def far(t: Any) -> Any:  # |t| in [1, 2)
        return sop.sub(
            sop.mul(
                sop.add(sop.mul(sop.sub(sop.mul(A, t), sop.mul(_f(5), A)), t), sop.mul(_f(8), A)), t
            ),
            sop.mul(_f(4), A),
        )

    def near(t: Any) -> Any:  # |t| in [0, 1)
        return sop.add(
            sop.mul(sop.mul(sop.sub(sop.mul(sop.add(A, _f(2)), t), sop.add(A, _f(3))), t), t), _f(1)
        )

    one = _f(1)
    return [far(sop.add(r, one)), near(r), near(sop.sub(one, r)), far(sop.sub(_f(2), r))]


def _taps(spec: ResizeSpec, x: Any, size: Any) -> list[tuple[Any, Any]]:
    """(clamped index, weight or None) pairs of one axis at coordinate ``x``."""
    x0 = T.floor(x)
    r = sop.sub(x, x0)
    i0 = sop.cast(x0, "int64")
    one = tir.const(1, "int64")
    if spec.mode == "nearest":
        half = _f(0.5)
        up = {
            "round_prefer_floor": sop.greater(r, half),
            "round_prefer_ceil": sop.greater_equal(r, half),
            "floor": None,
            "ceil": sop.greater(r, _f(0)),
        }[spec.nearest_mode]
        index = i0 if up is None else sop.select(up, sop.add(i0, one), i0)
        return [(_clamp(index, size), None)]
    if spec.mode == "linear":
        return [(_clamp(i0, size), sop.sub(_f(1), r)), (_clamp(sop.add(i0, one), size), r)]
    weights = _cubic_weights(r, spec.cubic_a)
    indices = [sop.add(i0, tir.const(k - 1, "int64")) for k in range(4)]
    if spec.exclude_outside:
        limit = sop.cast(size, "int64")
        inside = [
            sop.logical_and(sop.greater_equal(i, tir.const(0, "int64")), sop.less(i, limit))
            for i in indices
        ]
        weights = [sop.select(ok, w, _f(0)) for ok, w in zip(inside, weights, strict=True)]
        total = weights[0]
        for w in weights[1:]:
            total = sop.add(total, w)
        total = sop.select(sop.equal(total, _f(0)), _f(1), total)
        weights = [sop.true_div(w, total) for w in weights]
    return [(_clamp(i, size), w) for i, w in zip(indices, weights, strict=True)]


def emit_resize_kernel(
    ctx: Context,
    node: Node,
    x: Any,
    axes: Sequence[AxisResize | None],
    spec: ResizeSpec,
    scales: Any = None,
    roi: Any = None,
    sizes: Any = None,
) -> Any:
    """Resize ``x``; ``axes[a]`` is None for an axis kept as is. ``scales``, ``roi`` and
    ``sizes`` are the run-time tensors the plan's int positions (and "policy") read."""
    dims = ctx.shape(x)
    dtype = ctx.dtype(x)
    if dims is None or dtype is None:
        raise node.unsupported("input X has an unknown shape or dtype")
    if spec.mode != "nearest" and not dtype.startswith("float"):
        raise node.unsupported(f"mode {spec.mode!r} needs float data, got {dtype}")
    out_shape = [d if a is None else a.out for d, a in zip(dims, axes, strict=True)]
    tf_crop = spec.coord == "tf_crop_and_resize"

    present = [t for t in (scales, roi, sizes) if t is not None]

    def kernel(data: Any, *extra: Any) -> Any:
        given = iter(extra)
        scale_t: Any = next(given) if scales is not None else None
        roi_t: Any = next(given) if roi is not None else None
        sizes_t: Any = next(given) if sizes is not None else None

        def scale_of(axis: AxisResize, size: Any) -> Any:
            if axis.from_size:
                return sop.true_div(_f(axis.out), _f(size))
            if isinstance(axis.scale, float):
                return _f(axis.scale)
            if axis.scale == "policy" and spec.policy is not None:
                kind, pairs = spec.policy
                ratios = [sop.true_div(_f(sizes_t[p]), _f(data.shape[a])) for p, a in pairs]
                best = ratios[0]
                for ratio in ratios[1:]:
                    pick = sop.min_expr if kind == "not_larger" else sop.max_expr
                    best = pick(best, ratio)
                return best
            return sop.cast(scale_t[axis.scale], F64)

        def roi_of(axis: AxisResize) -> tuple[Any, Any]:
            if roi_t is None:
                return _f(axis.roi[0]), _f(axis.roi[1])
            return tuple(  # type: ignore[return-value]
                _f(v) if isinstance(v, float) else sop.cast(roi_t[v], F64) for v in axis.roi
            )

        def body(*index: Any) -> Any:
            per_axis: list[list[tuple[Any, Any]]] = []
            outside: Any = None
            for position, axis in enumerate(axes):
                if axis is None:
                    per_axis.append([(index[position], None)])
                    continue
                size = data.shape[position]
                scale = scale_of(axis, size)
                coord = _coordinate(spec, _f(index[position]), size, axis, scale, roi_of(axis))
                if tf_crop:
                    bad = sop.logical_or(
                        sop.less(coord, _f(0)), sop.greater(coord, sop.sub(_f(size), _f(1)))
                    )
                    outside = bad if outside is None else sop.logical_or(outside, bad)
                per_axis.append(_taps(spec, coord, size))
            total: Any = None
            for combo in itertools.product(*per_axis):
                value = data[tuple(i for i, _ in combo)]
                weights = [w for _, w in combo if w is not None]
                if weights:
                    term = sop.cast(value, F64)
                    for w in weights:
                        term = sop.mul(term, w)
                    value = term
                total = value if total is None else sop.add(total, value)
            result = total if str(total.dtype) == dtype else sop.cast(total, dtype)
            if outside is not None:
                fill = sop.const(spec.extrapolation, dtype)
                result = sop.select(outside, fill, result)
            return result

        return te.compute(out_shape, body, name="resize")

    from .ops_shape_util import emit_kernel

    return emit_kernel(ctx, kernel, x, *present, name="onnx_resize")
