"""Image ops (``relax.image.*``): ``resize2d`` with TVM v0.23's signature and attributes.

Supported: NCHW data or any layout :mod:`.nn_layout` accepts (NHWC, NCHW4c...); the methods
``"nearest_neighbor"``, ``"linear"`` and ``"cubic"``
(Keys' cubic convolution with ``cubic_alpha``, optionally excluding outside pixels); every
coordinate transformation mode of TVM and ONNX: ``"half_pixel"``, ``"align_corners"``,
``"asymmetric"``, ``"pytorch_half_pixel"``, ``"tf_half_pixel_for_nn"`` and
``"tf_crop_and_resize"`` (``roi`` and ``extrapolation_value``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ....runtime.dtype import DataTypeCode
from ...expr import PrimExpr
from .._base import RelaxExpr
from ..expr import Call
from ..struct_info import StructInfo
from ._common import (
    as_shape_expr,
    dtype_attr,
    make_call,
    shape_arg_ndim,
    shape_arg_values,
    tensor,
)
from .nn_layout import check_ndim, from_canonical, layout_ndim, layout_perm, to_canonical
from .registry import InferContext, OpError, register_op

__all__ = ["resize2d"]

METHODS = ("nearest_neighbor", "linear", "cubic")
COORDINATE_MODES = (
    "half_pixel",
    "align_corners",
    "asymmetric",
    "pytorch_half_pixel",
    "tf_half_pixel_for_nn",
    "tf_crop_and_resize",
)
ROUNDING_METHODS = ("", "round", "floor", "ceil", "round_prefer_floor", "round_prefer_ceil")


def _infer_resize2d(call: Call, ctx: InferContext) -> StructInfo:
    data = ctx.tensor_arg(call, 0, "data")
    perm = layout_perm("relax.image.resize2d", "layout", ctx.attr(call, "layout", "NCHW"), "NCHW")
    check_ndim(ctx, data, "data", perm, "NCHW")
    size_ndim = shape_arg_ndim(ctx, call, 1)
    if size_ndim not in (-1, 2):
        raise ctx.error(f"size must have 2 entries (height, width), got {size_ndim}")
    method = ctx.attr(call, "method", "linear")
    if (
        method in ("linear", "cubic")
        and data.dtype is not None
        and data.dtype.code not in (DataTypeCode.FLOAT, DataTypeCode.BFLOAT)
    ):
        # TVM blends integer pixels in float and casts back; here only float data blends.
        raise ctx.error(f"method '{method}' needs data with a float dtype, got {data.dtype}")
    out_dtype = ctx.attr(call, "out_dtype")
    dtype = out_dtype if out_dtype else data.dtype
    size = shape_arg_values(ctx, call, 1)
    d = data.shape_values
    if d is None or size is None:
        return tensor(None, dtype, layout_ndim(perm, "NCHW"), like=data)
    n, c = to_canonical(d, perm)[:2]
    return tensor(from_canonical([n, c, size[0], size[1]], perm), dtype, like=data)


register_op(
    "relax.image.resize2d",
    num_inputs=2,
    infer=_infer_resize2d,
    attrs={
        "roi": "(start_h, start_w, end_h, end_w), for tf_crop_and_resize only",
        "layout": "data and result axes: a permutation of NCHW",
        "method": "nearest_neighbor, linear or cubic",
        "coordinate_transformation_mode": "how output coordinates map to input ones",
        "rounding_method": "nearest_neighbor's rounding",
        "cubic_alpha": "cubic's spline parameter",
        "cubic_exclude": "cubic's outside-pixel exclusion",
        "extrapolation_value": "value outside the image (tf_crop_and_resize)",
        "out_dtype": "result dtype",
    },
    doc="2-d image resize (NCHW, or a permutation of those axes)",
)


def _choice(name: str, param: str, value: Any, allowed: Sequence[str]) -> str:
    if value not in allowed:
        listed = ", ".join(repr(a) for a in allowed)
        raise OpError(f"{name}: {param} must be one of {listed}, got {value!r}")
    return str(value)


def resize2d(
    data: RelaxExpr,
    size: RelaxExpr | int | PrimExpr | Sequence[int | PrimExpr],
    roi: float | Sequence[float] | None = None,
    layout: str = "NCHW",
    method: str = "linear",
    coordinate_transformation_mode: str = "half_pixel",
    rounding_method: str = "round",
    cubic_alpha: float = -0.75,
    cubic_exclude: int = 0,
    extrapolation_value: float = 0.0,
    out_dtype: str | None = None,
) -> Call:
    """Resize NCHW ``data`` to ``size`` (height, width).

    Parameters
    ----------
    data : RelaxExpr
        ``(N, C, H, W)`` data.
    size : RelaxExpr, int or sequence of 1 or 2 ints/PrimExprs
        The output ``(height, width)``; one value is used for both; a ShapeExpr as is.
    roi : float or sequence of 4 floats, optional
        ``(start_h, start_w, end_h, end_w)`` as fractions of the image, for
        ``tf_crop_and_resize`` only.
    layout : str
        ``"NCHW"``, a permutation of its axes (``"NHWC"``) or a packed layout
        (``"NCHW4c"``): the data and the result.
    method : {"nearest_neighbor", "linear", "cubic"}
        ``"cubic"`` weighs the 4 x 4 neighbours with Keys' cubic kernel of parameter
        ``cubic_alpha`` (indices clamped into the image).
    coordinate_transformation_mode : str
        ``"half_pixel"``: ``in = (out + 0.5) * scale - 0.5``; ``"pytorch_half_pixel"``: the
        same, but 0 for an output extent of 1; ``"align_corners"``: ``in = out * (in_size -
        1) / (out_size - 1)``; ``"asymmetric"``: ``in = out * scale`` (``scale = in_size /
        out_size``); ``"tf_half_pixel_for_nn"``: ``in = (out + 0.5) * scale``;
        ``"tf_crop_and_resize"``: the output spans ``roi`` of the input
        (``in = start * (in_size - 1) + out * (end - start) * (in_size - 1) / (out_size - 1)``),
        and positions outside the image take ``extrapolation_value``.
    rounding_method : str
        nearest_neighbor's rounding of ``in``: ``"round"`` (half to even), ``"floor"``,
        ``"ceil"``, ``"round_prefer_floor"``, ``"round_prefer_ceil"``, or ``""`` (meaning
        round_prefer_floor). Indices are then clamped into the image.
    cubic_alpha : float
        Keys' ``a`` (-0.75 as TVM and ONNX; PyTorch uses -0.75, TensorFlow -0.5).
    cubic_exclude : int
        When 1, neighbours outside the image get weight 0 and the rest are renormalised.
    extrapolation_value : float
        The value outside the image for ``tf_crop_and_resize``.
    out_dtype : str, optional
        The result dtype; the data's by default.

    Returns
    -------
    Call
        A ``relax.image.resize2d`` call of shape ``(N, C, height, width)``.
    """
    name = "relax.image.resize2d"
    layout_perm(name, "layout", layout, "NCHW")  # NCHW permuted or packed (NHWC, NCHW4c...)
    method = _choice(name, "method", method, METHODS)
    mode = _choice(
        name, "coordinate_transformation_mode", coordinate_transformation_mode, COORDINATE_MODES
    )
    rounding = _choice(name, "rounding_method", rounding_method, ROUNDING_METHODS)
    if isinstance(size, (int, PrimExpr)) and not isinstance(size, bool):
        size = [size, size]
    elif not isinstance(size, RelaxExpr) and isinstance(size, Sequence) and len(size) == 1:
        size = [size[0], size[0]]
    size_expr = as_shape_expr(name, size)
    roi_t: tuple[float, ...]
    if roi is None:
        roi_t = (0.0, 0.0, 0.0, 0.0)
    elif isinstance(roi, (int, float)):
        roi_t = (float(roi),) * 4
    else:
        roi_t = tuple(float(v) for v in roi)
        if len(roi_t) != 4:
            raise OpError(f"{name}: roi must have 4 entries, got {list(roi_t)}")
    if not math.isfinite(float(extrapolation_value)):
        raise OpError(f"{name}: extrapolation_value must be finite, got {extrapolation_value!r}")
    attrs = {
        "roi": roi_t,
        "layout": layout,
        "method": method,
        "coordinate_transformation_mode": mode,
        "rounding_method": rounding,
        "cubic_alpha": float(cubic_alpha),
        "cubic_exclude": int(cubic_exclude),
        "extrapolation_value": float(extrapolation_value),
        "out_dtype": dtype_attr(name, out_dtype),
    }
    return make_call(name, [data, size_expr], attrs)
