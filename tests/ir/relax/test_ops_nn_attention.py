"""relax.nn.attention: the builder (attributes and their errors), StructInfo inference (dtypes,
symbolic shapes, unknown ranks, errors) and the script form."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from relaxvm.ir import Analyzer
from relaxvm.ir import Var as SymVar
from relaxvm.ir import relax as rx
from relaxvm.ir.relax import TensorStructInfo, op
from relaxvm.ir.relax.op import OpError, infer
from relaxvm.script import from_source
from relaxvm.testing.conformance.cases_nn_attention import attention_ref

B, N, M = SymVar("b"), SymVar("n"), SymVar("m")


def tvar(shape: Sequence[Any] | None, dtype: str | None = "float32", ndim: int = -1) -> rx.Var:
    return rx.Var("t", TensorStructInfo(shape, dtype, ndim=ndim))


def same(sinfo: Any, expected: Sequence[Any]) -> bool:
    assert isinstance(sinfo, TensorStructInfo) and sinfo.shape_values is not None, sinfo
    analyzer = Analyzer()
    values = list(sinfo.shape_values)
    return len(values) == len(expected) and all(
        analyzer.can_prove_equal(a, b) for a, b in zip(values, expected, strict=True)
    )


def test_attention_shape_dtype_and_attrs() -> None:
    call = op.nn.attention(tvar((B, N, 4, 8), "float16"), tvar((B, M, 4, 8), "float16"),
                           tvar((B, M, 4, 16), "float16"))  # fmt: skip
    assert call.attrs["scale"] is None and call.attrs["causal_mask"] is None
    sinfo = infer(call)
    assert same(sinfo, [B, N, 4, 16]) and str(sinfo.dtype) == "float16"
    biased = op.nn.attention(tvar((2, 3, 4, 8)), tvar((2, 5, 4, 8)), tvar((2, 5, 4, 8)),
                             tvar((2, 4, 3, 5)), scale=1, causal_mask="TopLeft", window_size=2)  # fmt: skip
    assert biased.attrs["scale"] == 1.0 and isinstance(biased.attrs["scale"], float)
    assert biased.attrs["window_size"] == 2 and len(biased.args) == 4
    assert same(infer(biased), [2, 3, 4, 8])
    unknown = infer(op.nn.attention(tvar(None, None), tvar((2, 5, 4, 8)), tvar((2, 5, 4, 8))))
    assert isinstance(unknown, TensorStructInfo) and unknown.ndim == 4 and unknown.dtype is None


@pytest.mark.parametrize(
    ("shapes", "message"),
    [
        ([(2, 3, 4), (2, 5, 4, 8), (2, 5, 4, 8)],
         r"query must have rank 4 \(batch, sequence, heads, head dim\), got shape \(2, 3, 4\)"),
        ([(2, 3, 4, 8), (3, 5, 4, 8), (3, 5, 4, 8)],
         r"the batch size differs: 2 in query with shape \(2, 3, 4, 8\) vs 3 in key"),
        ([(2, 3, 4, 8), (2, 5, 2, 8), (2, 5, 2, 8)], r"the number of heads differs"),
        ([(2, 3, 4, 8), (2, 5, 4, 6), (2, 5, 4, 8)], r"the head dim differs: 8 in query"),
        ([(2, 3, 4, 8), (2, 5, 4, 8), (2, 6, 4, 8)],
         r"the key/value sequence length differs: 5 in key"),
        ([(2, 3, 4, 8), (2, 5, 4, 8), (2, 5, 4, 8), (2, 3, 4)],
         r"bias with shape \(2, 3, 4\) does not match the scores: expected \(2, 3, 5\)"),
        ([(2, 3, 4, 8), (2, 5, 4, 8), (2, 5, 4, 8), (5,)],
         r"bias must have rank 2, 3 or 4"),
    ],
    ids=["rank", "batch", "heads", "head-dim", "kv-length", "bias-shape", "bias-rank"],
)  # fmt: skip
def test_attention_inference_errors(shapes: list[tuple[int, ...]], message: str) -> None:
    with pytest.raises(OpError, match=r"relax\.nn\.attention: " + message):
        infer(op.nn.attention(*[tvar(s) for s in shapes]))


def test_attention_dtype_errors() -> None:
    shape = (1, 2, 1, 4)
    with pytest.raises(OpError, match=r"relax\.nn\.attention: query, key, value must have the "
                       r"same dtype"):  # fmt: skip
        infer(op.nn.attention(tvar(shape), tvar(shape, "float16"), tvar(shape)))
    with pytest.raises(OpError, match=r"relax\.nn\.attention: query, key and value must have a "
                       r"float dtype, got int32"):  # fmt: skip
        infer(op.nn.attention(*[tvar(shape, "int32") for _ in range(3)]))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"causal_mask": "Diagonal"},
         r"causal_mask must be 'TopLeft', 'BottomRight' or None, got 'Diagonal'"),
        ({"scale": "0.5"}, r"scale must be a number or None, got '0\.5'"),
        ({"scale": float("nan")}, r"scale must be finite, got nan"),
        ({"window_size": 0, "causal_mask": "TopLeft"},
         r"window_size must be a positive int or None, got 0"),
        ({"window_size": 2}, r"window_size needs a causal_mask"),
    ],
    ids=["mask", "scale-type", "scale-nan", "window", "window-no-mask"],
)  # fmt: skip
def test_attention_builder_errors(kwargs: dict[str, Any], message: str) -> None:
    shape = (1, 2, 1, 4)
    with pytest.raises(OpError, match=r"relax\.nn\.attention: " + message):
        op.nn.attention(tvar(shape), tvar(shape), tvar(shape), **kwargs)


def test_attention_script_form() -> None:
    source = """
from relaxvm.script import ir as I, relax as R

@I.ir_module
class Module:
    @R.function
    def main(q: R.Tensor((1, 3, 2, 4), "float32"), k: R.Tensor((1, 5, 2, 4), "float32"),
             v: R.Tensor((1, 5, 2, 6), "float32")):
        o = R.nn.attention(q, k, v, causal_mask="BottomRight")
        return o
"""
    assert same(from_source(source)["main"].ret_struct_info, [1, 3, 2, 6])


def test_reference_causal_rows_match_prefix_attention() -> None:
    # BottomRight with N == M is TopLeft; row i of a causal result equals unmasked attention
    # over the first i + 1 keys.
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((1, 4, 2, 3)) for _ in range(3))
    causal = attention_ref(q, k, v, causal_mask="TopLeft")
    np.testing.assert_allclose(causal, attention_ref(q, k, v, causal_mask="BottomRight"))
    for i in range(4):
        prefix = attention_ref(q[:, i : i + 1], k[:, : i + 1], v[:, : i + 1])
        np.testing.assert_allclose(causal[:, i : i + 1], prefix, rtol=1e-12)
