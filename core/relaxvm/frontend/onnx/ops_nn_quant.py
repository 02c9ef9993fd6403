"""ONNX converters: QuantizeLinear and DequantizeLinear (per-tensor and per-axis).

Blocked quantization (``block_size``) is composed of elementwise ops. float8 (E4M3FN, E5M2)
works per tensor and per axis with a zero (or absent) zero point and ``saturate=1``; the FNUZ
float8 types, int4 and ``precision`` are refused.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import FrontendError
from ...ir.relax import op
from ...ir.relax.op.manipulate_extra import repeat
from ._context import Context, Node
from ._registry import converter

#: TensorProto element type codes of the integer types relaxvm's quantize ops handle.
_QUANT_CODES = {2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32"}
_FLOAT8_CODES = {17: "float8_e4m3fn", 19: "float8_e5m2"}
_FLOAT_CODES = {1: "float32", 10: "float16"}


def _check_qdq(node: Node) -> str | None:
    if int(node.attr("block_size", 0)) < 0:
        return f"block_size={node.attr('block_size')} is negative"
    code = node.attr("output_dtype", 0)
    if code:
        quantize = node.op_type == "QuantizeLinear"
        table = {**_QUANT_CODES, **_FLOAT8_CODES} if quantize else _FLOAT_CODES
        if int(code) not in table:
            return f"output_dtype={code} is not one of the supported types ({', '.join(table.values())})"
    if node.attr("precision", 0):
        return f"precision={node.attr('precision')} is not supported"
    return None


def _param(ctx: Context, node: Node, value: Any, what: str) -> Any:
    """A scale/zero point as a scalar or a 1-D per-axis tensor."""
    rank = ctx.ndim(value)
    if rank > 1:
        raise node.unsupported(f"{what} has rank {rank}; only scalars and 1-D are (no blocks)")
    if ctx.static_shape(value) == [1]:
        # A one-element 1-D parameter means the same for every element: make it a scalar.
        return ctx.emit(op.reshape(value, []))
    return value


def _axis(ctx: Context, node: Node, data: Any, scale: Any) -> int:
    """The per-axis axis (normalized); -1 when the scale is a scalar."""
    if ctx.ndim(scale) == 0:
        return -1
    rank = ctx.require_ndim(node, data, "input x")
    axis = int(node.attr("axis", 1))
    if not -rank <= axis < rank:
        raise node.unsupported(f"axis={axis} is outside the input's rank {rank}")
    return axis % rank


def _zero(dtype: str) -> Any:
    return Context.const(np.zeros((), dtype=dtype), dtype)


def _float8_zero_point(ctx: Context, node: Node, zero_point: Any, what: str) -> Any:
    """An int8 zero of a float8 zero point's shape (relax's qdq ops take integer zero
    points); a zero point that is not known to be all zeros is refused."""
    if _blocked(node):
        raise node.unsupported("blocked quantization with a float8 type is not supported")
    if zero_point is None:
        return _zero("int8")
    value = ctx.known(zero_point)
    if value is None or np.any(np.asarray(value).astype(np.float32) != 0):
        raise node.unsupported(f"{what} is a float8 zero point that is not a known zero")
    return Context.const(np.zeros(np.shape(value), dtype="int8"), "int8")


@converter("QuantizeLinear", since=10, check=_check_qdq)
def quantize_linear(ctx: Context, node: Node) -> Any:
    """Per-tensor, per-axis, blocked; to (u)int8/(u)int16/int32, or float8 (not blocked)."""
    x = node.input(0)
    if not (ctx.dtype(x) or "").startswith(("float", "bfloat")):
        raise node.unsupported(f"input x of dtype {ctx.dtype(x)} (only float inputs are)")
    scale = node.input(1) if _blocked(node) else _param(ctx, node, node.input(1), "y_scale")
    axis = -1 if _blocked(node) else _axis(ctx, node, x, scale)
    zero_point = node.optional_input(2)
    code = int(node.attr("output_dtype", 0))
    if zero_point is not None:
        out_dtype = ctx.dtype(zero_point) or ""
    else:
        out_dtype = {**_QUANT_CODES, **_FLOAT8_CODES}.get(code, "uint8")
    if out_dtype in _FLOAT8_CODES.values():
        if not int(node.attr("saturate", 1)):
            raise node.unsupported("saturate=0 is not supported (relax.quantize saturates)")
        zero_point = _float8_zero_point(ctx, node, zero_point, "y_zero_point")
        zero_point = _param(ctx, node, zero_point, "y_zero_point")
        return op.quantize(x, scale, zero_point, axis, out_dtype)
    if out_dtype not in _QUANT_CODES.values():
        raise node.unsupported(f"output type {out_dtype} is not supported")
    if zero_point is None:
        zero_point = _zero(out_dtype)
    if _blocked(node):
        scale_full = _expand_blocks(ctx, node, node.input(1), x)
        zp_full = _expand_blocks(ctx, node, zero_point, x) if ctx.ndim(zero_point) else zero_point
        dtype = ctx.dtype(x) or "float32"
        # round half to even, add the zero point, saturate: all exact in float32 for the
        # 8- and 16-bit types.
        scaled = op.round(op.divide(x, op.astype(scale_full, dtype)))
        shifted = op.add(ctx.emit(scaled), op.astype(zp_full, dtype))
        info = np.iinfo(out_dtype)
        return op.astype(op.clip(ctx.emit(shifted), int(info.min), int(info.max)), out_dtype)
    zero_point = _param(ctx, node, zero_point, "y_zero_point")
    return op.quantize(x, scale, zero_point, axis, out_dtype)


@converter("DequantizeLinear", since=10, check=_check_qdq)
def dequantize_linear(ctx: Context, node: Node) -> Any:
    """Per-tensor, per-axis, blocked; (u)int8/(u)int16/int32 or float8 (not blocked) in."""
    x = node.input(0)
    in_dtype = ctx.dtype(x) or ""
    if in_dtype not in (*_QUANT_CODES.values(), *_FLOAT8_CODES.values()):
        raise node.unsupported(f"input x of dtype {in_dtype} is not supported")
    scale = node.input(1) if _blocked(node) else _param(ctx, node, node.input(1), "x_scale")
    axis = -1 if _blocked(node) else _axis(ctx, node, x, scale)
    out_dtype = ctx.dtype(scale) or "float32"
    code = int(node.attr("output_dtype", 0))
    if code:
        out_dtype = _FLOAT_CODES[code]
    if out_dtype not in _FLOAT_CODES.values():
        raise node.unsupported(f"scale type {out_dtype} is not supported (float32/float16 are)")
    zero_point = node.optional_input(2)
    if in_dtype in _FLOAT8_CODES.values():
        zero_point = _float8_zero_point(ctx, node, zero_point, "x_zero_point")
    elif zero_point is None:
        zero_point = _zero(in_dtype)
    if _blocked(node):
        if in_dtype == "int32":
            raise node.unsupported("blocked dequantization of int32 is not supported")
        scale_full = _expand_blocks(ctx, node, scale, x)
        zp_full = _expand_blocks(ctx, node, zero_point, x) if ctx.ndim(zero_point) else zero_point
        # x - zero_point is exact in float32 for the 8- and 16-bit types.
        diff = op.subtract(op.astype(x, "float32"), op.astype(zp_full, "float32"))
        out = op.multiply(ctx.emit(diff), op.astype(scale_full, "float32"))
        return out if out_dtype == "float32" else op.astype(ctx.emit(out), out_dtype)
    zero_point = _param(ctx, node, zero_point, "x_zero_point")
    return op.dequantize(x, scale, zero_point, axis, out_dtype)


def _blocked(node: Node) -> bool:
    return int(node.attr("block_size", 0)) > 0


def _expand_blocks(ctx: Context, node: Node, param: Any, x: Any) -> Any:
    """A blocked scale/zero point (``x``'s shape with ``ceil(D / block)`` along ``axis``)
    repeated ``block`` times along ``axis`` and trimmed to ``x``'s extent ``D``."""
    block = int(node.attr("block_size"))
    rank = ctx.require_ndim(node, x, "input x")
    if ctx.ndim(param) != rank:
        raise FrontendError(
            f"from_onnx: {node.label}: a blocked scale/zero point must have rank {rank}"
        )
    axis = int(node.attr("axis", 1))
    if not -rank <= axis < rank:
        raise node.unsupported(f"axis={axis} is outside the input's rank {rank}")
    axis %= rank
    dims = ctx.shape(x)
    if dims is None:
        raise node.unsupported("input x has an unknown shape")
    wide = ctx.emit(repeat(param, block, axis))
    end: Any = dims[axis]
    return ctx.emit(op.strided_slice(wide, [axis], [0], [end]))


# ---- integer products -------------------------------------------------------------------------
def _minus_zero_point(ctx: Context, value: Any, zero_point: Any, shape: list[int] | None) -> Any:
    """``int32(value) - int32(zero_point)``, the zero point reshaped to ``shape`` when given."""
    wide = ctx.emit(op.astype(value, "int32"))
    if zero_point is None:
        return wide
    zp = op.astype(zero_point, "int32")
    if shape is not None and ctx.ndim(zero_point) == 1:
        zp = op.reshape(zp, shape)
    return ctx.emit(op.subtract(wide, ctx.emit(zp)))


@converter("MatMulInteger", since=10)
def matmul_integer(ctx: Context, node: Node) -> Any:
    """int32 (A - a_zero_point) @ (B - b_zero_point); per-row a / per-column b zero points."""
    a, b = node.input(0), node.input(1)
    a_rows = _minus_zero_point(ctx, a, node.optional_input(2), [-1, 1])
    b_cols = _minus_zero_point(ctx, b, node.optional_input(3), None)
    return op.matmul(a_rows, b_cols, out_dtype="int32")


@converter("ConvInteger", since=10)
def conv_integer(ctx: Context, node: Node) -> Any:
    """int32 Conv of (x - x_zero_point) and (w - w_zero_point, per output channel or scalar)."""
    from .ops_nn_conv import conv

    x, w = node.input(0), node.input(1)
    rank = ctx.require_ndim(node, w, "input w")
    shifted_x = _minus_zero_point(ctx, x, node.optional_input(2), None)
    shifted_w = _minus_zero_point(ctx, w, node.optional_input(3), [-1] + [1] * (rank - 1))
    # Conv's attributes (pads, strides, auto_pad, group, ...) apply as they are.
    return conv(ctx, Node(
        "Conv", node.name, node.domain, node.opset, [shifted_x, shifted_w], node.input_names[:2],
        node.output_names, node.attrs, node.proto,
    ))  # fmt: skip
