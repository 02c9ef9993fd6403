"""ONNX converters: Resize (opsets 10-19) and Upsample.

Each resized axis gets an output extent and the scale ONNX maps coordinates with. Where
``relax.image.resize2d`` computes exactly that (4-D, H/W only, nearest/linear, its coordinate
modes, and an output extent of exactly ``in * scale`` so that its ``in / out`` ratio is the
scale) the converter uses it; everything else (cubic, fractional extents, ``tf_*`` modes,
other ranks, N/C resizing, run-time scales) goes to the TE kernel of
:mod:`.ops_nn_resize_kernel`. ``antialias`` is refused.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ...ir import tir
from ...ir.relax import ShapeStructInfo, op
from ._context import Context, Node
from ._registry import converter
from .ops_nn_resize_kernel import AxisResize, ResizeSpec, emit_resize_kernel

_MODES = ("nearest", "linear", "cubic")
_COORDINATE_MODES = (
    "half_pixel",
    "half_pixel_symmetric",
    "align_corners",
    "asymmetric",
    "pytorch_half_pixel",
    "tf_half_pixel_for_nearest",
    "tf_crop_and_resize",
)
_RESIZE2D_MODES = ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel")
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
_POLICIES = ("stretch", "not_larger", "not_smaller")
_FRESH = itertools.count()


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _check_resize(node: Node) -> str | None:
    mode = _text(node.attr("mode", "nearest"))
    allowed = _MODES if node.op_type == "Resize" and node.opset >= 11 else _MODES[:2]
    if mode not in allowed:
        return f"mode={mode!r} is not supported ({', '.join(allowed)} are)"
    if node.op_type == "Upsample" or node.opset < 11:
        return None
    coord = _text(node.attr("coordinate_transformation_mode", "half_pixel"))
    retired = coord == "tf_half_pixel_for_nearest" and node.opset >= 13
    if coord not in _COORDINATE_MODES or retired:
        return f"coordinate_transformation_mode={coord!r} is not a mode of opset {node.opset}"
    nearest = _text(node.attr("nearest_mode", "round_prefer_floor"))
    if mode == "nearest" and nearest not in _NEAREST_MODES:
        return f"nearest_mode={nearest!r} is not one of {', '.join(_NEAREST_MODES)}"
    if node.attr("antialias", 0):
        return "antialias=1 is not supported"
    policy = _text(node.attr("keep_aspect_ratio_policy", "stretch"))
    if policy not in _POLICIES:
        return f"keep_aspect_ratio_policy={policy!r} is not one of {', '.join(_POLICIES)}"
    return None


def _runtime(ctx: Context, value: Any) -> bool:
    """True for a present, non-empty input only the running model knows."""
    return value is not None and ctx.known(value) is None and ctx.static_shape(value) != [0]


def _known_floats(ctx: Context, node: Node, index: int, what: str) -> list[float] | None:
    """Input ``index`` as floats; None when absent or empty; refused when not known."""
    value = node.optional_input(index)
    if value is None:
        return None
    known = ctx.known(value)
    if known is None:
        if ctx.static_shape(value) == [0]:
            return None
        raise node.unsupported(f"input {what} is not known at import time")
    return [float(v) for v in known.reshape(-1).tolist()] or None


def _static(ctx: Context, dim: Any) -> int | None:
    dim = ctx.simplify(dim)
    return int(dim.value) if isinstance(dim, tir.IntImm) else None


def _axes(node: Node, rank: int, count: int) -> list[int]:
    value = node.attr("axes", None) if node.opset >= 18 else None
    axes = list(range(rank)) if value is None else [int(a) % rank for a in value]
    if len(axes) != count:
        raise node.unsupported(f"{count} scales/sizes entries for {len(axes)} axes")
    return axes


def _from_scales(ctx: Context, node: Node, dims: list[Any], scales: list[float]) -> list[Any]:
    """Known scales: the output extent ``floor(in * scale)`` (float64, as the spec)."""
    axes = _axes(node, len(dims), len(scales))
    plan: list[AxisResize | None] = [None] * len(dims)
    for axis, scale in zip(axes, scales, strict=True):
        if scale <= 0:
            raise node.unsupported(f"scale {scale} on axis {axis} is not positive")
        if scale == 1.0:
            continue
        size = _static(ctx, dims[axis])
        if size is not None:
            out: Any = int(np.floor(np.float64(scale) * size))
        elif scale == int(scale):
            out = ctx.simplify(dims[axis] * int(scale))
        else:
            raise node.unsupported(f"non-integer scale {scale} on the symbolic axis {axis}")
        plan[axis] = AxisResize(out, scale)
    return plan


def _from_sizes(ctx: Context, node: Node, dims: list[Any], sizes: list[float]) -> list[Any]:
    """Known sizes, with keep_aspect_ratio_policy."""
    axes = _axes(node, len(dims), len(sizes))
    policy = _text(node.attr("keep_aspect_ratio_policy", "stretch")) if node.opset >= 18 else ""
    plan: list[AxisResize | None] = [None] * len(dims)
    if policy in ("not_larger", "not_smaller"):
        static = [_static(ctx, dims[a]) for a in axes]
        if any(s is None for s in static):
            raise node.unsupported(f"keep_aspect_ratio_policy={policy!r} needs static extents")
        ratios = [want / float(have or 1) for want, have in zip(sizes, static, strict=True)]
        scale = min(ratios) if policy == "not_larger" else max(ratios)
        for axis, have in zip(axes, static, strict=True):
            plan[axis] = AxisResize(int(scale * float(have or 0) + 0.5), scale)
        return plan
    for axis, size in zip(axes, sizes, strict=True):
        if _static(ctx, dims[axis]) != int(size):
            plan[axis] = AxisResize(int(size), None, from_size=True)
    return plan


def _from_runtime(ctx: Context, node: Node, x: Any, value: Any, is_sizes: bool) -> list[Any]:
    """Run-time sizes or scales: extents bound by a match_cast when the model runs."""
    from ...ir import op as sop
    from ...ir.tir import intrin as T
    from ...ir.tir import te
    from .ops_shape_util import emit_kernel, select_chain

    dims = ctx.shape(x)
    length = ctx.static_shape(value)
    if dims is None or length is None or len(length) != 1:
        raise node.unsupported("run-time scales/sizes need a known input rank and length")
    if is_sizes and ctx.dtype(value) != "int64":
        raise node.unsupported("a run-time sizes input must be int64")
    policy = _text(node.attr("keep_aspect_ratio_policy", "stretch")) if node.opset >= 18 else ""
    policy = policy if is_sizes and policy in ("not_larger", "not_smaller") else ""
    axes = _axes(node, len(dims), length[0])

    def extents(data: Any, given: Any) -> list[Any]:
        if policy:
            # scale = min / max of sizes / in over the axes; out = round_half_up(scale * in)
            ratios = [
                sop.true_div(sop.cast(given[p], "float64"), sop.cast(data.shape[a], "float64"))
                for p, a in enumerate(axes)
            ]
            scale = ratios[0]
            for ratio in ratios[1:]:
                scale = (sop.min_expr if policy == "not_larger" else sop.max_expr)(scale, ratio)
            return [
                sop.cast(
                    T.floor(sop.add(sop.mul(scale, sop.cast(data.shape[a], "float64")), 0.5)),
                    "int64",
                )
                for a in axes
            ]
        if is_sizes:
            return [given[p] for p in range(len(axes))]
        out = []
        for p, axis in enumerate(axes):
            exact = sop.mul(sop.cast(data.shape[axis], "float64"), sop.cast(given[p], "float64"))
            out.append(sop.cast(T.floor(exact), "int64"))
        return out

    def compute(data: Any, given: Any) -> Any:
        values = extents(data, given)
        return te.compute([len(axes)], lambda i: select_chain(i, values), name="resize_extents")

    vector = emit_kernel(ctx, compute, x, value, name="onnx_resize_extents")
    shape = ctx.bb.emit(op.tensor_to_shape(vector))
    names = [tir.Var(f"resize_out{next(_FRESH)}", "int64") for _ in axes]
    ctx.bb.match_cast(shape, ShapeStructInfo(names))
    plan: list[AxisResize | None] = [None] * len(dims)
    for p, (axis, var) in enumerate(zip(axes, names, strict=True)):
        if policy:
            plan[axis] = AxisResize(var, "policy")
        else:
            plan[axis] = AxisResize(var, None if is_sizes else p, from_size=is_sizes)
    return plan


def _policy(node: Node, plan: list[Any]) -> tuple[str, list[tuple[int, int]]] | None:
    """The run-time keep_aspect_ratio_policy of a plan from run-time sizes, if any."""
    axes = [a for a, entry in enumerate(plan) if entry is not None and entry.scale == "policy"]
    if not axes:
        return None
    return _text(node.attr("keep_aspect_ratio_policy")), list(enumerate(axes))


def _whole(ctx: Context, dim: Any, scale: float) -> bool:
    """Whether ``dim * scale`` is a whole number (the output extent exactly)."""
    if scale == int(scale):
        return True
    size = _static(ctx, dim)
    return size is not None and float(np.float64(scale) * size).is_integer()


def _roi(ctx: Context, node: Node, rank: int, coord: str) -> tuple[list[Any] | None, Any]:
    """tf_crop_and_resize's roi as [starts..., ends...] per axis: floats when known, int
    positions into the run-time roi tensor (returned second) otherwise."""
    if coord != "tf_crop_and_resize":
        return None, None
    value = node.optional_input(1)
    if value is not None and _runtime(ctx, value):
        length = ctx.static_shape(value)
        if length is None or len(length) != 1:
            raise node.unsupported("a run-time roi must be 1-D of static length")
        axes = _axes(node, rank, length[0] // 2)
        full: list[Any] = [0.0] * rank + [1.0] * rank
        for i, axis in enumerate(axes):
            full[axis], full[rank + axis] = i, len(axes) + i
        return full, value
    roi = _known_floats(ctx, node, 1, "roi")
    if roi is None:
        raise node.unsupported("tf_crop_and_resize needs the roi input")
    axes = _axes(node, rank, len(roi) // 2)
    full = [0.0] * rank + [1.0] * rank
    for i, axis in enumerate(axes):
        full[axis], full[rank + axis] = roi[i], roi[len(axes) + i]
    return full, None


def _convert(
    ctx: Context,
    node: Node,
    plan: list[Any],
    coord: str,
    nearest: str,
    runtime_scales: Any = None,
    runtime_sizes: Any = None,
) -> Any:
    x = node.input(0)
    dims = ctx.shape(x)
    if dims is None:
        raise node.unsupported("input X has an unknown shape")
    mode = _text(node.attr("mode", "nearest"))
    roi, roi_tensor = _roi(ctx, node, len(dims), coord)
    if roi is not None:
        for axis, entry in enumerate(plan):
            bounds = (roi[axis], roi[len(dims) + axis])
            if entry is None and bounds != (0.0, 1.0):
                # An axis kept at its extent still crops to its roi.
                entry = plan[axis] = AxisResize(dims[axis], 1.0)
            if entry is not None:
                entry.roi = bounds
    if all(entry is None for entry in plan):
        return x
    exact = all(
        e.from_size or (isinstance(e.scale, float) and _whole(ctx, d, e.scale))
        for e, d in zip(plan, dims, strict=True)
        if e is not None
    )
    if (
        len(dims) == 4
        and plan[0] is None
        and plan[1] is None
        and mode in ("nearest", "linear")
        and (coord in _RESIZE2D_MODES or (coord == "half_pixel_symmetric" and exact))
        and exact
        and runtime_scales is None
    ):
        # The exact case: resize2d's in/out ratio is the scale. half_pixel_symmetric's
        # correction (in * scale) / out is then 1: plain half_pixel.
        out = [dims[2 + a] if plan[2 + a] is None else plan[2 + a].out for a in range(2)]
        return op.image.resize2d(
            x,
            out,
            method="nearest_neighbor" if mode == "nearest" else "linear",
            coordinate_transformation_mode="half_pixel" if coord.startswith("half") else coord,
            rounding_method=nearest,
        )
    spec = ResizeSpec(
        mode,
        coord,
        nearest,
        float(node.attr("cubic_coeff_a", -0.75)),
        bool(node.attr("exclude_outside", 0)),
        float(node.attr("extrapolation_value", 0.0)),
        _policy(node, plan),
    )
    sizes = runtime_sizes if spec.policy is not None else None
    return emit_resize_kernel(ctx, node, x, plan, spec, runtime_scales, roi_tensor, sizes)


@converter("Resize", since=11, check=_check_resize)
def resize(ctx: Context, node: Node) -> Any:
    """Any rank; nearest/linear/cubic; all coordinate modes; scales/sizes/roi known or run-time.

    Also nearest_mode, cubic_coeff_a, exclude_outside, extrapolation_value, axes and
    keep_aspect_ratio_policy; antialias is refused.
    """
    x = node.input(0)
    dims = ctx.shape(x)
    if dims is None:
        raise node.unsupported("input X has an unknown shape")
    sizes_input, scales_input = node.optional_input(3), node.optional_input(2)
    runtime_scales = None
    runtime_sizes = None
    if _runtime(ctx, sizes_input):
        plan = _from_runtime(ctx, node, x, sizes_input, True)
        runtime_sizes = sizes_input
    else:
        sizes = _known_floats(ctx, node, 3, "sizes")
        if sizes is not None:
            plan = _from_sizes(ctx, node, dims, sizes)
        elif _runtime(ctx, scales_input):
            plan = _from_runtime(ctx, node, x, scales_input, False)
            runtime_scales = scales_input
        else:
            scales = _known_floats(ctx, node, 2, "scales")
            if scales is None:
                raise node.unsupported("neither scales nor sizes is given")
            plan = _from_scales(ctx, node, dims, scales)
    coord = _text(node.attr("coordinate_transformation_mode", "half_pixel"))
    nearest = _text(node.attr("nearest_mode", "round_prefer_floor"))
    return _convert(ctx, node, plan, coord, nearest, runtime_scales, runtime_sizes)


@converter("Resize", since=10, check=_check_resize)
def resize_v10(ctx: Context, node: Node) -> Any:
    """nearest/linear, asymmetric mapping; run-time scales for linear only.

    nearest floors upscaled and ceils downscaled axes (onnxruntime's rule).
    """
    return _legacy(ctx, node, node.optional_input(1), upsample=False)


@converter("Upsample", since=7, check=_check_resize)
def upsample(ctx: Context, node: Node) -> Any:
    """nearest (floor)/linear, asymmetric mapping; scales attribute (7) or input (9)."""
    if node.opset < 9:
        scales = [float(s) for s in node.attr("scales")]
        return _legacy_known(ctx, node, scales)
    return _legacy(ctx, node, node.optional_input(1), upsample=True)


def _legacy(ctx: Context, node: Node, value: Any, upsample: bool) -> Any:
    mode = _text(node.attr("mode", "nearest"))
    if _runtime(ctx, value):
        if mode == "nearest" and not upsample:
            raise node.unsupported("nearest with run-time scales (rounding depends on them)")
        plan = _from_runtime(ctx, node, node.input(0), value, False)
        return _convert(ctx, node, plan, "asymmetric", "floor", value)
    scales = _known_floats(ctx, node, 1, "scales")
    if scales is None:
        raise node.unsupported("input scales is empty")
    return _legacy_known(ctx, node, scales)


def _legacy_known(ctx: Context, node: Node, scales: list[float]) -> Any:
    # Opset-10 Resize and Upsample: onnxruntime floors the coordinate when upsampling and
    # takes its ceiling when downsampling; one rounding serves only one direction.
    changed = [s for s in scales if s != 1.0]
    if all(s > 1.0 for s in changed):
        rounding = "floor"
    elif all(s < 1.0 for s in changed):
        rounding = "ceil"
    else:
        raise node.unsupported(f"scales {scales} upsample one axis and downsample another")
    dims = ctx.shape(node.input(0))
    if dims is None:
        raise node.unsupported("input X has an unknown shape")
    return _convert(ctx, node, _from_scales(ctx, node, dims, scales), "asymmetric", rounding, None)
