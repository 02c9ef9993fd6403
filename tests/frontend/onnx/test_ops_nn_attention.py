"""The ONNX Attention converter (opsets 23-25) against onnxruntime, or against onnx.reference
(the spec's evaluator) for what onnxruntime lacks; and its refusals."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from relaxvm.errors import OpNotImplemented
from relaxvm.testing.onnx import require_onnx

onnx = require_onnx()

from relaxvm.frontend.onnx import from_onnx  # noqa: E402


def _helpers() -> Any:
    # The one-node model builder lives in test_ops_nn.py (no package: load it by path).
    spec = importlib.util.spec_from_file_location(
        "_onnx_nn_helpers_attention", Path(__file__).with_name("test_ops_nn.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_H = _helpers()
node_model, check, rand = _H.node_model, _H.check, _H.rand
OUTS4 = {"y": "float32", "pk": "float32", "pv": "float32", "qk": "float32"}


@pytest.mark.parametrize(
    ("attrs", "kv_heads"),
    [
        ({}, 2),
        ({"is_causal": 1, "scale": 0.3}, 2),
        ({"softcap": 2.0}, 1),
        ({"is_causal": 1}, 1),
    ],
)
def test_attention_4d(attrs: dict[str, Any], kv_heads: int) -> None:
    inputs = {
        "q": (rand(2, 2, 3, 4), None),
        "k": (rand(2, kv_heads, 5, 4), None),
        "v": (rand(2, kv_heads, 5, 6), None),
    }
    check(node_model("Attention", inputs, opset=23, **attrs), inputs)


def test_attention_3d_gqa() -> None:
    inputs = {"q": (rand(2, 3, 8), None), "k": (rand(2, 5, 4), None), "v": (rand(2, 5, 6), None)}
    model = node_model("Attention", inputs, opset=23, q_num_heads=4, kv_num_heads=2)
    check(model, inputs)


@pytest.mark.parametrize("mask", ["bool", "float", "short"])
@pytest.mark.parametrize("causal", [0, 1])
def test_attention_mask_and_past(mask: str, causal: int) -> None:
    inputs = {
        "q": (rand(1, 2, 3, 4), None),
        "k": (rand(1, 2, 3, 4), None),
        "v": (rand(1, 2, 3, 4), None),
    }
    width = 4 if mask == "short" else 5  # keys: 2 past + 3 new; a short mask masks the rest
    if mask == "bool":
        attn = np.random.default_rng(1).random((3, width)) > 0.3
        attn[:, 0] = True
    else:
        attn = rand(1, 1, 3, width)
    init = {"m": attn, "pk0": rand(1, 2, 2, 4), "pv0": rand(1, 2, 2, 4)}
    model = node_model(
        "Attention", inputs, init, outputs=OUTS4, opset=23, is_causal=causal,
        qk_matmul_output_mode=3,
    )  # fmt: skip
    # onnxruntime refuses a mask shorter than the keys, which the spec allows.
    check(model, inputs, prefer="reference" if mask == "short" else "onnxruntime")


@pytest.mark.parametrize("mode", [1, 2, 3])
def test_attention_qk_output_modes(mode: int) -> None:
    # onnxruntime writes float32's lowest for masked mode-2 logits where the spec has -inf.
    inputs = {"q": (rand(1, 1, 2, 4), None), "k": (rand(1, 1, 3, 4), None)}
    init = {"v": rand(1, 1, 3, 4), "m": np.array([[True, False, True], [False, False, False]])}
    # A fully masked second row: zeros in Y and in the mode-3 probabilities.
    model = node_model(
        "Attention", inputs, init, opset=23, names=["q", "k", "v", "m"], outputs=OUTS4,
        qk_matmul_output_mode=mode, softcap=3.0 if mode == 1 else 0.0,
    )  # fmt: skip
    check(model, inputs, prefer="reference")


@pytest.mark.parametrize(
    ("attrs", "nonpad"), [({"is_causal": 1}, [5, 3]), ({"left_window_size": 1}, None)]
)
def test_attention_padding_and_window(attrs: dict[str, Any], nonpad: list[int] | None) -> None:
    # nonpad_kv_seqlen (opset 24) and sliding windows (opset 25): onnx.reference is the judge.
    inputs = {"q": (rand(2, 2, 2, 4), None), "k": (rand(2, 2, 5, 4), None)}
    init = {"v": rand(2, 2, 5, 4)}
    names = ["q", "k", "v"]
    if nonpad is not None:
        init["n"] = np.array(nonpad, "int64")
        names += ["", "", "", "n"]
    model = node_model("Attention", inputs, init, opset=25, names=names, **attrs)
    check(model, inputs, prefer="reference")


def test_attention_refused() -> None:
    inputs = {"q": (rand(1, 1, 2, 4), None), "k": (rand(1, 1, 2, 4), None)}
    model = node_model(
        "Attention", inputs, {"v": rand(1, 1, 2, 4)}, outputs=OUTS4, opset=23, softcap=2.0,
        out_shapes={"y": [1, 1, 2, 4], "pk": [1, 1, 2, 4], "pv": [1, 1, 2, 4], "qk": [1, 1, 2, 2]},
    )  # fmt: skip
    with pytest.raises(OpNotImplemented) as info:
        from_onnx(model)
    message = str(info.value)
    assert "Attention node 'attention_node'" in message
    assert "qk_matmul_output_mode=0 with softcap" in message
