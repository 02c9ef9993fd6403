"""ONNX converters: nn operators — MatMul, Gemm, Einsum, the softmax family, Dropout, TopK.

The rest of the nn family: Conv/ConvTranspose in :mod:`.ops_nn_conv`, pools in
:mod:`.ops_nn_pool` (MaxPool's Indices in :mod:`.ops_nn_pool_argmax`), normalizations in
:mod:`.ops_nn_norm`, Resize/Upsample in :mod:`.ops_nn_resize` (its TE kernel in
:mod:`.ops_nn_resize_kernel`), quantization and the integer products in :mod:`.ops_nn_quant`,
Attention in :mod:`.ops_nn_attention`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import FrontendError
from ...ir import tir
from ...ir.relax import PrimValue, op
from ._context import Context, Node
from ._registry import converter


def normal_axis(node: Node, axis: int, rank: int, what: str = "axis") -> int:
    """``axis`` in ``[0, rank)``; an :class:`OpNotImplemented` naming the node when outside."""
    if not -rank <= axis < rank:
        raise node.unsupported(f"{what}={axis} is outside the input's rank {rank}")
    return axis + rank if axis < 0 else axis


def scalar(value: float, dtype: str) -> Any:
    """A Relax scalar constant of ``dtype``."""
    return Context.const(value, dtype)


def float_dtype(ctx: Context, node: Node, expr: Any, what: str = "input") -> str:
    """The dtype of ``expr``; refused unless it is a float type."""
    dtype = ctx.dtype(expr)
    if dtype is None or not dtype.startswith(("float", "bfloat")):
        raise node.unsupported(f"{what} must have a float dtype, got {dtype}")
    return dtype


_HALF = ("float16", "bfloat16")


def half_aware_matmul(ctx: Context, a: Any, b: Any) -> Any:
    """``a @ b``; half-precision products accumulate in float32 (as onnxruntime and numpy do)
    and round once at the end."""
    dtype = ctx.dtype(a)
    if dtype in _HALF and ctx.dtype(b) == dtype:
        return op.astype(ctx.emit(op.matmul(a, b, out_dtype="float32")), dtype)
    return op.matmul(a, b)


def _upcast_half(ctx: Context, x: Any, fn: Any) -> Any:
    """``fn(x)`` computed in float32 when ``x`` is half precision, cast back."""
    dtype = ctx.dtype(x)
    if dtype not in _HALF:
        return fn(x)
    return op.astype(ctx.emit(fn(ctx.emit(op.astype(x, "float32")))), dtype)


# ---- matrix products --------------------------------------------------------------------------
@converter("MatMul", since=1)
def matmul(ctx: Context, node: Node) -> Any:
    """Numpy semantics (batch broadcasting, 1-D promotion); half types accumulate in float32."""
    return half_aware_matmul(ctx, node.input(0), node.input(1))


@converter("Gemm", since=1)
def gemm(ctx: Context, node: Node) -> Any:
    """alpha * A' @ B' + beta * C with transA/transB; C optional, broadcast to (M, N)."""
    a, b = node.input(0), node.input(1)
    for name, value in (("A", a), ("B", b)):
        if ctx.ndim(value) not in (-1, 2):
            raise node.unsupported(f"input {name} must be 2-D, got rank {ctx.ndim(value)}")
    alpha = float(node.attr("alpha", 1.0))
    beta = float(node.attr("beta", 1.0))
    dtype = ctx.dtype(a) or "float32"
    is_float = dtype.startswith(("float", "bfloat"))
    for label, factor in (("alpha", alpha), ("beta", beta)):
        if not is_float and factor != int(factor):
            raise node.unsupported(f"{label}={factor} is not integral for {dtype} inputs")
    if node.attr("transA", 0):
        a = _transposed(ctx, a)
    if node.attr("transB", 0):
        b = _transposed(ctx, b)
    out = half_aware_matmul(ctx, a, b)
    if alpha != 1.0:
        out = op.multiply(out, scalar(alpha, dtype))
    c = node.optional_input(2)
    if c is not None and beta != 0.0:
        if beta != 1.0:
            c = op.multiply(c, scalar(beta, dtype))
        out = op.add(out, c)
    return out


def _transposed(ctx: Context, matrix: Any) -> Any:
    """``matrix.T``: for a constant (a weight, the common case of ``transB=1``) transposed
    once here, so the compiled model does not copy the weight on every call."""
    value = ctx.known(matrix)
    if value is not None and value.dtype != object:
        return ctx.const(np.ascontiguousarray(value.T), ctx.dtype(matrix))
    return op.permute_dims(matrix, [1, 0])


@converter("Einsum", since=12)
def einsum(ctx: Context, node: Node) -> Any:
    """Einstein summation over the given equation (explicit or implicit output)."""
    equation = node.attr("equation")
    if isinstance(equation, bytes):
        equation = equation.decode()
    operands = [node.input(i) for i in range(len(node.inputs))]
    return op.einsum(operands, str(equation).replace(" ", ""))


# ---- softmax family ---------------------------------------------------------------------------
def _coerced_2d(ctx: Context, node: Node, fn: Any) -> Any:
    """Opset < 13 semantics: flatten to 2-D at ``axis`` (default 1), apply ``fn`` on the last
    axis of that, reshape back."""
    x = node.input(0)
    rank = ctx.require_ndim(node, x, "input")
    axis = normal_axis(node, int(node.attr("axis", 1)), max(rank, 1))
    if axis == rank - 1:
        return fn(x, rank - 1, ctx.shape(x))
    dims = ctx.shape(x)
    if dims is None:
        raise node.unsupported("the input shape is unknown (needed to coerce it to 2-D)")
    rows: Any = tir.IntImm("int64", 1)
    cols: Any = tir.IntImm("int64", 1)
    for d in dims[:axis]:
        rows = rows * d
    for d in dims[axis:]:
        cols = cols * d
    flat = ctx.emit(op.reshape(x, [ctx.simplify(rows), ctx.simplify(cols)]))
    return op.reshape(ctx.emit(fn(flat, 1, [rows, cols])), dims)


def _hardmax(ctx: Context, node: Node, x: Any, axis: int, dims: Any) -> Any:
    dtype = ctx.dtype(x) or "float32"
    if dims is None or not isinstance(ctx.simplify(dims[axis]), tir.IntImm):
        raise node.unsupported("Hardmax needs a static extent along its axis")
    depth = int(ctx.simplify(dims[axis]).value)
    index = ctx.emit(op.argmax(x, axis=axis))
    on = PrimValue(tir.const(1, dtype))
    off = PrimValue(tir.const(0, dtype))
    return op.one_hot(index, on, off, depth, axis)


@converter("Softmax", since=1)
def softmax_v1(ctx: Context, node: Node) -> Any:
    """Coerced to 2-D at axis (default 1), as opsets 1-12 define it."""
    return _coerced_2d(
        ctx, node, lambda x, axis, _: _upcast_half(ctx, x, lambda v: op.nn.softmax(v, axis))
    )


@converter("Softmax", since=13)
def softmax(ctx: Context, node: Node) -> Any:
    """Along axis (default -1); half types computed in float32."""
    axis = int(node.attr("axis", -1))
    return _upcast_half(ctx, node.input(0), lambda v: op.nn.softmax(v, axis))


@converter("LogSoftmax", since=1)
def log_softmax_v1(ctx: Context, node: Node) -> Any:
    """Coerced to 2-D at axis (default 1), as opsets 1-12 define it."""
    return _coerced_2d(
        ctx, node, lambda x, axis, _: _upcast_half(ctx, x, lambda v: op.nn.log_softmax(v, axis))
    )


@converter("LogSoftmax", since=13)
def log_softmax(ctx: Context, node: Node) -> Any:
    """Along axis (default -1); half types computed in float32."""
    axis = int(node.attr("axis", -1))
    return _upcast_half(ctx, node.input(0), lambda v: op.nn.log_softmax(v, axis))


@converter("Hardmax", since=1)
def hardmax_v1(ctx: Context, node: Node) -> Any:
    """Coerced to 2-D at axis (default 1); needs a static flattened extent."""
    return _coerced_2d(ctx, node, lambda x, axis, dims: _hardmax(ctx, node, x, axis, dims))


@converter("Hardmax", since=13)
def hardmax(ctx: Context, node: Node) -> Any:
    """One-hot of the first maximum along axis (default -1); needs a static extent there."""
    x = node.input(0)
    rank = ctx.require_ndim(node, x, "input")
    axis = normal_axis(node, int(node.attr("axis", -1)), rank)
    return _hardmax(ctx, node, x, axis, ctx.shape(x))


# ---- dropout ----------------------------------------------------------------------------------
def _check_dropout(node: Node) -> str | None:
    if node.opset < 7 and node.attr("is_test", 0) == 0:
        return "is_test=0 (training mode) is not supported; inference only"
    return None


@converter("Dropout", since=1, check=_check_dropout)
def dropout(ctx: Context, node: Node) -> Any:
    """Inference: output = input, mask all true; training_mode must be known false."""
    x = node.input(0)
    training = node.optional_input(2) if node.opset >= 12 else None
    if training is not None:
        value = ctx.known(training)
        if value is None:
            raise node.unsupported("training_mode is not known at import time")
        if bool(value.reshape(-1)[0]):
            ratio = ctx.known(node.optional_input(1))
            # Training with ratio 0 drops nothing: the identity is exact.
            if ratio is None or float(ratio.reshape(-1)[0]) != 0.0:
                raise node.unsupported("training_mode=true (training dropout) is not supported")
    outputs: list[Any] = [x]
    if len(node.output_names) > 1 and node.output_names[1]:
        mask_dtype = "bool" if node.opset >= 10 else (ctx.dtype(x) or "float32")
        outputs.append(op.ones_like(x, mask_dtype))
    return outputs


# ---- top-k ------------------------------------------------------------------------------------
@converter("TopK", since=1)
def topk(ctx: Context, node: Node) -> Any:
    """k largest/smallest along axis, sorted, ties to the lower index; K known or run-time."""
    x = node.input(0)
    if node.opset < 10:
        k = int(node.attr("k"))
    else:
        known = ctx.known(node.input(1))
        if known is None:
            return _topk_runtime(ctx, node, x)
        flat = known.reshape(-1)
        if flat.size != 1 or not isinstance(flat[0], (int, np.integer)):
            raise node.unsupported("input K must be a known integer")
        k = int(flat[0])
    if k < 0:
        raise node.unsupported(f"K={k} is negative")
    rank = ctx.require_ndim(node, x, "input")
    axis = normal_axis(node, int(node.attr("axis", -1)), rank)
    largest = bool(node.attr("largest", 1))
    if k == 0:
        raise node.unsupported("K=0 (an empty result) is not supported")
    static = ctx.static_shape(x)
    extent = None if static is None else static[axis]
    if extent is not None and k > extent:
        raise FrontendError(f"from_onnx: {node.label}: K={k} exceeds the axis extent {extent}")
    # sorted=0 leaves the order to the implementation; a sorted result is one valid order.
    return op.topk(x, k, axis, "both", largest, "int64")


def _topk_runtime(ctx: Context, node: Node, x: Any) -> Any:
    """TopK with K known only when the model runs: a stable full sort, its first K entries
    (K clamped to the axis extent), and a gather of the values."""
    from ...ir import op as sop
    from ...ir.tir import te
    from .ops_shape_util import emit_kernel, runtime_dims, scalar_of

    rank = ctx.require_ndim(node, x, "input")
    axis = normal_axis(node, int(node.attr("axis", -1)), rank)
    largest = bool(node.attr("largest", 1)) if node.opset >= 11 else True
    dims = ctx.shape(x)
    if dims is None:
        raise node.unsupported("input X has an unknown shape")

    def count(k: Any, data: Any) -> list[Any]:
        extent = data.shape[axis]
        return [sop.max_expr(sop.min_expr(scalar_of(k), extent), tir.const(0, "int64"))]

    (k_dim,) = runtime_dims(ctx, node, 1, count, [node.input(1), x])
    order = ctx.emit(op.argsort(x, axis, descending=largest, dtype="int64"))
    out_shape = [*dims[:axis], k_dim, *dims[axis + 1 :]]

    def head(sorted_index: Any) -> Any:
        return te.compute(out_shape, lambda *i: sorted_index[i], name="topk_head")

    indices = emit_kernel(ctx, head, order, name="onnx_topk_head")
    return [op.gather_elements(x, indices, axis), indices]
