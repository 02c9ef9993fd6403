"""Scaled dot-product attention (``relax.nn.attention``) in TVM's BSNH layout.

``query`` is ``(B, N, H, D)`` (batch, query length, heads, head dim), ``key`` is
``(B, M, H, D)``, ``value`` is ``(B, M, H, Dv)`` and the result ``(B, N, H, Dv)``.
"""

from __future__ import annotations

import math

from ....runtime.dtype import DataTypeCode
from ...expr import IntImm, PrimExpr
from .._base import RelaxExpr
from ..expr import Call
from ..struct_info import StructInfo, TensorStructInfo
from ._common import dims_text, make_call, prove_equal, prove_not_equal, tensor, unify_dtypes
from .registry import InferContext, OpError, register_op

__all__ = ["attention", "attention_var_len"]

#: The causal mask kinds: the diagonal starts at the top-left corner of the (N, M) score
#: matrix, or ends at its bottom-right corner (offset M - N).
CAUSAL_MASKS = ("TopLeft", "BottomRight")


def _check_dim(
    ctx: InferContext,
    a: PrimExpr,
    b: PrimExpr,
    what: str,
    infos: tuple[tuple[str, TensorStructInfo], tuple[str, TensorStructInfo]],
) -> None:
    if not prove_equal(ctx, a, b) and prove_not_equal(ctx, a, b):
        (na, ia), (nb, ib) = infos
        raise ctx.error(
            f"{what} differs: {a} in {na} with shape {dims_text(ia)} vs {b} in {nb} with shape "
            f"{dims_text(ib)}"
        )


def _infer_attention(call: Call, ctx: InferContext) -> StructInfo:
    names = ("query", "key", "value", "bias")
    infos = [ctx.tensor_arg(call, i, names[i]) for i in range(len(call.args))]
    q, k, v = infos[:3]
    for name, info in zip(names[:3], infos[:3], strict=True):
        if info.ndim not in (-1, 4):
            raise ctx.error(
                f"{name} must have rank 4 (batch, sequence, heads, head dim), got shape "
                f"{dims_text(info)}"
            )
    dtype = unify_dtypes(ctx, infos, "query, key, value" + (" and bias" if len(infos) > 3 else ""))
    if dtype is not None and dtype.code not in (DataTypeCode.FLOAT, DataTypeCode.BFLOAT):
        raise ctx.type_error(f"query, key and value must have a float dtype, got {dtype}")
    qs, ks, vs = q.shape_values, k.shape_values, v.shape_values
    if qs is None or ks is None or vs is None:
        return tensor(None, dtype, 4, like=q)
    pq, pk, pv = ("query", q), ("key", k), ("value", v)
    _check_dim(ctx, qs[0], ks[0], "the batch size", (pq, pk))
    _check_dim(ctx, qs[0], vs[0], "the batch size", (pq, pv))
    _check_dim(ctx, qs[2], ks[2], "the number of heads", (pq, pk))
    _check_dim(ctx, qs[2], vs[2], "the number of heads", (pq, pv))
    _check_dim(ctx, qs[3], ks[3], "the head dim", (pq, pk))
    _check_dim(ctx, ks[1], vs[1], "the key/value sequence length", (pk, pv))
    if len(infos) > 3:
        bias = infos[3]
        # (B, M), (B, N, M) or (B, H, N, M): the score matrix's (B, H, N, M) without the
        # broadcast axes, as TVM's legalization reshapes it.
        expected = {2: [qs[0], ks[1]], 3: [qs[0], qs[1], ks[1]], 4: [qs[0], qs[2], qs[1], ks[1]]}
        if bias.ndim not in (-1, 2, 3, 4):
            raise ctx.error(
                f"bias must have rank 2, 3 or 4 ((B, M), (B, N, M) or (B, H, N, M)), got shape "
                f"{dims_text(bias)}"
            )
        bs = bias.shape_values
        if bs is not None:
            for got, want in zip(bs, expected[len(bs)], strict=True):
                if not prove_equal(ctx, got, want) and prove_not_equal(ctx, got, want):
                    shape = ", ".join(map(str, expected[len(bs)]))
                    raise ctx.error(
                        f"bias with shape {dims_text(bias)} does not match the scores: expected "
                        f"({shape})"
                    )
    return tensor([qs[0], qs[1], qs[2], vs[3]], dtype, like=q)


#: The attributes of ``relax.nn.attention`` (and of ``relax.nn.attention_bias``).
ATTENTION_ATTRS = {
    "scale": "score scale; None means 1 / sqrt(head dim)",
    "causal_mask": '"TopLeft", "BottomRight" or None',
    "window_size": "sliding window (keys per query) with a causal mask, or None",
}

register_op(
    "relax.nn.attention",
    num_inputs=(3, 4),
    infer=_infer_attention,
    attrs=ATTENTION_ATTRS,
    doc="scaled dot-product attention, BSNH layout",
)


def attention(
    query: RelaxExpr,
    key: RelaxExpr,
    value: RelaxExpr,
    bias: RelaxExpr | None = None,
    scale: float | None = None,
    causal_mask: str | None = None,
    window_size: int | None = None,
) -> Call:
    """``softmax(query @ key^T * scale + bias, masked) @ value`` per batch and head.

    Parameters
    ----------
    query, key, value : RelaxExpr
        ``(B, N, H, D)``, ``(B, M, H, D)`` and ``(B, M, H, Dv)`` float tensors.
    bias : RelaxExpr, optional
        Added to the scores: ``(B, M)``, ``(B, N, M)`` or ``(B, H, N, M)``.
    scale : float, optional
        The score scale; by default ``1 / sqrt(D)``.
    causal_mask : {"TopLeft", "BottomRight"}, optional
        Query ``i`` sees keys ``j <= i`` (TopLeft) or ``j <= i + M - N`` (BottomRight).
    window_size : int, optional
        With a causal mask, query ``i`` sees only the ``window_size`` latest of those keys.

    Returns
    -------
    Call
        A ``relax.nn.attention`` call of shape ``(B, N, H, Dv)``.
    """
    name = "relax.nn.attention"
    args = [query, key, value] if bias is None else [query, key, value, bias]
    return make_call(name, args, _attention_attrs(name, scale, causal_mask, window_size))


def _attention_attrs(
    name: str, scale: float | None, causal_mask: str | None, window_size: int | None
) -> dict[str, object]:
    """The checked ``scale``, ``causal_mask`` and ``window_size`` attributes."""
    if causal_mask is not None and causal_mask not in CAUSAL_MASKS:
        raise OpError(
            f"{name}: causal_mask must be 'TopLeft', 'BottomRight' or None, got {causal_mask!r}"
        )
    if scale is not None:
        if isinstance(scale, bool) or not isinstance(scale, (int, float)):
            raise OpError(f"{name}: scale must be a number or None, got {scale!r}")
        if not math.isfinite(scale):
            raise OpError(f"{name}: scale must be finite, got {scale!r}")
        scale = float(scale)
    if window_size is not None:
        if isinstance(window_size, bool) or not isinstance(window_size, int) or window_size < 1:
            raise OpError(
                f"{name}: window_size must be a positive int or None, got {window_size!r}"
            )
        if causal_mask is None:
            raise OpError(f"{name}: window_size needs a causal_mask")
    return {"scale": scale, "causal_mask": causal_mask, "window_size": window_size}


def _infer_attention_var_len(call: Call, ctx: InferContext) -> StructInfo:
    # The builder's order (TVM's Python signature), so the printed call reads back the same.
    names = ("queries", "keys", "values", "seqstart_q", "max_seqlen_q", "seqstart_k")
    infos = [ctx.tensor_arg(call, i, names[i]) for i in range(6)]
    q, k, v, sq, sk = infos[0], infos[1], infos[2], infos[3], infos[5]
    for name, info in zip(names[:3], infos[:3], strict=True):
        if info.ndim not in (-1, 4):
            raise ctx.error(
                f"{name} must have rank 4 (1, total tokens, heads, head dim), got shape "
                f"{dims_text(info)}"
            )
    for name, info in (("seqstart_q", sq), ("seqstart_k", sk)):
        if info.ndim not in (-1, 1):
            raise ctx.error(f"{name} must have rank 1 (batch + 1,), got shape {dims_text(info)}")
        if info.dtype is not None and info.dtype.code not in (DataTypeCode.INT, DataTypeCode.UINT):
            raise ctx.type_error(f"{name} must have an integer dtype, got {info.dtype}")
    dtype = unify_dtypes(ctx, [q, k, v], "queries, keys and values")
    if dtype is not None and dtype.code not in (DataTypeCode.FLOAT, DataTypeCode.BFLOAT):
        raise ctx.type_error(f"queries, keys and values must have a float dtype, got {dtype}")
    qs, ks, vs = q.shape_values, k.shape_values, v.shape_values
    if qs is None or ks is None or vs is None:
        return tensor(None, dtype, 4, like=q)
    for name, info, shape in (("queries", q, qs), ("keys", k, ks), ("values", v, vs)):
        one = IntImm(1)
        if not prove_equal(ctx, shape[0], one) and prove_not_equal(ctx, shape[0], one):
            raise ctx.error(
                f"{name} must be concatenated along axis 1 with batch 1, got shape "
                f"{dims_text(info)}"
            )
    pq, pk, pv = ("queries", q), ("keys", k), ("values", v)
    _check_dim(ctx, qs[2], ks[2], "the number of heads", (pq, pk))
    _check_dim(ctx, qs[2], vs[2], "the number of heads", (pq, pv))
    _check_dim(ctx, qs[3], ks[3], "the head dim", (pq, pk))
    _check_dim(ctx, ks[1], vs[1], "the key/value token count", (pk, pv))
    sqs, sks = sq.shape_values, sk.shape_values
    if sqs is not None and sks is not None:
        _check_dim(
            ctx, sqs[0], sks[0], "the batch size + 1", (("seqstart_q", sq), ("seqstart_k", sk))
        )
    return tensor([qs[0], qs[1], qs[2], vs[3]], dtype, like=q)


register_op(
    "relax.nn.attention_var_len",
    num_inputs=7,
    infer=_infer_attention_var_len,
    attrs={
        "scale": "score scale; None means 1 / sqrt(head dim)",
        "causal_mask": '"TopLeft", "BottomRight" or None (per sequence)',
        "window_size": "sliding window (keys per query) with a causal mask, or None",
    },
    doc="attention over variable-length sequences concatenated along axis 1",
)


def attention_var_len(
    queries: RelaxExpr,
    keys: RelaxExpr,
    values: RelaxExpr,
    seqstart_q: RelaxExpr,
    max_seqlen_q: RelaxExpr,
    seqstart_k: RelaxExpr | None = None,
    max_seqlen_k: RelaxExpr | None = None,
    scale: float | None = None,
    causal_mask: str | None = None,
    window_size: int | None = None,
) -> Call:
    """Attention of each sequence of a batch over its own keys, the sequences concatenated.

    Parameters
    ----------
    queries, keys, values : RelaxExpr
        ``(1, T, H, D)``, ``(1, Tk, H, D)`` and ``(1, Tk, H, Dv)``: every sequence's tokens one
        after another along axis 1.
    seqstart_q : RelaxExpr
        ``(B + 1,)`` integers: sequence ``b``'s queries are rows ``[seqstart_q[b],
        seqstart_q[b + 1])`` (the cumulative lengths, starting at 0).
    max_seqlen_q : RelaxExpr
        The longest query sequence (a hint for kernels; not needed by relaxvm's).
    seqstart_k, max_seqlen_k : RelaxExpr, optional
        The same for the keys and values; by default those of the queries.
    scale, causal_mask, window_size
        As :func:`attention`, applied within each sequence.

    Returns
    -------
    Call
        A ``relax.nn.attention_var_len`` call of shape ``(1, T, H, Dv)``; query rows outside
        every sequence are 0.
    """
    name = "relax.nn.attention_var_len"
    attrs = _attention_attrs(name, scale, causal_mask, window_size)
    if seqstart_k is None:
        seqstart_k = seqstart_q
    if max_seqlen_k is None:
        max_seqlen_k = max_seqlen_q
    args = [queries, keys, values, seqstart_q, max_seqlen_q, seqstart_k, max_seqlen_k]
    return make_call(name, args, attrs)
