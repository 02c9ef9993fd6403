"""relax.nn.attention_var_len: inference, builder errors, and the kernel against a per-sequence
numpy reference (causal masks and windows counted within each sequence)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm.ir import Var as SymVar
from relaxvm.ir import relax as rx
from relaxvm.ir.relax import TensorStructInfo, op
from relaxvm.ir.relax.op import OpError, infer


def tvar(shape: Sequence[Any] | None, dtype: str | None = "float32") -> rx.Var:
    return rx.Var("t", TensorStructInfo(shape, dtype))


def _call(t: Any = 10, tk: Any = 12, **kwargs: Any) -> Any:
    return op.nn.attention_var_len(
        tvar((1, t, 2, 4)), tvar((1, tk, 2, 4)), tvar((1, tk, 2, 3)), tvar((4,), "int32"),
        tvar((), "int32"), **kwargs,
    )  # fmt: skip


def test_shape_defaults_and_symbolic_tokens() -> None:
    call = _call()
    assert call.args[5] is call.args[3] and call.args[6] is call.args[4]  # k defaults to q
    assert str(infer(call)) == 'R.Tensor((1, 10, 2, 3), dtype="float32")'
    t = SymVar("t")
    assert str(infer(_call(t, t))) == 'R.Tensor((1, t, 2, 3), dtype="float32")'


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"queries": tvar((2, 10, 2, 4))},
            r"queries must be concatenated along axis 1 with batch 1",
        ),
        ({"seqstart_q": tvar((4,), "float32")}, r"seqstart_q must have an integer dtype"),
        ({"seqstart_q": tvar((4, 1), "int32")}, r"seqstart_q must have rank 1"),
        ({"keys": tvar((1, 12, 3, 4))}, r"the number of heads differs"),
    ],
)
def test_inference_errors(args: dict[str, Any], message: str) -> None:
    parts = {
        "queries": tvar((1, 10, 2, 4)),
        "keys": tvar((1, 12, 2, 4)),
        "values": tvar((1, 12, 2, 3)),
        "seqstart_q": tvar((4,), "int32"),
        "max_seqlen_q": tvar((), "int32"),
        **args,
    }
    with pytest.raises(OpError, match=rf"relax.nn.attention_var_len: .*{message}"):
        infer(op.nn.attention_var_len(**parts))


def test_builder_errors_name_the_op() -> None:
    with pytest.raises(OpError, match="relax.nn.attention_var_len: window_size needs a causal"):
        _call(window_size=2)
    with pytest.raises(OpError, match="relax.nn.attention_var_len: causal_mask must be"):
        _call(causal_mask="Upper")


def _reference(q, k, v, sq, sk, causal, window, scale):  # type: ignore[no-untyped-def]
    out = np.zeros((1, q.shape[1], q.shape[2], v.shape[3]), np.float64)
    for b in range(len(sq) - 1):
        qq, kk, vv = q[0, sq[b] : sq[b + 1]], k[0, sk[b] : sk[b + 1]], v[0, sk[b] : sk[b + 1]]
        n, m = len(qq), len(kk)
        scores = np.einsum("nhd,mhd->hnm", qq, kk) * (scale or 1 / np.sqrt(q.shape[3]))
        i, j = np.arange(n)[:, None], np.arange(m)[None]
        mask = np.ones((n, m), bool)
        if causal:
            last = i + (0 if causal == "TopLeft" else m - n)
            mask = (j <= last) & ((j > last - window) if window else True)
        scores = np.where(mask, scores, -np.inf)
        p = np.where(mask, np.exp(scores - scores.max(-1, keepdims=True)), 0)
        p /= np.maximum(p.sum(-1, keepdims=True), 1e-30)
        out[0, sq[b] : sq[b + 1]] = np.einsum("hnm,mhc->nhc", p, vv)
    return out


@pytest.mark.parametrize(
    ("causal", "window", "scale"),
    [(None, None, None), ("TopLeft", None, 0.5), ("BottomRight", 2, None), ("TopLeft", 1, None)],
)
def test_kernel_matches_a_per_sequence_reference(
    causal: str | None, window: int | None, scale: float | None
) -> None:
    rng = np.random.default_rng(7)
    lens_q, lens_k = [2, 5, 3], [3, 5, 4]
    # One query row after the last sequence: it belongs to none and must come out 0.
    t, tk = sum(lens_q) + 1, sum(lens_k)
    sq = np.concatenate([[0], np.cumsum(lens_q)]).astype("int32")
    sk = np.concatenate([[0], np.cumsum(lens_k)]).astype("int32")
    names = [("q", (1, t, 2, 4), "float32"), ("k", (1, tk, 2, 4), "float32"),
             ("v", (1, tk, 2, 3), "float32"), ("sq", (4,), "int32"), ("sk", (4,), "int32"),
             ("mq", (), "int32")]  # fmt: skip
    params = [rx.Var(n, TensorStructInfo(s, d)) for n, s, d in names]
    bb = rx.BlockBuilder()
    with bb.function("main", params):
        q, k, v, sqv, skv, mq = params
        out = op.nn.attention_var_len(q, k, v, sqv, mq, skv, mq, scale, causal, window)
        bb.emit_func_output(bb.emit(out))
    vm = relaxvm.VirtualMachine(relaxvm.compile(bb.finalize(), "llvm"), relaxvm.cpu())
    qa, ka = rng.random((1, t, 2, 4), "float32"), rng.random((1, tk, 2, 4), "float32")
    va = rng.random((1, tk, 2, 3), "float32")
    got = vm["main"](*(relaxvm.tensor(a) for a in (qa, ka, va, sq, sk, np.array(5, "int32"))))
    want = _reference(qa, ka, va, sq, sk, causal, window, scale)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    assert not got.numpy()[0, -1].any()
