"""ONNX converter: Attention (opsets 23-25), composed of matmul / softmax / masking.

Follows the spec's evaluator step by step: ``Q`` and ``K`` are each scaled by ``sqrt(scale)``,
``softcap`` applies before the mask, the mask (bool or additive, its key axis padded as
masked when shorter) combines with the bottom-right-aligned causal mask, and a query row
whose keys are all masked gives zeros. Grouped-query attention repeats each K/V head for
``q_num_heads / kv_num_heads`` consecutive query heads.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...ir import tir
from ...ir.relax import op
from ._context import Context, Node
from ._registry import converter
from .ops_nn import float_dtype, half_aware_matmul, scalar

_FLOAT_CODES = {1: "float32", 10: "float16", 11: "float64", 16: "bfloat16"}


def _check_attention(node: Node) -> str | None:
    mode = int(node.attr("qk_matmul_output_mode", 0))
    wants_qk = len(node.output_names) > 3 and bool(node.output_names[3])
    if wants_qk and mode not in (0, 1, 2, 3):
        return f"qk_matmul_output_mode={mode} is not 0-3"
    if wants_qk and mode == 0 and float(node.attr("softcap", 0.0)) > 0:
        return "qk_matmul_output_mode=0 with softcap is not supported"
    precision = node.attr("softmax_precision", None)
    if precision is not None and int(precision) not in _FLOAT_CODES:
        return f"softmax_precision={precision} is not a float type"
    for name in ("left_window_size", "right_window_size"):
        if int(node.attr(name, -1)) < -1:
            return f"{name}={node.attr(name)} is below -1"
    return None


def _static(ctx: Context, node: Node, dim: Any, what: str) -> int:
    dim = ctx.simplify(dim)
    if not isinstance(dim, tir.IntImm):
        raise node.unsupported(f"{what} must be static, got {dim}")
    return int(dim.value)


def _dims(node: Node, ctx: Context, x: Any, what: str) -> list[Any]:
    dims = ctx.shape(x)
    if dims is None:
        raise node.unsupported(f"{what} has an unknown shape")
    return dims


def _heads(ctx: Context, node: Node, x: Any, heads: Any, what: str) -> Any:
    """(B, S, H*D) -> (B, H, S, D); a 4-D input passes through."""
    rank = ctx.require_ndim(node, x, what)
    if rank == 4:
        return x
    if rank != 3:
        raise node.unsupported(f"{what} has rank {rank}; 3-D and 4-D are supported")
    if heads is None:
        raise node.unsupported(f"3-D {what} needs the q_num_heads/kv_num_heads attributes")
    dims = _dims(node, ctx, x, what)
    hidden = _static(ctx, node, dims[2], f"the hidden size of {what}")
    split = op.reshape(x, [dims[0], dims[1], int(heads), hidden // int(heads)])
    return ctx.emit(op.permute_dims(ctx.emit(split), [0, 2, 1, 3]))


def _repeat_heads(ctx: Context, node: Node, x: Any, groups: int) -> Any:
    """Repeat every head of (B, H, S, D) ``groups`` times in place (``np.repeat`` on axis 1)."""
    if groups == 1:
        return x
    b, h, s, d = _dims(node, ctx, x, "K/V")
    wide = op.broadcast_to(op.expand_dims(x, 2), [b, h, groups, s, d])
    return ctx.emit(op.reshape(ctx.emit(wide), [b, h * groups, s, d]))


@converter("Attention", since=23, check=_check_attention)
def attention(ctx: Context, node: Node) -> Any:
    """3-/4-D, GQA, masks, causal, past KV, softcap, nonpad_kv_seqlen, windows, all 4 outputs.

    Also scale and softmax_precision; qk_matmul_output_mode 0 with softcap is refused.
    """
    q_in, k_in, v_in = node.input(0), node.input(1), node.input(2)
    dtype = float_dtype(ctx, node, q_in, "Q")
    q = _heads(ctx, node, q_in, node.attr("q_num_heads", None), "Q")
    k = _heads(ctx, node, k_in, node.attr("kv_num_heads", None), "K")
    v = _heads(ctx, node, v_in, node.attr("kv_num_heads", None), "V")
    past_k, past_v = node.optional_input(4), node.optional_input(5)
    if (past_k is None) != (past_v is None):
        raise node.unsupported("past_key and past_value must be given together")
    past_len = 0
    if past_k is not None and past_v is not None:
        past_len = _static(ctx, node, _dims(node, ctx, past_k, "past_key")[2], "past length")
        k = ctx.emit(op.concat([past_k, k], axis=2))
        v = ctx.emit(op.concat([past_v, v], axis=2))
    present_k, present_v = k, v
    qd, kd = _dims(node, ctx, q, "Q"), _dims(node, ctx, k, "K")
    q_heads = _static(ctx, node, qd[1], "the query head count")
    kv_heads = _static(ctx, node, kd[1], "the key/value head count")
    if q_heads % kv_heads:
        raise node.unsupported(f"{q_heads} query heads are not a multiple of {kv_heads}")
    head_size = _static(ctx, node, qd[3], "the head size")
    scale = node.attr("scale", None)
    scale = 1.0 / math.sqrt(head_size) if scale is None else float(scale)
    root = scalar(float(np.asarray(math.sqrt(scale), dtype=dtype)), dtype)
    k = _repeat_heads(ctx, node, k, q_heads // kv_heads)
    v = _repeat_heads(ctx, node, v, q_heads // kv_heads)
    kt = ctx.emit(op.permute_dims(op.multiply(k, root), [0, 1, 3, 2]))
    qk = ctx.emit(half_aware_matmul(ctx, ctx.emit(op.multiply(q, root)), kt))
    raw = qk
    softcap = float(node.attr("softcap", 0.0))
    if softcap > 0:
        cap = scalar(softcap, dtype)
        qk = ctx.emit(op.multiply(op.tanh(op.divide(qk, cap)), cap))
    capped = qk
    bias = _bias(ctx, node, dtype, qd[2], kd[2], past_len)
    if bias is not None:
        qk = ctx.emit(op.add(qk, bias))
    precision = node.attr("softmax_precision", None)
    soft_dtype = dtype if precision is None else _FLOAT_CODES[int(precision)]
    if soft_dtype in ("float16", "bfloat16"):
        soft_dtype = "float32"  # half softmax runs in float32, as in ops_nn's Softmax
    logits = qk if soft_dtype == dtype else ctx.emit(op.astype(qk, soft_dtype))
    probs = ctx.emit(op.nn.softmax(logits, -1))
    if bias is not None:
        # A row whose keys are all masked attends to nothing: zeros, not NaN.
        masked = op.equal(op.max(bias, [-1], keepdims=True), scalar(-math.inf, dtype))
        probs = ctx.emit(op.where(ctx.emit(masked), scalar(0.0, soft_dtype), probs))
    if soft_dtype != dtype:
        probs = ctx.emit(op.astype(probs, dtype))
    y = ctx.emit(half_aware_matmul(ctx, probs, v))
    if ctx.ndim(q_in) == 3:
        yd = _dims(node, ctx, y, "the result")
        y = op.reshape(ctx.emit(op.permute_dims(y, [0, 2, 1, 3])), [yd[0], yd[2], -1])
    mode = int(node.attr("qk_matmul_output_mode", 0))
    qk_out = {0: raw, 1: capped, 2: qk, 3: probs}[mode]
    return [y, present_k, present_v, qk_out][: max(1, len(node.output_names))]


def _bias(
    ctx: Context, node: Node, dtype: str, q_len: Any, kv_len: Any, past_len: int
) -> Any | None:
    """The additive mask (0 / -inf, plus a float mask), broadcastable to (B, H, Sq, Skv)."""
    mask = node.optional_input(3)
    nonpad = node.optional_input(6) if node.opset >= 24 else None
    causal = bool(node.attr("is_causal", 0))
    left = int(node.attr("left_window_size", -1)) if node.opset >= 25 else -1
    right = int(node.attr("right_window_size", -1)) if node.opset >= 25 else -1
    if nonpad is not None and past_len:
        raise node.unsupported("nonpad_kv_seqlen with past_key/past_value is not allowed")
    allowed: Any = None  # a bool tensor (or numpy array) of the positions that attend
    if causal or left >= 0 or right >= 0 or nonpad is not None:
        sq = _static(ctx, node, q_len, "the query length")
        skv = _static(ctx, node, kv_len, "the key length")
        i, j = np.arange(sq)[:, None], np.arange(skv)[None, :]
        if nonpad is None:
            # A query at in-block index i sits at absolute position i + past_len.
            diff = i + past_len - j
            ok = np.ones((sq, skv), dtype=bool)
            if causal:
                ok &= diff >= 0
            if left >= 0:
                ok &= diff <= left
            if right >= 0:
                ok &= -diff <= right
            allowed = ok
        else:
            # Per batch, the query block ends at the last valid key: offset n[b] - sq.
            n = ctx.emit(op.reshape(op.astype(nonpad, "int64"), [-1, 1, 1, 1]))

            def table(values: np.ndarray) -> Any:
                return ctx.const(values.reshape(1, 1, *values.shape).astype("int64"), "int64")

            conds = [op.less(table(np.broadcast_to(j, (1, skv))), n)]  # key j is not padding
            if causal:
                conds.append(op.less_equal(table(j - i + sq), n))
            if left >= 0:
                conds.append(op.less_equal(n, table(left - i + j + sq)))
            if right >= 0:
                conds.append(op.greater_equal(n, table(j - i + sq - right)))
            allowed = ctx.emit(conds[0])
            for cond in conds[1:]:
                allowed = ctx.emit(op.logical_and(allowed, ctx.emit(cond)))
    terms: list[Any] = []
    if allowed is not None:
        if isinstance(allowed, np.ndarray):
            terms.append(ctx.const(np.where(allowed, 0.0, -np.inf).astype(dtype), dtype))
        else:
            terms.append(op.where(allowed, scalar(0.0, dtype), scalar(-math.inf, dtype)))
    if mask is not None:
        terms.append(_mask_bias(ctx, node, mask, dtype, kv_len))
    if not terms:
        return None
    bias = ctx.emit(terms[0])
    for term in terms[1:]:
        bias = ctx.emit(op.add(bias, term))
    return bias


def _mask_bias(ctx: Context, node: Node, mask: Any, dtype: str, kv_len: Any) -> Any:
    """attn_mask as an additive bias; a mask shorter than the keys masks the rest."""
    if ctx.dtype(mask) == "bool":
        mask = ctx.emit(op.where(mask, scalar(0.0, dtype), scalar(-math.inf, dtype)))
    elif ctx.dtype(mask) != dtype:
        mask = ctx.emit(op.astype(mask, dtype))
    dims = _dims(node, ctx, mask, "attn_mask")
    short = ctx.simplify(kv_len - dims[-1])
    if not isinstance(short, tir.IntImm):
        raise node.unsupported("attn_mask's key extent must be statically comparable")
    if int(short.value) > 0:
        tail = op.full([*dims[:-1], int(short.value)], scalar(-math.inf, dtype), dtype)
        mask = ctx.emit(op.concat([mask, ctx.emit(tail)], axis=-1))
    return mask
