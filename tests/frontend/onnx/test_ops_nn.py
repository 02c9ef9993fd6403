"""ONNX nn converters (ops_nn*.py) against onnxruntime: matrix products, convolutions, pools,
softmax family, dropout, top-k; and the errors for what they refuse. Normalizations, Resize and
quantization are in test_ops_nn_more.py."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from relaxvm.errors import OpNotImplemented
from relaxvm.testing.onnx import check_model, make_model, reference_outputs, require_onnx, run_model

onnx = require_onnx()
from onnx import helper  # noqa: E402

from relaxvm.frontend.onnx import from_onnx  # noqa: E402

RNG = np.random.default_rng(7)


def rand(*shape: int, dtype: str = "float32") -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def node_model(
    op_type: str,
    inputs: dict[str, tuple[np.ndarray, Any]],
    initializers: dict[str, np.ndarray] | None = None,
    outputs: int | dict[str, str] = 1,
    opset: int = 17,
    names: list[str] | None = None,
    out_shapes: dict[str, list[Any]] | None = None,
    **attrs: Any,
) -> Any:
    """A one-node model; ``inputs`` maps name -> (value, declared shape or None for the
    value's own shape); the node reads ``names`` (default: inputs, then initializers)."""
    order = names if names is not None else list(inputs) + list(initializers or {})
    outs = {f"y{i}": "float32" for i in range(outputs)} if isinstance(outputs, int) else outputs
    node = helper.make_node(op_type, order, list(outs), name=f"{op_type.lower()}_node", **attrs)
    declared = {
        n: (str(v.dtype), list(v.shape) if s is None else s) for n, (v, s) in inputs.items()
    }
    shapes = out_shapes or _output_shapes(node, inputs, declared, initializers, outs, opset)
    return make_model(
        [node],
        inputs=declared,
        outputs={n: (d, shapes[n]) for n, d in outs.items()},
        initializers=initializers,
        opset=opset,
    )


def _output_shapes(
    node: Any,
    inputs: dict[str, tuple[np.ndarray, Any]],
    declared: dict[str, tuple[str, Any]],
    initializers: dict[str, np.ndarray] | None,
    outs: dict[str, str],
    opset: int,
) -> dict[str, list[Any]]:
    # The checker wants output shapes: take them from onnxruntime on the test inputs, with
    # the declared symbolic dims kept symbolic.
    from onnx import numpy_helper

    def info(name: str, dtype: str, shape: Any) -> Any:
        return helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), shape
        )

    graph = helper.make_graph(
        [node],
        "probe",
        [info(n, d, s) for n, (d, s) in declared.items()],
        [info(n, d, None) for n, d in outs.items()],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in (initializers or {}).items()],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(model.ir_version, 10)
    feeds = {n: v for n, (v, _) in inputs.items()}
    try:
        results = reference_outputs(model, feeds)
    except Exception:  # onnxruntime refuses some valid models (an even LRN size, ...)
        results = reference_outputs(model, feeds, prefer="reference")
    symbolic = {d for _, s in declared.values() for d in s if isinstance(d, str)}
    shapes = {}
    for name, value in zip(outs, results, strict=True):
        # A symbolic input dim may reach the output; leave every dim free when any is.
        shapes[name] = [None] * value.ndim if symbolic else list(value.shape)
    return shapes


def check(model: Any, inputs: dict[str, tuple[np.ndarray, Any]], **kw: Any) -> None:
    check_model(model, {n: v for n, (v, _) in inputs.items()}, rtol=1e-4, atol=1e-4, **kw)


# ---- MatMul / Gemm ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("a", "b"), [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (3, 4, 2)), ((4,), (4, 3))]
)
def test_matmul(a: tuple[int, ...], b: tuple[int, ...]) -> None:
    inputs = {"a": (rand(*a), None), "b": (rand(*b), None)}
    check(node_model("MatMul", inputs), inputs)


@pytest.mark.parametrize(
    ("attrs", "c_shape"),
    [
        ({}, None),
        ({"transA": 1}, (5,)),
        ({"transB": 1, "alpha": 0.5, "beta": 2.0}, (3, 5)),
        ({"transA": 1, "transB": 1, "beta": 0.0}, (1, 5)),
        ({"alpha": -1.5}, ()),
    ],
)
def test_gemm(attrs: dict[str, Any], c_shape: tuple[int, ...] | None) -> None:
    a = rand(4, 3) if attrs.get("transA") else rand(3, 4)
    b = rand(5, 4) if attrs.get("transB") else rand(4, 5)
    inputs = {"a": (a, None), "b": (b, None)}
    init = None if c_shape is None else {"c": rand(*c_shape)}
    check(node_model("Gemm", inputs, init, **attrs), inputs)


def test_gemm_symbolic_rows() -> None:
    inputs = {"a": (rand(6, 4), ["M", 4])}
    model = node_model("Gemm", inputs, {"b": rand(3, 4), "c": rand(3)}, transB=1)
    check(model, inputs)


# ---- Conv -------------------------------------------------------------------------------------
CONV_CASES = [
    ((1, 2, 9), (4, 2, 3), {}),
    ((1, 2, 9), (4, 1, 3), {"group": 2, "strides": [2], "pads": [1, 2]}),
    ((2, 3, 7, 8), (4, 3, 3, 3), {"pads": [1, 0, 2, 1], "strides": [2, 1]}),
    ((1, 4, 7, 7), (4, 2, 3, 3), {"group": 2, "dilations": [2, 1]}),
    ((1, 2, 7, 8), (3, 2, 3, 2), {"auto_pad": "SAME_UPPER", "strides": [2, 3]}),
    ((1, 2, 7, 8), (3, 2, 4, 2), {"auto_pad": "SAME_LOWER", "strides": [2, 2]}),
    ((1, 2, 6, 6), (3, 2, 3, 3), {"auto_pad": "VALID", "strides": [2, 2]}),
    ((1, 2, 4, 5, 6), (3, 2, 2, 3, 2), {"pads": [1, 0, 1, 0, 1, 1], "strides": [1, 2, 1]}),
]


@pytest.mark.parametrize(("x", "w", "attrs"), CONV_CASES)
def test_conv(x: tuple[int, ...], w: tuple[int, ...], attrs: dict[str, Any]) -> None:
    inputs = {"x": (rand(*x), None)}
    init = {"w": rand(*w)}
    if CONV_CASES.index((x, w, attrs)) % 2:  # every other case with a bias
        init["b"] = rand(w[0])
    check(node_model("Conv", inputs, init, **attrs), inputs)


@pytest.mark.parametrize("attrs", [{"pads": [1, 1, 1, 1]}, {"auto_pad": "SAME_UPPER"}])
def test_conv_symbolic_dims(attrs: dict[str, Any]) -> None:
    # Stride 1 SAME padding needs no static extent; the batch and image size are symbolic.
    inputs = {"x": (rand(2, 3, 6, 5), ["N", 3, "H", "W"])}
    model = node_model("Conv", inputs, {"w": rand(4, 3, 3, 3), "b": rand(4)}, **attrs)
    check(model, inputs)


CONV_T_CASES = [
    ((1, 2, 5), (2, 3, 3), {"strides": [2]}),
    ((1, 2, 4, 5), (2, 3, 3, 3), {"strides": [2, 2], "pads": [1, 0, 1, 1]}),
    ((1, 2, 4, 5), (2, 3, 3, 3), {"strides": [3, 2], "output_padding": [1, 1]}),
    (
        (1, 2, 4, 5),
        (2, 3, 3, 3),
        {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 0]},
    ),
    ((1, 4, 3, 3), (4, 1, 2, 2), {"group": 2, "strides": [2, 2], "dilations": [2, 1]}),
    ((1, 2, 3, 4), (2, 3, 3, 3), {"strides": [2, 2], "output_shape": [8, 9]}),
    ((1, 2, 3, 4), (2, 3, 3, 3), {"strides": [2, 2], "output_shape": [6, 7]}),
    ((1, 2, 3, 4), (2, 3, 3, 3), {"strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    ((1, 2, 3, 4), (2, 3, 4, 3), {"strides": [2, 3], "auto_pad": "SAME_LOWER"}),
    (
        (1, 2, 3, 3, 4),
        (2, 3, 2, 3, 2),
        {"strides": [2, 1, 3], "pads": [1, 0, 0, 0, 1, 1], "output_padding": [1, 0, 1]},
    ),
    ((2, 4, 2, 3, 3), (4, 1, 2, 2, 3), {"group": 2, "strides": [1, 2, 2], "dilations": [2, 1, 1]}),
]


@pytest.mark.parametrize(("x", "w", "attrs"), CONV_T_CASES)
def test_conv_transpose(x: tuple[int, ...], w: tuple[int, ...], attrs: dict[str, Any]) -> None:
    inputs = {"x": (rand(*x), None)}
    init = {"w": rand(*w), "b": rand(w[1] * attrs.get("group", 1))}
    check(node_model("ConvTranspose", inputs, init, **attrs), inputs)


# ---- pools ------------------------------------------------------------------------------------
POOL_CASES = [
    ((1, 2, 9), {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
    ((1, 2, 7, 8), {"kernel_shape": [3, 2]}),
    ((1, 2, 7, 8), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 0, 1, 2]}),
    ((1, 2, 7, 8), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    (
        (1, 2, 6, 6),
        {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1},
    ),
    ((1, 2, 7, 8), {"kernel_shape": [2, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    ((1, 2, 7, 8), {"kernel_shape": [2, 3], "strides": [2, 2], "auto_pad": "SAME_LOWER"}),
    ((1, 2, 8, 8), {"kernel_shape": [2, 2], "dilations": [2, 2], "strides": [1, 2]}),
    (
        (1, 2, 4, 5, 6),
        {"kernel_shape": [2, 2, 3], "strides": [2, 1, 2], "pads": [0, 1, 1, 1, 0, 1]},
    ),
]


@pytest.mark.parametrize(("shape", "attrs"), POOL_CASES)
@pytest.mark.parametrize(
    ("op_type", "extra"),
    [("MaxPool", {}), ("AveragePool", {}), ("AveragePool", {"count_include_pad": 1})],
)
def test_pool(
    shape: tuple[int, ...], attrs: dict[str, Any], op_type: str, extra: dict[str, Any]
) -> None:
    inputs = {"x": (rand(*shape), None)}
    opset = 19  # AveragePool's dilations arrived in opset 19
    check(node_model(op_type, inputs, opset=opset, **attrs, **extra), inputs)


@pytest.mark.parametrize("op_type", ["MaxPool", "AveragePool"])
def test_pool_symbolic_batch(op_type: str) -> None:
    inputs = {"x": (rand(3, 2, 6, 6), ["N", 2, 6, 6])}
    model = node_model(op_type, inputs, kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
    check(model, inputs)


@pytest.mark.parametrize(
    ("shape", "attrs"),
    [
        ((2, 3, 5, 6), {"kernel_shape": [2, 3], "strides": [2, 2]}),
        ((1, 2, 5, 5), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "storage_order": 1}),
        ((1, 2, 6, 7), {"kernel_shape": [3, 2], "strides": [2, 2], "ceil_mode": 1}),
        ((1, 1, 7, 7), {"kernel_shape": [2, 2], "dilations": [2, 2], "pads": [0, 1, 1, 0]}),
        ((1, 2, 9), {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
    ],
)
def test_maxpool_indices(shape: tuple[int, ...], attrs: dict[str, Any]) -> None:
    # Ties on purpose (rounded values): the first maximum of a window wins.
    inputs = {"x": (np.round(rand(*shape), 0), None)}
    model = node_model("MaxPool", inputs, outputs={"y": "float32", "i": "int64"}, **attrs)
    check(model, inputs)


@pytest.mark.parametrize("op_type", ["GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"])
@pytest.mark.parametrize("shape", [(2, 3, 5), (1, 3, 4, 5), ("N", 3, 4, 5)])
def test_global_pool(op_type: str, shape: tuple[Any, ...]) -> None:
    value = rand(*[2 if d == "N" else d for d in shape])
    inputs = {"x": (value, list(shape))}
    check(node_model(op_type, inputs), inputs)


@pytest.mark.parametrize(
    "attrs",
    [
        {"kernel_shape": [2, 2]},
        {"kernel_shape": [3, 2], "p": 1, "strides": [2, 1], "pads": [1, 0, 1, 1]},
        {"kernel_shape": [3], "p": 3},
    ],
)
def test_lp_pool(attrs: dict[str, Any]) -> None:
    shape = (1, 2, 7) if len(attrs["kernel_shape"]) == 1 else (1, 2, 6, 5)
    inputs = {"x": (rand(*shape), None)}
    check(node_model("LpPool", inputs, **attrs), inputs)


# ---- softmax family, dropout, einsum, top-k ---------------------------------------------------
@pytest.mark.parametrize("op_type", ["Softmax", "LogSoftmax", "Hardmax"])
@pytest.mark.parametrize(("opset", "axis"), [(11, None), (11, 0), (11, 2), (13, None), (13, 1)])
def test_softmax_family(op_type: str, opset: int, axis: int | None) -> None:
    inputs = {"x": (rand(2, 3, 4), None)}
    attrs = {} if axis is None else {"axis": axis}
    check(node_model(op_type, inputs, opset=opset, **attrs), inputs)


@pytest.mark.parametrize("opset", [11, 13])
def test_softmax_symbolic_batch(opset: int) -> None:
    inputs = {"x": (rand(3, 4, 5), ["N", 4, 5])}
    check(node_model("Softmax", inputs, opset=opset, axis=1), inputs)


@pytest.mark.parametrize("opset", [7, 10, 12])
def test_dropout(opset: int) -> None:
    # The spec's mask is all ones in inference; onnxruntime gives all zeros before opset 12,
    # so those opsets are checked against the value the spec defines.
    x = rand(2, 5)
    mask = "bool" if opset >= 10 else "float32"
    model = node_model(
        "Dropout", {"x": (x, None)}, outputs={"y": "float32", "mask": mask}, opset=opset,
        out_shapes={"y": [2, 5], "mask": [2, 5]},
    )  # fmt: skip
    if opset >= 12:
        check(model, {"x": (x, None)})
        return
    y, got_mask = run_model(model, {"x": x})
    np.testing.assert_array_equal(y, x)
    assert got_mask.dtype == np.dtype(mask) and got_mask.shape == x.shape and got_mask.all()


@pytest.mark.parametrize(
    ("equation", "shapes"),
    [
        ("ij,jk->ik", [(3, 4), (4, 5)]),
        ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
        ("ii->i", [(4, 4)]),
        ("ij->", [(3, 4)]),
        ("...ij->...ji", [(2, 3, 4)]),
    ],
)
def test_einsum(equation: str, shapes: list[tuple[int, ...]]) -> None:
    inputs = {f"x{i}": (rand(*s), None) for i, s in enumerate(shapes)}
    check(node_model("Einsum", inputs, equation=equation), inputs)


@pytest.mark.parametrize(("k", "axis", "largest"), [(2, -1, 1), (3, 0, 0), (1, 1, 1)])
def test_topk(k: int, axis: int, largest: int) -> None:
    inputs = {"x": (rand(4, 5, 3), None)}
    model = node_model(
        "TopK", inputs, {"k": np.array([k], "int64")},
        outputs={"v": "float32", "i": "int64"}, axis=axis, largest=largest,
    )  # fmt: skip
    check(model, inputs)


def test_topk_v1_attribute() -> None:
    inputs = {"x": (rand(3, 6), None)}
    model = node_model("TopK", inputs, outputs={"v": "float32", "i": "int64"}, opset=9, k=2)
    check(model, inputs)


# ---- errors -----------------------------------------------------------------------------------
def refused(model: Any) -> str:
    with pytest.raises(OpNotImplemented) as info:
        from_onnx(model)
    return str(info.value)


def test_maxpool_storage_order_refused() -> None:
    inputs = {"x": (rand(1, 1, 4, 4), None)}
    model = node_model(
        "MaxPool", inputs, outputs={"y": "float32", "idx": "int64"}, kernel_shape=[2, 2],
        storage_order=2, out_shapes={"y": [1, 1, 3, 3], "idx": [1, 1, 3, 3]},
    )  # fmt: skip
    message = refused(model)
    assert "MaxPool node 'maxpool_node'" in message and "storage_order=2" in message


def test_conv_auto_pad_value_refused() -> None:
    inputs = {"x": (rand(1, 1, 4, 4), None)}
    model = node_model(
        "Conv", inputs, {"w": rand(1, 1, 2, 2)}, auto_pad="SAME", out_shapes={"y0": [1, 1, 4, 4]}
    )
    message = refused(model)
    assert "Conv node 'conv_node'" in message and "auto_pad='SAME'" in message


def test_conv_auto_pad_symbolic_stride_refused() -> None:
    inputs = {"x": (rand(1, 1, 4, 4), [1, 1, "H", "W"])}
    model = node_model(
        "Conv", inputs, {"w": rand(1, 1, 2, 2)}, auto_pad="SAME_UPPER", strides=[2, 2]
    )
    message = refused(model)
    assert "Conv node 'conv_node'" in message and "auto_pad=SAME_UPPER" in message


@pytest.mark.parametrize(("k", "largest"), [(2, 1), (4, 0)])
def test_topk_runtime_k(k: int, largest: int) -> None:
    # K as a graph input: the result extent is bound when the model runs; ties (repeated
    # values) resolve to the lower index.
    x = np.round(rand(3, 6), 1)
    x[:, 4] = x[:, 1]
    inputs = {"x": (x, ["N", 6]), "k": (np.array([k], "int64"), None)}
    model = node_model("TopK", inputs, outputs={"v": "float32", "i": "int64"}, largest=largest)
    check(model, inputs)


def test_topk_negative_k_refused() -> None:
    inputs = {"x": (rand(3, 6), None)}
    model = node_model(
        "TopK", inputs, {"k": np.array([-1], "int64")}, outputs={"v": "float32", "i": "int64"},
        out_shapes={"v": [3, 1], "i": [3, 1]},
    )  # fmt: skip
    message = refused(model)
    assert "TopK node 'topk_node'" in message and "K=-1" in message


def test_dropout_training_refused() -> None:
    inputs = {"x": (rand(2, 3), None)}
    model = node_model(
        "Dropout", inputs, {"r": np.array(0.5, "float32"), "t": np.array(True)}, opset=13
    )
    message = refused(model)
    assert "Dropout node 'dropout_node'" in message and "training_mode" in message
