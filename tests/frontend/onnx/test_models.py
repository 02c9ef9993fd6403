"""Whole models through the ONNX importer, against onnxruntime: an MLP, a small ResNet and a
transformer encoder layer with a dynamic sequence length (``relaxvm.testing.onnx_models``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm.testing.onnx import check_model, reference_outputs, require_onnx
from relaxvm.testing.onnx_models import (
    cnn_model,
    mlp_model,
    random_inputs,
    resnet18_model,
    transformer_encoder_model,
)

onnx = require_onnx()

from relaxvm.frontend import detach_params  # noqa: E402
from relaxvm.frontend.onnx import from_onnx  # noqa: E402

# The bar: within 1e-4 relative error of onnxruntime.
RTOL, ATOL = 1e-4, 1e-5


def ops_of(model: Any) -> set[str]:
    return {node.op_type for node in model.graph.node}


def compile_main(mod: Any, exec_mode: str = "bytecode") -> Any:
    ex = relaxvm.compile(mod, "llvm", exec_mode=exec_mode)
    return relaxvm.VirtualMachine(ex, relaxvm.cpu())["main"]


def assert_matches_reference(model: Any, inputs: dict[str, np.ndarray], got: Any) -> None:
    (want,) = reference_outputs(model, inputs)
    got = got.numpy()
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("batch", [1, 5])
def test_mlp(batch: int) -> None:
    model = mlp_model(in_features=32, hidden=(64, 48), out_features=10)
    assert {"Gemm", "MatMul", "Add", "Relu"} <= ops_of(model)
    check_model(model, random_inputs(model, {"N": batch}), rtol=RTOL, atol=ATOL)


def test_mlp_one_module_every_batch_and_params_as_inputs() -> None:
    model = mlp_model(in_features=32, hidden=(64,), out_features=10)
    mod, params = detach_params(from_onnx(model, keep_params_in_input=True))
    main = compile_main(mod, exec_mode="compiled")
    for batch in (1, 6):
        inputs = random_inputs(model, {"N": batch}, seed=batch)
        got = main(relaxvm.tensor(inputs["x"]), *params["main"])
        assert_matches_reference(model, inputs, got)


def test_small_resnet() -> None:
    model = cnn_model(size=16, widths=(8, 16), blocks=1, classes=10)
    expected_ops = {"Conv", "BatchNormalization", "Relu", "Add", "MaxPool", "GlobalAveragePool"}
    assert expected_ops | {"Flatten", "Gemm"} <= ops_of(model)
    check_model(model, random_inputs(model, {"N": 2}), rtol=RTOL, atol=ATOL)


def test_transformer_encoder_two_sequence_lengths_one_module() -> None:
    model = transformer_encoder_model(d_model=32, heads=4, ffn=64)
    assert {"Shape", "Gather", "Concat", "Reshape", "Softmax", "LayerNormalization", "Erf"} <= (
        ops_of(model)
    )
    mod = from_onnx(model)
    batch_dim, seq_dim, width = mod["main"].params[0].struct_info.shape.values
    assert (batch_dim.name, seq_dim.name, int(width)) == ("batch", "seq", 32)
    main = compile_main(mod)
    for batch, seq in ((2, 5), (1, 12)):
        inputs = random_inputs(model, {"batch": batch, "seq": seq}, seed=seq)
        assert_matches_reference(model, inputs, main(relaxvm.tensor(inputs["x"])))


def test_transformer_encoder_with_the_gelu_operator() -> None:
    model = transformer_encoder_model(d_model=16, heads=2, ffn=32, gelu="op")
    assert "Gelu" in ops_of(model) and model.opset_import[0].version == 20
    check_model(model, random_inputs(model, {"batch": 2, "seq": 3}), rtol=RTOL, atol=ATOL)


@pytest.mark.slow
def test_resnet18() -> None:
    # The benchmark's ResNet-18 (11.7M random weights, 224x224), at batch 1 and symbolic.
    model = resnet18_model(batch="N")
    assert sum(1 for node in model.graph.node if node.op_type == "Conv") == 20
    check_model(model, random_inputs(model, {"N": 1}), rtol=RTOL, atol=ATOL)
