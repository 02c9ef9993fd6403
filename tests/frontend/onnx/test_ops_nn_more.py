"""ONNX nn converters against onnxruntime: normalizations, Resize/Upsample, quantization; and
the errors for what they refuse."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from relaxvm.errors import OpNotImplemented
from relaxvm.testing.onnx import reference_outputs, require_onnx, run_model

onnx = require_onnx()
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from relaxvm.frontend.onnx import from_onnx  # noqa: E402


def _helpers() -> Any:
    # The one-node model builder lives in test_ops_nn.py (no package: load it by path).
    spec = importlib.util.spec_from_file_location(
        "_onnx_nn_helpers", Path(__file__).with_name("test_ops_nn.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_H = _helpers()
node_model, check, rand = _H.node_model, _H.check, _H.rand


# ---- normalizations ---------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 5), ("N", 3, 4, 5)])
def test_batch_norm(shape: tuple[Any, ...]) -> None:
    value = rand(*[2 if d == "N" else d for d in shape])
    inputs = {"x": (value, list(shape))}
    var = np.abs(rand(3)) + 0.5
    init = {"s": rand(3), "b": rand(3), "m": rand(3), "v": var}
    check(node_model("BatchNormalization", inputs, init, epsilon=1e-3), inputs)


@pytest.mark.parametrize("shape", [(2, 3, 5), (1, 3, 4, 5), ("N", 3, 2, 2, 3)])
def test_instance_norm(shape: tuple[Any, ...]) -> None:
    value = rand(*[2 if d == "N" else d for d in shape])
    inputs = {"x": (value, list(shape))}
    check(node_model("InstanceNormalization", inputs, {"s": rand(3), "b": rand(3)}), inputs)


@pytest.mark.parametrize(
    ("axis", "scale_shape", "bias", "outputs"),
    [
        (-1, (5,), True, 1),
        (1, (4, 5), True, 1),
        (1, (1, 5), False, 1),
        (-2, (4, 5), True, 3),
        (0, (3, 4, 5), True, 3),
    ],
)
def test_layer_norm(axis: int, scale_shape: tuple[int, ...], bias: bool, outputs: int) -> None:
    inputs = {"x": (rand(3, 4, 5), None)}
    init = {"s": rand(*scale_shape)}
    if bias:
        init["b"] = rand(*scale_shape)
    model = node_model("LayerNormalization", inputs, init, outputs=outputs, axis=axis)
    check(model, inputs)


def test_layer_norm_symbolic_batch() -> None:
    inputs = {"x": (rand(3, 4, 5), ["N", 4, 5])}
    model = node_model("LayerNormalization", inputs, {"s": rand(5), "b": rand(5)})
    check(model, inputs)


@pytest.mark.parametrize("groups", [2, 6])
def test_group_norm(groups: int) -> None:
    inputs = {"x": (rand(2, 6, 3, 4), ["N", 6, 3, 4])}
    init = {"s": rand(6), "b": rand(6)}
    model = node_model("GroupNormalization", inputs, init, opset=21, num_groups=groups)
    check(model, inputs)


@pytest.mark.parametrize("groups", [2, 3])
def test_group_norm_v18(groups: int) -> None:
    # Opset 18's per-group scale/bias: the checker calls that version deprecated and
    # onnxruntime lacks it, so the model is built unchecked and compared with onnx.reference.
    x = rand(2, 6, 3, 4)
    scale, bias = rand(groups), rand(groups)
    node = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=groups)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, x.shape)],
        [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(bias, "b")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    (got,) = run_model(model, {"x": x})
    (want,) = reference_outputs(model, {"x": x}, prefer="reference")
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("p", "axis"), [(1, -1), (2, 1), (2, 0)])
def test_lp_normalization(p: int, axis: int) -> None:
    inputs = {"x": (rand(3, 4, 5), None)}
    check(node_model("LpNormalization", inputs, p=p, axis=axis), inputs)


@pytest.mark.parametrize("axes", [None, [1], [0, 2, 3]])
def test_mean_variance_normalization(axes: list[int] | None) -> None:
    inputs = {"x": (rand(2, 3, 4, 5), None)}
    attrs = {} if axes is None else {"axes": axes}
    check(node_model("MeanVarianceNormalization", inputs, **attrs), inputs)


@pytest.mark.parametrize(
    ("shape", "attrs"),
    [((1, 5, 3, 4), {"size": 3}), (("N", 7, 2, 3), {"size": 5, "alpha": 0.01, "bias": 2.0})],
)
def test_lrn(shape: tuple[Any, ...], attrs: dict[str, Any]) -> None:
    value = rand(*[2 if d == "N" else d for d in shape])
    inputs = {"x": (value, list(shape))}
    check(node_model("LRN", inputs, **attrs), inputs)


def lrn_spec(x: np.ndarray, size: int, alpha: float, beta: float, bias: float) -> np.ndarray:
    """The spec's formula: channels [c - floor((size-1)/2), c + ceil((size-1)/2)]."""
    squares = np.zeros_like(x)
    for c in range(x.shape[1]):
        lo, hi = max(0, c - (size - 1) // 2), min(x.shape[1] - 1, c + size // 2)
        squares[:, c] = (x[:, lo : hi + 1] ** 2).sum(axis=1)
    return x / (bias + alpha / size * squares) ** beta


@pytest.mark.parametrize(("shape", "size"), [((2, 6, 4, 1), 4), ((2, 6, 4), 3)])
def test_lrn_spec(shape: tuple[int, ...], size: int) -> None:
    # Even sizes and non-4-D inputs: onnxruntime refuses them and onnx.reference loops over
    # the wrong axis, so the spec's formula is the reference.
    x = rand(*shape)
    model = node_model(
        "LRN", {"x": (x, None)}, size=size, alpha=0.5, beta=0.5, out_shapes={"y0": list(shape)}
    )
    (got,) = run_model(model, {"x": x})
    np.testing.assert_allclose(got, lrn_spec(x, size, 0.5, 0.5, 1.0), rtol=1e-5, atol=1e-6)


# ---- Resize / Upsample ------------------------------------------------------------------------
RESIZE_CASES = [
    ({"mode": "nearest"}, "scales", [1, 1, 2, 3]),
    ({"mode": "nearest", "nearest_mode": "floor"}, "sizes", [1, 2, 7, 5]),
    ({"mode": "nearest", "nearest_mode": "ceil", "coordinate_transformation_mode": "asymmetric"},
     "sizes", [1, 2, 3, 9]),
    ({"mode": "nearest", "nearest_mode": "round_prefer_ceil",
      "coordinate_transformation_mode": "align_corners"}, "scales", [1, 1, 0.5, 2]),
    ({"mode": "linear"}, "scales", [1, 1, 2, 2]),
    ({"mode": "linear"}, "sizes", [1, 2, 3, 3]),
    ({"mode": "linear", "coordinate_transformation_mode": "align_corners"}, "sizes", [1, 2, 5, 7]),
    ({"mode": "linear", "coordinate_transformation_mode": "asymmetric"}, "scales", [1, 1, 1.5, 0.5]),
    ({"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"}, "sizes",
     [1, 2, 1, 6]),
]  # fmt: skip


@pytest.mark.parametrize(("attrs", "kind", "values"), RESIZE_CASES)
@pytest.mark.parametrize("opset", [13, 19])
def test_resize(attrs: dict[str, Any], kind: str, values: list[float], opset: int) -> None:
    inputs = {"x": (rand(1, 2, 4, 6), None)}
    dtype = "float32" if kind == "scales" else "int64"
    init = {kind: np.array(values, dtype)}
    names = ["x", "", "scales"] if kind == "scales" else ["x", "", "", "sizes"]
    check(node_model("Resize", inputs, init, opset=opset, names=names, **attrs), inputs)


@pytest.mark.parametrize(
    ("kind", "values"), [("scales", [1, 1, 0.5, 1.5]), ("sizes", [1, 2, 3, 5])]
)
def test_resize_half_pixel_symmetric(kind: str, values: list[float]) -> None:
    inputs = {"x": (rand(1, 2, 4, 6), None)}
    init = {kind: np.array(values, "float32" if kind == "scales" else "int64")}
    names = ["x", "", "scales"] if kind == "scales" else ["x", "", "", "sizes"]
    model = node_model(
        "Resize", inputs, init, opset=19, names=names, mode="linear",
        coordinate_transformation_mode="half_pixel_symmetric",
    )  # fmt: skip
    check(model, inputs)


def test_resize_axes_symbolic_batch() -> None:
    inputs = {"x": (rand(2, 2, 3, 4), ["N", 2, 3, 4])}
    init = {"scales": np.array([3.0, 2.0], "float32")}
    model = node_model(
        "Resize", inputs, init, opset=18, names=["x", "", "scales"], axes=[3, 2], mode="nearest"
    )
    check(model, inputs)


@pytest.mark.parametrize(("axes", "sizes"), [(None, [1, 2, 7, 3]), ([3, 2], [9, 2])])
def test_resize_runtime_sizes(axes: list[int] | None, sizes: list[int]) -> None:
    # sizes is a graph input: the output extents are bound when the model runs.
    inputs = {"x": (rand(1, 2, 4, 6), None), "sizes": (np.array(sizes, "int64"), None)}
    attrs = {} if axes is None else {"axes": axes}
    model = node_model(
        "Resize", inputs, opset=19, names=["x", "", "", "sizes"], mode="linear", **attrs
    )
    check(model, inputs)


def test_resize_runtime_sizes_channels() -> None:
    # Resize may resize any axis; with run-time sizes the kernel resizes C too.
    inputs = {"x": (rand(1, 2, 4, 6), None), "sizes": (np.array([1, 3, 8, 8], "int64"), None)}
    model = node_model("Resize", inputs, opset=19, names=["x", "", "", "sizes"])
    check(model, inputs)


KERNEL_CASES = [
    # (attrs, kind, values, shape): cases resize2d cannot express, via the TE kernel
    ({"mode": "cubic"}, "scales", [1, 1, 2, 1.5], (1, 2, 4, 6)),
    ({"mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": 1}, "scales",
     [1, 1, 0.75, 0.5], (1, 1, 4, 6)),
    ({"mode": "cubic", "coordinate_transformation_mode": "align_corners"}, "sizes",
     [1, 2, 3, 7], (1, 2, 4, 6)),
    ({"mode": "linear"}, "scales", [1, 1, 0.6, 0.7], (1, 2, 5, 6)),
    ({"mode": "nearest", "nearest_mode": "ceil"}, "scales", [1, 1, 0.6, 1.7], (1, 2, 5, 6)),
    ({"mode": "linear"}, "scales", [1, 2.5], (3, 4)),
    ({"mode": "linear"}, "sizes", [2, 3, 9], (2, 3, 5)),
    ({"mode": "nearest"}, "scales", [2, 1, 1, 1.5], (1, 2, 3, 4)),
]  # fmt: skip


@pytest.mark.parametrize(("attrs", "kind", "values", "shape"), KERNEL_CASES)
def test_resize_kernel(
    attrs: dict[str, Any], kind: str, values: list[float], shape: tuple[int, ...]
) -> None:
    inputs = {"x": (rand(*shape), None)}
    init = {kind: np.array(values, "float32" if kind == "scales" else "int64")}
    names = ["x", "", "scales"] if kind == "scales" else ["x", "", "", "sizes"]
    check(node_model("Resize", inputs, init, opset=19, names=names, **attrs), inputs)


def test_resize_tf_half_pixel_for_nearest() -> None:
    # An opset-11 mode (gone from opset 13) that onnxruntime and onnx.reference both lack:
    # in = (out + 0.5) / scale, rounded half down and clamped (the spec's formula).
    x = rand(1, 2, 4, 6)
    model = node_model(
        "Resize", {"x": (x, None)},
        {"roi": np.zeros(0, "float32"), "scales": np.array([1, 1, 1.75, 0.5], "float32")},
        opset=11, coordinate_transformation_mode="tf_half_pixel_for_nearest",
        out_shapes={"y0": [1, 2, 7, 3]},
    )  # fmt: skip
    (got,) = run_model(model, {"x": x})

    def source(n: int, scale: float, size: int) -> np.ndarray:
        coord = (np.arange(n) + 0.5) / scale
        return np.clip(np.ceil(coord - 0.5).astype(int), 0, size - 1)  # round half down

    rows, cols = source(7, 1.75, 4), source(3, 0.5, 6)
    np.testing.assert_array_equal(got, x[:, :, rows][:, :, :, cols])


@pytest.mark.parametrize("policy", ["not_larger", "not_smaller"])
@pytest.mark.parametrize("runtime", [False, True])
def test_resize_keep_aspect_ratio(policy: str, runtime: bool) -> None:
    x = rand(1, 2, 4, 6)
    sizes = np.array([5, 5], "int64")
    inputs: dict[str, Any] = {"x": (x, None)}
    init = None
    if runtime:
        inputs["sizes"] = (sizes, None)
    else:
        init = {"sizes": sizes}
    model = node_model(
        "Resize", inputs, init, opset=19, names=["x", "", "", "sizes"], axes=[2, 3],
        keep_aspect_ratio_policy=policy,
    )  # fmt: skip
    check(model, inputs)


@pytest.mark.parametrize("runtime", [False, True])
def test_resize_tf_crop_and_resize(runtime: bool) -> None:
    x = rand(1, 1, 4, 5)
    roi = np.array([0, 0, 0.2, 0.4, 1, 1, 0.9, 1.3], "float32")
    inputs: dict[str, Any] = {"x": (x, None)}
    # H is resized; W keeps its extent 5 but still crops to its roi.
    init: dict[str, Any] = {"sizes": np.array([1, 1, 3, 5], "int64")}
    if runtime:
        inputs["roi"] = (roi, None)
    else:
        init["roi"] = roi
    model = node_model(
        "Resize", inputs, init, opset=19, names=["x", "roi", "", "sizes"], mode="linear",
        coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-2.0,
    )  # fmt: skip
    # onnxruntime skips an axis whose extent is unchanged (no crop there); the spec crops.
    check(model, inputs, prefer="reference")


@pytest.mark.parametrize(
    ("mode", "scales"), [("cubic", [1, 1, 0.6, 1.5]), ("nearest", [1, 1, 3, 2])]
)
def test_resize_runtime_scales(mode: str, scales: list[float]) -> None:
    # Fractional run-time scales too: the kernel maps with the scale it reads.
    inputs = {"x": (rand(2, 2, 5, 4), ["N", 2, 5, 4]), "s": (np.array(scales, "float32"), None)}
    model = node_model("Resize", inputs, opset=19, names=["x", "", "s"], mode=mode)
    check(model, inputs)


@pytest.mark.parametrize(("mode", "scales"), [("nearest", [1, 1, 2, 3]), ("linear", [1, 1, 2, 2])])
@pytest.mark.parametrize("opset", [9, 10])
def test_upsample_and_resize_v10(mode: str, scales: list[float], opset: int) -> None:
    inputs = {"x": (rand(1, 2, 3, 4), None)}
    op_type = "Upsample" if opset == 9 else "Resize"
    init = {"scales": np.array(scales, "float32")}
    check(node_model(op_type, inputs, init, opset=opset, mode=mode), inputs)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_upsample_v7_attribute(mode: str) -> None:
    inputs = {"x": (rand(1, 2, 3, 4), None)}
    check(node_model("Upsample", inputs, opset=7, mode=mode, scales=[1.0, 1.0, 2.0, 3.0]), inputs)


# ---- quantization -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("scale", "zero_point", "axis"),
    [
        (np.array(0.05, "float32"), np.array(3, "uint8"), 1),
        (np.array(0.1, "float32"), np.array(-4, "int8"), 1),
        (np.array(0.02, "float32"), None, 1),
        (np.array([0.05, 0.1, 0.2], "float32"), np.array([0, 5, -5], "int8"), 1),
        (np.array([0.05, 0.1, 0.2, 0.3], "float32"), np.array([1, 2, 3, 4], "uint8"), -1),
    ],
)
def test_quantize_dequantize(scale: np.ndarray, zero_point: Any, axis: int) -> None:
    x = (rand(2, 3, 4) * 3).astype("float32")
    inputs = {"x": (x, None)}
    init = {"s": scale} if zero_point is None else {"s": scale, "z": zero_point}
    q_dtype = "uint8" if zero_point is None else str(zero_point.dtype)
    model = node_model("QuantizeLinear", inputs, init, outputs={"q": q_dtype}, axis=axis)
    check(model, inputs)
    q = np.clip(np.round(x / 0.5), 0, 100).astype(q_dtype)
    dq_inputs = {"q": (q, None)}
    model = node_model("DequantizeLinear", dq_inputs, init, axis=axis)
    check(model, dq_inputs)


@pytest.mark.parametrize(("axis", "zp_dtype"), [(1, "int8"), (0, "uint8")])
def test_blocked_quantize_dequantize(axis: int, zp_dtype: str) -> None:
    x = (rand(4, 6) * 3).astype("float32")
    blocks = [4, 3] if axis == 1 else [2, 6]  # block 2 along axis (6 -> 3, 4 -> 2)
    scale = (np.abs(rand(*blocks)) + 0.1).astype("float32")
    zero_point = np.random.default_rng(3).integers(0, 9, blocks).astype(zp_dtype)
    init = {"s": scale, "z": zero_point}
    model = node_model(
        "QuantizeLinear", {"x": (x, None)}, init, opset=21, outputs={"q": zp_dtype}, axis=axis,
        block_size=2,
    )  # fmt: skip
    check(model, {"x": (x, None)})
    q = np.random.default_rng(4).integers(0, 100, (4, 6)).astype(zp_dtype)
    model = node_model(
        "DequantizeLinear", {"q": (q, None)}, init, opset=21, axis=axis, block_size=2
    )
    check(model, {"q": (q, None)})


@pytest.mark.parametrize(
    ("b_dtype", "zero_points"), [("uint8", None), ("int8", "scalar"), ("uint8", "vector")]
)
def test_matmul_integer(b_dtype: str, zero_points: str | None) -> None:
    gen = np.random.default_rng(5)
    a = gen.integers(0, 255, (2, 3, 4)).astype("uint8")
    b = gen.integers(-100, 100 if b_dtype == "int8" else 255, (4, 5)).astype(b_dtype)
    init: dict[str, Any] = {"b": b}
    if zero_points == "scalar":
        init |= {"az": np.array(7, "uint8"), "bz": np.array(-3, b_dtype)}
    elif zero_points == "vector":
        init |= {"az": np.array(9, "uint8"), "bz": np.arange(5).astype(b_dtype)}
    inputs = {"a": (a, None)}
    check(node_model("MatMulInteger", inputs, init, outputs={"y": "int32"}), inputs)


@pytest.mark.parametrize("attrs", [{}, {"pads": [1, 0, 1, 1], "strides": [2, 1]}])
def test_conv_integer(attrs: dict[str, Any]) -> None:
    gen = np.random.default_rng(6)
    x = gen.integers(0, 255, (1, 2, 5, 5)).astype("uint8")
    init = {"w": gen.integers(0, 255, (3, 2, 2, 2)).astype("uint8"), "xz": np.array(4, "uint8")}
    inputs = {"x": (x, None)}
    check(node_model("ConvInteger", inputs, init, outputs={"y": "int32"}, **attrs), inputs)


# ---- errors -----------------------------------------------------------------------------------
def refused(model: Any) -> str:
    with pytest.raises(OpNotImplemented) as info:
        from_onnx(model)
    return str(info.value)


def test_batch_norm_training_refused() -> None:
    inputs = {"x": (rand(2, 3), None)}
    init = {n: rand(3) for n in "sbmv"}
    model = node_model(
        "BatchNormalization", inputs, init, opset=15, training_mode=1, out_shapes={"y0": [2, 3]}
    )
    message = refused(model)
    assert "BatchNormalization node 'batchnormalization_node'" in message
    assert "training_mode=1" in message


@pytest.mark.parametrize(
    ("attrs", "expected"),
    [
        ({"antialias": 1}, "antialias=1"),
        ({"keep_aspect_ratio_policy": "fit"}, "keep_aspect_ratio_policy='fit'"),
        ({"mode": "area"}, "mode='area'"),
    ],
)
def test_resize_refused_attribute(attrs: dict[str, Any], expected: str) -> None:
    inputs = {"x": (rand(1, 1, 4, 4), None)}
    init = {"scales": np.array([1, 1, 2, 2], "float32")}
    model = node_model(
        "Resize", inputs, init, opset=19, names=["x", "", "scales"],
        out_shapes={"y0": [1, 1, 8, 8]}, **attrs,
    )  # fmt: skip
    message = refused(model)
    assert "Resize node 'resize_node'" in message and expected in message


def test_quantize_output_dtype_refused() -> None:
    inputs = {"x": (rand(2, 4), None)}
    model = node_model(
        "QuantizeLinear", inputs, {"s": np.array(0.1, "float32")}, opset=21,
        outputs={"q": "int8"}, output_dtype=onnx.TensorProto.INT4, out_shapes={"q": [2, 4]},
    )  # fmt: skip
    message = refused(model)
    assert "QuantizeLinear node 'quantizelinear_node'" in message and "output_dtype=22" in message


@pytest.mark.parametrize("p", [1, 2])
def test_lp_normalization_of_an_all_zero_slice_is_zero(p: int) -> None:
    # The spec's reference gives 0 where the norm is 0 (not 0/0).
    x = np.array([[0.0, 3.0], [0.0, 4.0]], "float32")
    model = helper.make_model(
        helper.make_graph(
            [helper.make_node("LpNormalization", ["x"], ["y"], axis=0, p=p)],
            "lp",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])],
        ),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    (got,) = run_model(model, [x])
    norm = np.abs(x).sum(0) if p == 1 else np.sqrt((x * x).sum(0))
    np.testing.assert_allclose(got, [[0.0, 3.0 / norm[1]], [0.0, 4.0 / norm[1]]], rtol=1e-6)


def test_gemm_transposes_a_constant_weight_at_import() -> None:
    w = rand(5, 4)
    model = helper.make_model(
        helper.make_graph(
            [helper.make_node("Gemm", ["x", "w"], ["y"], transB=1)],
            "gemm",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])],
            [numpy_helper.from_array(w, "w")],
        ),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    assert "permute_dims" not in from_onnx(model).script()
    x = rand(3, 4)
    (got,) = run_model(model, [x])
    np.testing.assert_allclose(got, x @ w.T, rtol=1e-5, atol=1e-5)
