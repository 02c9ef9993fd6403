"""ONNX converters: activation functions (Relu, LeakyRelu, PRelu, Elu, Selu, Celu,
ThresholdedRelu, Sigmoid, HardSigmoid, HardSwish, Softplus, Softsign, Tanh, Gelu, Mish, Shrink).

Most are composed from elementwise Relax ops so that the ONNX attributes (any alpha, gamma,
bias) are honoured exactly; comparisons are arranged so that NaN inputs give NaN.
"""

from __future__ import annotations

from typing import Any

from ...errors import FrontendError
from ...ir.relax import op
from ._context import Context, Node
from ._registry import converter
from .ops_elementwise_fold import input_dtype, is_float_dtype, scalar


def _float_input(ctx: Context, node: Node) -> tuple[Any, str]:
    dtype = input_dtype(ctx, node, 0)
    if not is_float_dtype(dtype):
        raise node.unsupported(f"{node.op_type} of a {dtype} input (ONNX defines it for floats)")
    return node.input(0), dtype


def _softplus(ctx: Context, x: Any, dtype: str) -> Any:
    # log(1 + exp(x)) as max(x, 0) + log(1 + exp(-|x|)): no overflow for any x or dtype.
    tail = op.log(op.add(scalar(1, dtype), op.exp(op.negative(op.abs(x)))))
    return op.add(op.maximum(x, scalar(0, dtype)), ctx.emit(tail))


@converter("Relu", since=1)
def relu(ctx: Context, node: Node) -> Any:
    """Floats, and signed ints (opset 14)."""
    return op.nn.relu(node.input(0))


@converter("LeakyRelu", since=1)
def leaky_relu(ctx: Context, node: Node) -> Any:
    """`alpha` supported."""
    x, dtype = _float_input(ctx, node)
    alpha = scalar(node.attr("alpha", 0.01), dtype)
    return op.where(op.less(x, scalar(0, dtype)), op.multiply(x, alpha), x)


@converter("PRelu", since=7)
def prelu(ctx: Context, node: Node) -> Any:
    """Slope broadcast to X (unidirectional); floats and ints."""
    x, slope = node.input(0), node.input(1)
    dtype = input_dtype(ctx, node, 0)
    x_shape, slope_shape = ctx.static_shape(x), ctx.static_shape(slope)
    x_rank, slope_rank = ctx.ndim(x), ctx.ndim(slope)
    if x_rank >= 0 and slope_rank > x_rank:
        raise FrontendError(
            f"from_onnx: {node.label}: slope of rank {slope_rank} does not broadcast to X of "
            f"rank {x_rank}"
        )
    if x_shape is not None and slope_shape is not None:
        for s, d in zip(reversed(slope_shape), reversed(x_shape), strict=False):
            if s not in (1, d):
                raise FrontendError(
                    f"from_onnx: {node.label}: slope shape {slope_shape} does not broadcast to "
                    f"X shape {x_shape}"
                )
    return op.where(op.less(x, scalar(0, dtype)), op.multiply(x, slope), x)


@converter("Elu", since=1)
def elu(ctx: Context, node: Node) -> Any:
    """`alpha` supported."""
    x, dtype = _float_input(ctx, node)
    alpha = scalar(node.attr("alpha", 1.0), dtype)
    negative = op.multiply(alpha, op.subtract(op.exp(x), scalar(1, dtype)))
    return op.where(op.less(x, scalar(0, dtype)), ctx.emit(negative), x)


@converter("Selu", since=1)
def selu(ctx: Context, node: Node) -> Any:
    """`alpha` and `gamma` supported."""
    x, dtype = _float_input(ctx, node)
    alpha = node.attr("alpha", 1.67326319217681884765625)
    gamma = node.attr("gamma", 1.05070102214813232421875)
    negative = op.subtract(
        op.multiply(scalar(alpha * gamma, dtype), op.exp(x)), scalar(alpha * gamma, dtype)
    )
    positive = op.multiply(scalar(gamma, dtype), x)
    return op.where(op.greater(x, scalar(0, dtype)), positive, ctx.emit(negative))


@converter("Celu", since=12)
def celu(ctx: Context, node: Node) -> Any:
    """`alpha` supported."""
    x, dtype = _float_input(ctx, node)
    alpha = node.attr("alpha", 1.0)
    if alpha == 0:
        raise FrontendError(f"from_onnx: {node.label}: alpha must be nonzero")
    a = scalar(alpha, dtype)
    zero = scalar(0, dtype)
    curve = op.multiply(a, op.subtract(op.exp(op.divide(x, a)), scalar(1, dtype)))
    return op.add(op.maximum(x, zero), ctx.emit(op.minimum(zero, curve)))


@converter("ThresholdedRelu", since=10)
def thresholded_relu(ctx: Context, node: Node) -> Any:
    """`alpha` supported."""
    x, dtype = _float_input(ctx, node)
    alpha = scalar(node.attr("alpha", 1.0), dtype)
    return op.where(op.greater(x, alpha), x, scalar(0, dtype))


@converter("Sigmoid", since=1)
def sigmoid(ctx: Context, node: Node) -> Any:
    """Float types."""
    return op.sigmoid(node.input(0))


@converter("Tanh", since=1)
def tanh(ctx: Context, node: Node) -> Any:
    """Float types."""
    return op.tanh(node.input(0))


def _hard_sigmoid(ctx: Context, x: Any, dtype: str, alpha: float, beta: float) -> Any:
    linear = op.add(op.multiply(x, scalar(alpha, dtype)), scalar(beta, dtype))
    return op.minimum(op.maximum(ctx.emit(linear), scalar(0, dtype)), scalar(1, dtype))


@converter("HardSigmoid", since=1)
def hard_sigmoid(ctx: Context, node: Node) -> Any:
    """`alpha` and `beta` supported."""
    x, dtype = _float_input(ctx, node)
    return _hard_sigmoid(ctx, x, dtype, node.attr("alpha", 0.2), node.attr("beta", 0.5))


@converter("HardSwish", since=14)
def hard_swish(ctx: Context, node: Node) -> Any:
    """x * HardSigmoid(x) with alpha 1/6, beta 0.5."""
    x, dtype = _float_input(ctx, node)
    return op.multiply(x, ctx.emit(_hard_sigmoid(ctx, x, dtype, 1 / 6, 0.5)))


@converter("Softplus", since=1)
def softplus(ctx: Context, node: Node) -> Any:
    """Float types (overflow-free form)."""
    x, dtype = _float_input(ctx, node)
    return _softplus(ctx, x, dtype)


@converter("Softsign", since=1)
def softsign(ctx: Context, node: Node) -> Any:
    """Float types."""
    x, dtype = _float_input(ctx, node)
    return op.divide(x, op.add(scalar(1, dtype), op.abs(x)))


def _check_gelu(node: Node) -> str | None:
    approximate = node.attr("approximate", "none")
    if approximate not in ("none", "tanh"):
        return f"approximate must be 'none' or 'tanh', got {approximate!r}"
    return None


@converter("Gelu", since=20, check=_check_gelu)
def gelu(ctx: Context, node: Node) -> Any:
    """`approximate` "none" (erf) and "tanh"."""
    x, _ = _float_input(ctx, node)
    if node.attr("approximate", "none") == "tanh":
        return op.nn.gelu_tanh(x)
    return op.nn.gelu(x)


@converter("Mish", since=18)
def mish(ctx: Context, node: Node) -> Any:
    """x * tanh(softplus(x)); float types."""
    x, dtype = _float_input(ctx, node)
    return op.multiply(x, op.tanh(ctx.emit(_softplus(ctx, x, dtype))))


@converter("Shrink", since=9)
def shrink(ctx: Context, node: Node) -> Any:
    """`bias` and `lambd`; floats, and ints when both are whole numbers."""
    x = node.input(0)
    dtype = input_dtype(ctx, node, 0)
    bias, lambd = float(node.attr("bias", 0.0)), float(node.attr("lambd", 0.5))
    if not is_float_dtype(dtype):
        if not (bias.is_integer() and lambd.is_integer()):
            raise node.unsupported(
                f"bias={bias} and lambd={lambd} on a {dtype} input (whole numbers only)"
            )
        if dtype.startswith("uint") and (lambd < 0 or bias < 0):
            raise node.unsupported(f"negative bias or lambd on a {dtype} input")
    zero = scalar(0, dtype)
    if dtype.startswith("uint"):
        # -lambd is not representable: x < -lambd never holds for lambd >= 0.
        below: Any = None
    else:
        below = op.less(x, scalar(-lambd, dtype))
    above = op.where(op.greater(x, scalar(lambd, dtype)), op.subtract(x, scalar(bias, dtype)), zero)
    if below is None:
        return above
    return op.where(below, op.add(x, scalar(bias, dtype)), ctx.emit(above))
