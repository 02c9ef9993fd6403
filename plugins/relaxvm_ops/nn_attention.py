"""``relax.nn.attention`` as TE stages: the scaled scores (plus bias), the row maximum over the
visible keys, the masked exponentials and their sum, then the weighted sum of the values.

The stages keep the BSNH layout of the operands (no transposes); the scores are
``(B, H, N, M)``. Masked scores take no part in the maximum and contribute 0 to the sum,
which is the softmax over the visible keys (TVM's legalization zeroes them with ``trilu``).
"""

from __future__ import annotations

import math
from typing import Any

from relaxvm.ir import PrimExpr, cast
from relaxvm.ir import op as sop
from relaxvm.ir.relax import BlockBuilder, Call, RelaxExpr
from relaxvm.ir.tir import intrin as T
from relaxvm.ir.tir import te

from ._kernel import OpPattern, attr, call_te, legalizes, op_name, shape_of, tensor_arg

__all__: list[str] = []


@legalizes("relax.nn.attention")
def legalize_attention(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``softmax(q k^T * scale + bias over visible keys) v`` per batch and head."""
    b, n, h, d = shape_of(tensor_arg(call, 0, "query"))
    m = shape_of(tensor_arg(call, 1, "key"))[1]
    dv = shape_of(tensor_arg(call, 2, "value"))[3]
    has_bias = len(call.args) > 3
    bias_rank = len(shape_of(tensor_arg(call, 3, "bias"))) if has_bias else 0
    scale = attr(call, "scale", None)
    causal = attr(call, "causal_mask", None)
    window = attr(call, "window_size", None)
    scores_shape = [b, h, n, m]

    def visible(i: Any, j: Any) -> PrimExpr | None:
        if causal is None:
            return None
        offset = 0 if causal == "TopLeft" else sop.sub(m, n)
        last = sop.add(i, offset)
        cond = sop.less_equal(j, last)
        if window is not None:
            cond = sop.logical_and(cond, sop.greater(j, sop.sub(last, window)))
        return cond

    def kernel(q: te.Tensor, k: te.Tensor, v: te.Tensor, *rest: te.Tensor) -> te.Tensor:
        dtype = q.dtype
        factor = (
            sop.const(float(scale), dtype)
            if scale is not None
            else sop.const(1.0, dtype) / T.sqrt(cast(d, dtype))
        )

        def score_body(bi: Any, hi: Any, i: Any, j: Any) -> Any:
            rd = te.reduce_axis((0, d), name="rd")
            return te.sum(q[bi, i, hi, rd] * k[bi, j, hi, rd], axis=[rd])

        dot = te.compute(scores_shape, score_body, name="T_attention_dot")

        def scaled_body(bi: Any, hi: Any, i: Any, j: Any) -> PrimExpr:
            value = dot[bi, hi, i, j] * factor
            if rest:
                (bias,) = rest
                index = {2: (bi, j), 3: (bi, i, j), 4: (bi, hi, i, j)}[bias_rank]
                value = value + bias[index]
            return value

        scores = te.compute(scores_shape, scaled_body, name="T_attention_scores")
        lowest = sop.const(-math.inf, dtype)

        def max_body(bi: Any, hi: Any, i: Any) -> Any:
            rj = te.reduce_axis((0, m), name="rj")
            cond = visible(i, rj.var)
            value = scores[bi, hi, i, rj]
            return te.max(value if cond is None else T.if_then_else(cond, value, lowest), axis=[rj])

        row_max = te.compute([b, h, n], max_body, name="T_attention_max")

        def exp_body(bi: Any, hi: Any, i: Any, j: Any) -> PrimExpr:
            value = T.exp(scores[bi, hi, i, j] - row_max[bi, hi, i])
            cond = visible(i, j)
            return value if cond is None else T.if_then_else(cond, value, sop.const(0, dtype))

        exps = te.compute(scores_shape, exp_body, name="T_attention_exp")

        def sum_body(bi: Any, hi: Any, i: Any) -> Any:
            rj = te.reduce_axis((0, m), name="rj")
            return te.sum(exps[bi, hi, i, rj], axis=[rj])

        total = te.compute([b, h, n], sum_body, name="T_attention_expsum")

        def out_body(bi: Any, i: Any, hi: Any, c: Any) -> Any:
            rj = te.reduce_axis((0, m), name="rj")
            weight = exps[bi, hi, i, rj] / total[bi, hi, i]
            return te.sum(weight * v[bi, rj, hi, c], axis=[rj])

        return te.compute([b, n, h, dv], out_body, name="T_attention")

    return call_te(
        bb, kernel, *call.args, primfunc_name_hint="attention",
        op_pattern=OpPattern.OUT_EWISE_FUSABLE, op=op_name(call),
    )  # fmt: skip


@legalizes("relax.nn.attention_var_len")
def legalize_attention_var_len(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """Attention per sequence of a concatenated batch: query row ``t`` belongs to sequence
    ``b`` (the number of sequence ends at or before it), and sees the keys of ``b`` only, with
    the causal mask and window counted within ``b``. Rows of no sequence are 0. The maximum
    sequence lengths are kernel hints and are not read."""
    _, total, h, d = shape_of(tensor_arg(call, 0, "queries"))
    m = shape_of(tensor_arg(call, 1, "keys"))[1]
    dv = shape_of(tensor_arg(call, 2, "values"))[3]
    batch = sop.sub(shape_of(tensor_arg(call, 3, "seqstart_q"))[0], 1)
    scale = attr(call, "scale", None)
    causal = attr(call, "causal_mask", None)
    window = attr(call, "window_size", None)

    def kernel(q: te.Tensor, k: te.Tensor, v: te.Tensor, sq: te.Tensor, sk: te.Tensor) -> te.Tensor:
        dtype = q.dtype
        factor = (
            sop.const(float(scale), dtype)
            if scale is not None
            else sop.const(1.0, dtype) / T.sqrt(cast(d, dtype))
        )

        def start(table: te.Tensor, index: Any) -> PrimExpr:
            return cast(table[index], "int64")

        def seq_body(t: Any) -> Any:
            rb = te.reduce_axis((0, batch), name="rb")
            ends_before = sop.less_equal(start(sq, sop.add(rb.var, 1)), t)
            return te.sum(cast(ends_before, "int64"), axis=[rb])

        seq = te.compute([total], seq_body, name="T_varlen_seq")

        def visible(t: Any, j: Any, masks: bool = True) -> PrimExpr:
            """Key ``j`` is in query ``t``'s sequence (and, with ``masks``, not masked)."""
            found: PrimExpr = seq[t]
            inside = sop.less(found, batch)
            b = sop.min_expr(found, sop.sub(batch, 1))  # rows of no sequence read a real one
            q0, q1 = start(sq, b), start(sq, sop.add(b, 1))
            k0, k1 = start(sk, b), start(sk, sop.add(b, 1))
            cond = sop.logical_and(
                inside,
                sop.logical_and(sop.greater_equal(j, k0), sop.less(j, k1)),
            )
            if causal is not None and masks:
                offset = 0 if causal == "TopLeft" else sop.sub(sop.sub(k1, k0), sop.sub(q1, q0))
                last = sop.add(sop.sub(t, q0), offset)
                local = sop.sub(j, k0)
                cond = sop.logical_and(cond, sop.less_equal(local, last))
                if window is not None:
                    cond = sop.logical_and(cond, sop.greater(local, sop.sub(last, window)))
            return cond

        def score_body(hi: Any, t: Any, j: Any) -> Any:
            rd = te.reduce_axis((0, d), name="rd")
            return te.sum(q[0, t, hi, rd] * k[0, j, hi, rd], axis=[rd])

        dot = te.compute([h, total, m], score_body, name="T_varlen_dot")
        lowest = sop.const(-math.inf, dtype)

        def max_body(hi: Any, t: Any) -> Any:
            rj = te.reduce_axis((0, m), name="rj")
            value = T.if_then_else(visible(t, rj.var), dot[hi, t, rj] * factor, lowest)
            return te.max(value, axis=[rj])

        row_max = te.compute([h, total], max_body, name="T_varlen_max")

        def exp_body(hi: Any, t: Any, j: Any) -> PrimExpr:
            value = T.exp(dot[hi, t, j] * factor - row_max[hi, t])
            return T.if_then_else(visible(t, j), value, sop.const(0, dtype))

        exps = te.compute([h, total, m], exp_body, name="T_varlen_exp")

        def sum_body(hi: Any, t: Any) -> Any:
            rj = te.reduce_axis((0, m), name="rj")
            return te.sum(exps[hi, t, rj], axis=[rj])

        expsum = te.compute([h, total], sum_body, name="T_varlen_expsum")

        def out_body(zero: Any, t: Any, hi: Any, c: Any) -> Any:
            rj = te.reduce_axis((0, m), name="rj")
            # A row that sees no key has a zero sum: its weights (all 0) stay 0, never 0/0.
            denominator = sop.max_expr(expsum[hi, t], sop.const(1e-30, dtype))
            term = exps[hi, t, rj] / denominator * v[0, rj, hi, c]
            # Another sequence's values take no part, not even as 0 * inf; a masked key of the
            # row's own sequence weighs 0, as in relax.nn.attention.
            return te.sum(
                T.if_then_else(visible(t, rj.var, masks=False), term, sop.const(0, dtype)),
                axis=[rj],
            )

        return te.compute([1, total, h, dv], out_body, name="T_attention_var_len")

    q, k, v, sq, _, sk, _ = call.args  # the maximum lengths are hints only
    return call_te(
        bb, kernel, q, k, v, sq, sk, primfunc_name_hint="attention_var_len",
        op_pattern=OpPattern.OUT_EWISE_FUSABLE, op=op_name(call),
    )  # fmt: skip
