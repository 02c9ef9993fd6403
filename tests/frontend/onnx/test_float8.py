"""ONNX float8 (FLOAT8E4M3FN, FLOAT8E5M2): QuantizeLinear, DequantizeLinear and Cast (with
``saturate``) against onnxruntime, and what the importer refuses."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from relaxvm.errors import OpNotImplemented
from relaxvm.testing.onnx import reference_outputs, require_onnx, run_model

onnx = require_onnx()
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from relaxvm.frontend.onnx import from_onnx  # noqa: E402

F8 = {"float8_e4m3fn": TensorProto.FLOAT8E4M3FN, "float8_e5m2": TensorProto.FLOAT8E5M2}


def _model(nodes: list[Any], x_shape: list[int], init: list[Any], x_type: int = 1) -> Any:
    graph = helper.make_graph(
        nodes,
        "float8",
        [helper.make_tensor_value_info("x", x_type, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, x_shape)],
        initializer=init,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def _values() -> np.ndarray:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 6)).astype(np.float32) * np.float32(2.0) ** rng.integers(
        -8, 17, (4, 6)
    ).astype(np.float32)
    x[0, :4] = [np.inf, -np.inf, 1e9, -1e9]
    return x


def _check(model: Any, x: np.ndarray) -> None:
    (expected,) = reference_outputs(model, {"x": x})
    (got,) = run_model(model, {"x": x})
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("name", list(F8))
@pytest.mark.parametrize("axis_scale", [False, True])
def test_quantize_dequantize_float8(name: str, axis_scale: bool) -> None:
    scale = np.array([0.5, 2.0, 0.25, 1.0, 4.0, 0.125], np.float32) if axis_scale else None
    s = numpy_helper.from_array(scale if scale is not None else np.float32(0.5), "s")
    zero = helper.make_tensor(
        "z", F8[name], [6] if axis_scale else [], [0.0] * (6 if axis_scale else 1)
    )
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1),
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=1),
    ]
    _check(_model(nodes, [4, 6], [s, zero]), _values())


@pytest.mark.parametrize("name", list(F8))
@pytest.mark.parametrize("saturate", [1, 0])
def test_cast_to_float8_and_back(name: str, saturate: int) -> None:
    nodes = [
        helper.make_node("Cast", ["x"], ["q"], to=F8[name], saturate=saturate),
        helper.make_node("Cast", ["q"], ["y"], to=TensorProto.FLOAT),
    ]
    x = _values()
    x[1, :2] = [np.nan, -0.0]
    model = _model(nodes, [4, 6], [])
    (expected,) = reference_outputs(model, {"x": x})
    (got,) = run_model(model, {"x": x})
    np.testing.assert_array_equal(got, expected)  # NaN compares equal to NaN here


def test_float8_graph_input_and_initializer() -> None:
    # A float8 input (an ml_dtypes array) dequantized with a float8 weight cast to float32.
    ml_dtypes = pytest.importorskip("ml_dtypes")
    w = helper.make_tensor("w", TensorProto.FLOAT8E5M2, [2, 3], [1.0, -2.0, 0.5, 3.0, 448.0, 0.0])
    nodes = [
        helper.make_node("Cast", ["x"], ["xf"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["w"], ["wf"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["xf", "wf"], ["y"]),
    ]
    model = _model(nodes, [2, 3], [w], x_type=TensorProto.FLOAT8E4M3FN)
    x = np.array([[1.0, 0.3, -5.0], [448.0, 2.0, -0.0]], np.float32).astype(ml_dtypes.float8_e4m3fn)
    (got,) = run_model(model, {"x": x})
    np.testing.assert_array_equal(got, [[2.0, -1.6875, -4.5], [451.0, 450.0, 0.0]])


def test_float8_refusals() -> None:
    s = numpy_helper.from_array(np.float32(0.5), "s")
    nonzero = helper.make_tensor("z", TensorProto.FLOAT8E4M3FN, [], [1.0])
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])]
    with pytest.raises(OpNotImplemented, match="float8 zero point that is not a known zero"):
        from_onnx(_model(nodes, [2], [s, nonzero]))
    zero = helper.make_tensor("z", TensorProto.FLOAT8E4M3FN, [], [0.0])
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], saturate=0)]
    with pytest.raises(OpNotImplemented, match="saturate=0 is not supported"):
        from_onnx(_model(nodes, [2], [s, zero]))
    nodes = [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT8E4M3FNUZ)]
    with pytest.raises(OpNotImplemented, match="FLOAT8E4M3FNUZ, which relaxvm lacks"):
        from_onnx(_model(nodes, [2], []))
