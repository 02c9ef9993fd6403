"""Linear algebra: ``matmul`` (numpy semantics, batched with broadcast batch dims) and
``linear`` (``x @ w.T + b``)."""

from __future__ import annotations

from ....runtime.dtype import DataType
from ...expr import PrimExpr
from .._base import RelaxExpr
from ..expr import Call
from ..struct_info import StructInfo, TensorStructInfo
from ._common import (
    Dims,
    broadcast_extent,
    broadcast_shapes,
    dims_text,
    dtype_attr,
    make_call,
    prove_equal,
    prove_not_equal,
    tensor,
    unify_dtypes,
)
from .registry import InferContext, register_op


def _matmul_dtype(
    ctx: InferContext, infos: list[TensorStructInfo], out_dtype: str | None
) -> DataType | None:
    if out_dtype is not None:
        return DataType(out_dtype)
    return unify_dtypes(ctx, infos)


def _matmul_shape(
    ctx: InferContext,
    a: TensorStructInfo,
    b: TensorStructInfo,
    a_dims: Dims,
    b_dims: Dims,
    b_text: str,
) -> list[PrimExpr] | None:
    """The result extents of ``a_dims @ b_dims`` (numpy rules); ``b_text`` names b's shape.

    None when two batch extents cannot be decided statically (only the rank is known then).
    """
    if not a_dims or not b_dims:
        raise ctx.error(f"operands must have rank >= 1, got shapes {dims_text(a)} and {b_text}")
    a_vec, b_vec = len(a_dims) == 1, len(b_dims) == 1
    k_a = a_dims[-1]
    k_b = b_dims[0] if b_vec else b_dims[-2]
    mismatch = (
        f"operands with shapes {dims_text(a)} and {b_text} do not match: the reduction "
        f"dimension is {k_a} vs {k_b}"
    )
    if not prove_equal(ctx, k_a, k_b) and prove_not_equal(ctx, k_a, k_b):
        raise ctx.error(mismatch)
    a_batch = a_dims[:-2] if not a_vec else ()
    b_batch = b_dims[:-2] if not b_vec else ()
    batch: list[PrimExpr] = []
    length = max(len(a_batch), len(b_batch))
    for position in range(length, 0, -1):
        da = a_batch[-position] if position <= len(a_batch) else None
        db = b_batch[-position] if position <= len(b_batch) else None
        if da is None or db is None:
            batch.append(da if db is None else db)  # type: ignore[arg-type]
            continue
        dim = broadcast_extent(
            ctx,
            da,
            db,
            f"operands with shapes {dims_text(a)} and {b_text} have batch dimensions "
            f"that cannot broadcast: {da} vs {db}",
        )
        if dim is None:
            return None
        batch.append(dim)
    out = batch
    if not a_vec:
        out.append(a_dims[-2])
    if not b_vec:
        out.append(b_dims[-1])
    return out


def _matmul_ndim(a_ndim: int, b_ndim: int) -> int:
    if a_ndim == -1 or b_ndim == -1:
        return -1
    batch = max(a_ndim - 2, b_ndim - 2, 0)
    return batch + (a_ndim > 1) + (b_ndim > 1)


def _infer_matmul(call: Call, ctx: InferContext) -> StructInfo:
    a = ctx.tensor_arg(call, 0, "x1")
    b = ctx.tensor_arg(call, 1, "x2")
    dtype = _matmul_dtype(ctx, [a, b], ctx.attr(call, "out_dtype"))
    if a.ndim == 0 or b.ndim == 0:
        raise ctx.error(
            f"operands must have rank >= 1, got shapes {dims_text(a)} and {dims_text(b)}"
        )
    a_dims, b_dims = a.shape_values, b.shape_values
    if a_dims is None or b_dims is None:
        return tensor(None, dtype, _matmul_ndim(a.ndim, b.ndim), like=a)
    out = _matmul_shape(ctx, a, b, a_dims, b_dims, dims_text(b))
    if out is None:
        return tensor(None, dtype, _matmul_ndim(a.ndim, b.ndim), like=a)
    return tensor(out, dtype, like=a)


def _infer_linear(call: Call, ctx: InferContext) -> StructInfo:
    x = ctx.tensor_arg(call, 0, "x")
    w = ctx.tensor_arg(call, 1, "weight")
    infos = [x, w]
    bias = ctx.tensor_arg(call, 2, "bias") if len(call.args) == 3 else None
    if bias is not None:
        infos.append(bias)
    dtype = _matmul_dtype(ctx, infos, ctx.attr(call, "out_dtype"))
    if w.ndim not in (-1, 1, 2):
        raise ctx.error(f"weight must have rank 1 or 2, got shape {dims_text(w)}")
    if x.ndim == 0:
        raise ctx.error(f"x must have rank >= 1, got shape {dims_text(x)}")
    x_dims, w_dims = x.shape_values, w.shape_values
    if x_dims is None or w_dims is None:
        ndim = _matmul_ndim(x.ndim, w.ndim)
        if bias is not None and ndim != -1 and bias.ndim != -1:
            ndim = max(ndim, bias.ndim)
        elif bias is not None:
            ndim = -1
        return tensor(None, dtype, ndim, like=x)
    # weight is (N, K): x @ weight.T multiplies by the (K, N) transpose.
    transposed = tuple(reversed(w_dims))
    out = _matmul_shape(ctx, x, w, x_dims, transposed, f"{dims_text(w)} (transposed)")
    if out is None:
        # Unreachable in practice (a rank-2 weight has no batch dims), kept for the type.
        return tensor(None, dtype, _matmul_ndim(x.ndim, w.ndim), like=x)
    result = tensor(out, dtype, like=x)
    if bias is None:
        return result
    shape = broadcast_shapes(ctx, [result, bias])
    if shape is None:
        return tensor(None, dtype, -1 if bias.ndim == -1 else max(len(out), bias.ndim), like=x)
    return tensor(shape, dtype, like=x)


register_op(
    "relax.matmul",
    num_inputs=2,
    infer=_infer_matmul,
    attrs={"out_dtype": "the result dtype; None means the operands' dtype"},
    doc="numpy matmul: 1-d, 2-d and batched with broadcast batch dims",
)
register_op(
    "relax.linear",
    num_inputs=(2, 3),
    infer=_infer_linear,
    attrs={"out_dtype": "the result dtype; None means the operands' dtype"},
    doc="x @ weight.T + bias (bias optional)",
)


def matmul(x1: RelaxExpr, x2: RelaxExpr, out_dtype: str | DataType | None = None) -> Call:
    """Matrix product with numpy semantics (1-d operands, broadcast batch dims)."""
    return make_call("relax.matmul", [x1, x2], {"out_dtype": dtype_attr("relax.matmul", out_dtype)})


def linear(
    data: RelaxExpr,
    weight: RelaxExpr,
    bias: RelaxExpr | None = None,
    out_dtype: str | DataType | None = None,
) -> Call:
    """``data @ weight.T + bias``: a fully connected layer with weight laid out (N, K).

    TVM's builder expands this into ``matmul`` + ``permute_dims`` + ``add`` at once; we keep
    one ``relax.linear`` call so that inference and legalization see the whole layer.
    """
    args = [data, weight] if bias is None else [data, weight, bias]
    return make_call("relax.linear", args, {"out_dtype": dtype_attr("relax.linear", out_dtype)})


__all__ = ["linear", "matmul"]
