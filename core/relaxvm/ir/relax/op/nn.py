"""Neural-network ops (``relax.nn.*``): activations, softmax and normalizations here; the
other families (2-d convolution and pooling in :mod:`.nn_conv2d`, 1-d in :mod:`.nn_conv`,
3-d, transposed convolutions, attention, losses, more norms) live in their own modules and
their builders are part of this namespace."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ....runtime.dtype import DataTypeCode
from .._base import RelaxExpr
from ..expr import Call
from ..struct_info import StructInfo, TensorStructInfo
from ._common import (
    as_axes,
    as_int,
    dims_text,
    make_call,
    normalize_axes,
    normalize_axis,
    prove_equal,
    prove_not_equal,
    same_shape,
    unify_dtypes,
)
from .registry import InferContext, register_op

ACTIVATIONS = ("relu", "gelu", "silu")


def _require_float(ctx: InferContext, info: TensorStructInfo, what: str) -> None:
    if info.dtype is not None and info.dtype.code not in (DataTypeCode.FLOAT, DataTypeCode.BFLOAT):
        raise ctx.type_error(f"{what} must have a float dtype, got {info.dtype}")


def _infer_activation(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "data")
    if not ctx.op_name.endswith("relu"):
        _require_float(ctx, info, "data")
    return same_shape(info, info.dtype)


def _infer_softmax(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "data")
    _require_float(ctx, info, "data")
    if info.ndim != -1:
        if info.ndim == 0:
            raise ctx.error("data must have rank >= 1, got a 0-d tensor")
        normalize_axis(ctx, ctx.attr(call, "axis", -1), info.ndim)
    return same_shape(info, info.dtype)


def _check_param(
    ctx: InferContext, data: TensorStructInfo, param: TensorStructInfo, axes: list[int], what: str
) -> None:
    """A scale/shift parameter must have the extents of ``data`` at ``axes``."""
    if param.ndim not in (-1, len(axes)):
        raise ctx.error(
            f"{what} must have rank {len(axes)} (the normalized axes {axes} of data with shape "
            f"{dims_text(data)}), got shape {dims_text(param)}"
        )
    values, param_values = data.shape_values, param.shape_values
    if values is None or param_values is None:
        return
    for position, axis in enumerate(axes):
        a, b = values[axis], param_values[position]
        if not prove_equal(ctx, a, b) and prove_not_equal(ctx, a, b):
            raise ctx.error(
                f"{what} with shape {dims_text(param)} does not match data with shape "
                f"{dims_text(data)} at axis {axis}: {b} vs {a}"
            )


def _infer_norm(
    call: Call, ctx: InferContext, names: Sequence[str], default_axes: Any
) -> StructInfo:
    data = ctx.tensor_arg(call, 0, "data")
    params = [ctx.tensor_arg(call, i + 1, name) for i, name in enumerate(names)]
    _require_float(ctx, data, "data")
    dtype = unify_dtypes(ctx, [data, *params], "data and " + " and ".join(names))
    if data.ndim != -1:
        axes = ctx.attr(call, "axes", default_axes)
        normalized = normalize_axes(ctx, axes, data.ndim)
        for name, param in zip(names, params, strict=False):
            _check_param(ctx, data, param, normalized, name)
    return same_shape(data, dtype)


def _infer_layer_norm(call: Call, ctx: InferContext) -> StructInfo:
    return _infer_norm(call, ctx, ("gamma", "beta"), (-1,))


def _infer_rms_norm(call: Call, ctx: InferContext) -> StructInfo:
    return _infer_norm(call, ctx, ("weight",), (-1,))


def _infer_batch_norm(call: Call, ctx: InferContext) -> StructInfo:
    data = ctx.tensor_arg(call, 0, "data")
    names = ("gamma", "beta", "moving_mean", "moving_var")
    params = [ctx.tensor_arg(call, i + 1, name) for i, name in enumerate(names)]
    _require_float(ctx, data, "data")
    dtype = unify_dtypes(ctx, [data, *params], "data and its parameters")
    if data.ndim != -1:
        axis = normalize_axis(ctx, ctx.attr(call, "axis", 1), data.ndim)
        for name, param in zip(names, params, strict=False):
            _check_param(ctx, data, param, [axis], name)
    return same_shape(data, dtype)


for _name in ACTIVATIONS:
    register_op(f"relax.nn.{_name}", num_inputs=1, infer=_infer_activation, doc=_name)
for _name in ("softmax", "log_softmax"):
    register_op(
        f"relax.nn.{_name}",
        num_inputs=1,
        infer=_infer_softmax,
        attrs={"axis": "the normalized axis"},
        doc=_name,
    )
register_op(
    "relax.nn.layer_norm",
    num_inputs=3,
    infer=_infer_layer_norm,
    attrs={
        "axes": "normalized axes",
        "epsilon": "variance floor",
        "center": "use beta",
        "scale": "use gamma",
    },
    doc="layer normalization",
)
register_op(
    "relax.nn.rms_norm",
    num_inputs=2,
    infer=_infer_rms_norm,
    attrs={"axes": "normalized axes", "epsilon": "floor"},
    doc="RMS normalization",
)
register_op(
    "relax.nn.batch_norm",
    num_inputs=5,
    infer=_infer_batch_norm,
    attrs={"axis": "channel axis", "epsilon": "variance floor"},
    doc="inference-mode batch normalization; returns only the normalized tensor",
)


def relu(data: RelaxExpr) -> Call:
    """``max(data, 0)``."""
    return make_call("relax.nn.relu", [data])


def gelu(data: RelaxExpr) -> Call:
    """Gaussian error linear unit (float tensors)."""
    return make_call("relax.nn.gelu", [data])


def silu(data: RelaxExpr) -> Call:
    """``data * sigmoid(data)`` (float tensors)."""
    return make_call("relax.nn.silu", [data])


def softmax(data: RelaxExpr, axis: int = -1) -> Call:
    """Softmax along ``axis``."""
    return make_call("relax.nn.softmax", [data], {"axis": as_int("relax.nn.softmax", "axis", axis)})


def log_softmax(data: RelaxExpr, axis: int = -1) -> Call:
    """Logarithm of the softmax along ``axis``."""
    name = "relax.nn.log_softmax"
    return make_call(name, [data], {"axis": as_int(name, "axis", axis)})


def layer_norm(
    data: RelaxExpr,
    gamma: RelaxExpr,
    beta: RelaxExpr,
    axes: int | Sequence[int],
    epsilon: float = 1e-5,
    center: bool = True,
    scale: bool = True,
) -> Call:
    """Normalize over ``axes``, then scale by ``gamma`` and shift by ``beta``."""
    name = "relax.nn.layer_norm"
    attrs = {
        "axes": as_axes(name, axes),
        "epsilon": float(epsilon),
        "center": center,
        "scale": scale,
    }
    return make_call(name, [data, gamma, beta], attrs)


def rms_norm(
    data: RelaxExpr, weight: RelaxExpr, axes: int | Sequence[int] = -1, epsilon: float = 1e-5
) -> Call:
    """``data / sqrt(mean(data**2, axes) + epsilon) * weight``."""
    name = "relax.nn.rms_norm"
    return make_call(name, [data, weight], {"axes": as_axes(name, axes), "epsilon": float(epsilon)})


def batch_norm(
    data: RelaxExpr,
    gamma: RelaxExpr,
    beta: RelaxExpr,
    moving_mean: RelaxExpr,
    moving_var: RelaxExpr,
    axis: int = 1,
    epsilon: float = 1e-5,
) -> Call:
    """Inference-mode batch norm with the moving statistics.

    TVM's op returns a 3-tuple (normalized, new mean, new var) for training; ours returns
    only the normalized tensor, which is all an inference graph uses.
    """
    name = "relax.nn.batch_norm"
    attrs = {"axis": as_int(name, "axis", axis), "epsilon": float(epsilon)}
    return make_call(name, [data, gamma, beta, moving_mean, moving_var], attrs)


# The other families live in their own modules (size); their builders are part of this
# namespace, as in TVM's relax.op.nn. 2-d convolution and pooling come first, so that the op
# registry holds the ops in the order it always has.
from .nn_conv2d import adaptive_avg_pool2d, avg_pool2d, conv2d, max_pool2d  # noqa: E402

# isort: split
from .nn_attention import *  # noqa: E402, F403
from .nn_attention import __all__ as _attention_all  # noqa: E402
from .nn_conv import *  # noqa: E402, F403
from .nn_conv import __all__ as _conv_all  # noqa: E402
from .nn_conv3d import *  # noqa: E402, F403
from .nn_conv3d import __all__ as _conv3d_all  # noqa: E402
from .nn_conv_transpose import *  # noqa: E402, F403
from .nn_conv_transpose import __all__ as _conv_transpose_all  # noqa: E402
from .nn_extra import *  # noqa: E402, F403
from .nn_extra import __all__ as _extra_all  # noqa: E402
from .nn_loss import *  # noqa: E402, F403
from .nn_loss import __all__ as _loss_all  # noqa: E402
from .nn_norm import *  # noqa: E402, F403
from .nn_norm import __all__ as _norm_all  # noqa: E402
from .nn_tvm_extra_a import *  # noqa: E402, F403
from .nn_tvm_extra_a import __all__ as _tvm_extra_a_all  # noqa: E402
from .nn_tvm_extra_c import *  # noqa: E402, F403
from .nn_tvm_extra_c import __all__ as _tvm_extra_c_all  # noqa: E402

__all__ = [
    *_attention_all,
    *_conv_all,
    *_conv_transpose_all,
    *_conv3d_all,
    *_extra_all,
    *_loss_all,
    *_norm_all,
    *_tvm_extra_a_all,
    *_tvm_extra_c_all,
    "adaptive_avg_pool2d",
    "avg_pool2d",
    "batch_norm",
    "conv2d",
    "gelu",
    "layer_norm",
    "log_softmax",
    "max_pool2d",
    "relu",
    "rms_norm",
    "silu",
    "softmax",
]
