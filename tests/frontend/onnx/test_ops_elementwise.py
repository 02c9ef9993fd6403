"""ONNX elementwise converters against onnxruntime (or the spec's reference evaluator where
onnxruntime lacks a kernel): unary math, broadcasting binary and variadic ops, comparisons,
logic and bit operations, Where, Clip, casts and activations; known-value folding (plain and
symbolic); and the refusals."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from relaxvm.errors import FrontendError, OpNotImplemented
from relaxvm.testing.onnx import check_model, make_model, require_onnx

onnx = require_onnx()
from onnx import helper  # noqa: E402

from relaxvm.frontend.onnx import from_onnx  # noqa: E402

RNG = np.random.default_rng(7)
COMPARISONS = ("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual")


def one_node(
    op_type: str,
    inputs: dict[str, np.ndarray],
    out_dtype: str,
    opset: int = 18,
    initializers: dict[str, np.ndarray] | None = None,
    out_shape: list[Any] | None = None,
    **attrs: Any,
) -> Any:
    """A model of one ``op_type`` node over ``inputs`` (graph inputs, shapes from the arrays)
    and ``initializers``; an empty name in ``inputs`` order is passed as an absent input."""
    names = list(inputs) + list(initializers or {})
    node = helper.make_node(op_type, names, ["out"], name="n0", **attrs)
    graph_inputs = {k: (str(v.dtype), list(v.shape)) for k, v in inputs.items() if k}
    shape = (
        out_shape
        if out_shape is not None
        else list(
            np.broadcast_shapes(
                *[v.shape for v in list(inputs.values()) + list((initializers or {}).values())]
            )
        )
    )
    return make_model([node], graph_inputs, {"out": (out_dtype, shape)}, initializers, opset=opset)


def check(model: Any, feeds: dict[str, np.ndarray], prefer: str = "onnxruntime", **kw: Any) -> None:
    """check_model against onnxruntime; against the spec's evaluator where onnxruntime has no
    kernel for the op and type (Sum of int32, Tan of float64...)."""
    feeds = {k: v for k, v in feeds.items() if k}
    try:
        check_model(model, feeds, prefer=prefer, **kw)
    except Exception as exc:
        if not type(exc).__module__.startswith("onnxruntime"):
            raise
        check_model(model, feeds, prefer="reference", **kw)


def floats(shape: tuple[int, ...], dtype: str = "float32", low: float = -3, high: float = 3):
    return RNG.uniform(low, high, shape).astype(dtype)


def ints(shape: tuple[int, ...], dtype: str, low: int = -20, high: int = 20) -> np.ndarray:
    info = np.iinfo(dtype)
    return RNG.integers(max(low, info.min), min(high, info.max), shape).astype(dtype)


# ---- unary ----------------------------------------------------------------------------------
UNARY_FLOAT = [
    ("Abs", {}),
    ("Neg", {}),
    ("Exp", {}),
    ("Floor", {}),
    ("Ceil", {}),
    ("Sign", {}),
    ("Sin", {}),
    ("Cos", {}),
    ("Tan", {}),
    ("Atan", {}),
    ("Sinh", {}),
    ("Cosh", {}),
    ("Asinh", {}),
    ("Erf", {}),
    ("Tanh", {}),
    ("Sigmoid", {}),
    ("Relu", {}),
    ("Softsign", {}),
    ("Softplus", {}),
    ("Reciprocal", {}),
    ("HardSwish", {}),
    ("LeakyRelu", {"alpha": 0.3}),
    ("Elu", {"alpha": 0.7}),
    ("Selu", {}),
    ("Selu", {"alpha": 1.2, "gamma": 2.0}),
    ("Celu", {"alpha": 0.5}),
    ("ThresholdedRelu", {"alpha": 0.4}),
    ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}),
    ("Mish", {}),
    ("Shrink", {"bias": 0.5, "lambd": 0.8}),
    ("Gelu", {}),
    ("Gelu", {"approximate": "tanh"}),
]


@pytest.mark.parametrize(("op_type", "attrs"), UNARY_FLOAT, ids=lambda v: str(v))
def test_unary_float(op_type: str, attrs: dict[str, Any]) -> None:
    x = floats((2, 5))
    x[0, 0] = 0.0
    check(one_node(op_type, {"x": x}, "float32", opset=20, **attrs), {"x": x})


@pytest.mark.parametrize("op_type", ["Log", "Sqrt", "Acosh"])
def test_unary_positive_domain(op_type: str) -> None:
    x = floats((3, 4), low=1.0, high=5.0)
    check(one_node(op_type, {"x": x}, "float32"), {"x": x})


@pytest.mark.parametrize("op_type", ["Asin", "Acos", "Atanh"])
def test_unary_unit_domain(op_type: str) -> None:
    x = floats((3, 4), low=-0.9, high=0.9)
    check(one_node(op_type, {"x": x}, "float32"), {"x": x})


@pytest.mark.parametrize("dtype", ["float16", "float64"])
@pytest.mark.parametrize("op_type", ["Exp", "Sqrt", "Sigmoid", "Softplus", "Round"])
def test_unary_other_float_widths(op_type: str, dtype: str) -> None:
    x = floats((2, 3), dtype, 0.1, 4.0)
    check(one_node(op_type, {"x": x}, dtype), {"x": x}, rtol=1e-3, atol=1e-3)


def test_round_halves_to_even() -> None:
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49, -3.7], "float32")
    got = check_model(one_node("Round", {"x": x}, "float32"), {"x": x})[0]
    np.testing.assert_array_equal(got, [-2, -2, -0, 0, 2, 2, 0, -4])


@pytest.mark.parametrize(
    ("op_type", "dtype"),
    [
        ("Abs", "int8"),
        ("Abs", "int64"),
        ("Abs", "uint8"),
        ("Neg", "int32"),
        ("Sign", "int16"),
        ("Relu", "int32"),
        ("BitwiseNot", "int16"),
        ("BitwiseNot", "uint8"),
    ],
)
def test_unary_int(op_type: str, dtype: str) -> None:
    x = ints((3, 4), dtype)
    check(one_node(op_type, {"x": x}, dtype), {"x": x})


def test_nan_and_inf() -> None:
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -1.5, 2.0], "float32")
    check(one_node("IsNaN", {"x": x}, "bool"), {"x": x})
    for pos, neg in ((1, 1), (1, 0), (0, 1), (0, 0)):
        model = one_node("IsInf", {"x": x}, "bool", detect_positive=pos, detect_negative=neg)
        check(model, {"x": x})
    for op_type in ("Sign", "Relu", "Elu", "LeakyRelu", "Sigmoid", "Abs", "Floor"):
        check(one_node(op_type, {"x": x}, "float32"), {"x": x})


def test_not() -> None:
    x = RNG.integers(0, 2, (3, 4)).astype(bool)
    check(one_node("Not", {"x": x}, "bool"), {"x": x})


# ---- binary ---------------------------------------------------------------------------------
BINARY_CASES = [
    (op_type, dtype)
    for op_type in ("Add", "Sub", "Mul", "Div", "Max", "Min", "Sum", *COMPARISONS)
    for dtype in ("float32", "int32", "uint8", "int64")
] + [("Mean", "float32"), ("Mean", "float64"), ("Add", "float16"), ("Mul", "float64")]


@pytest.mark.parametrize(("op_type", "dtype"), BINARY_CASES)
def test_binary_broadcasting(op_type: str, dtype: str) -> None:
    if dtype.startswith("float"):
        a, b = floats((2, 3, 4), dtype), floats((3, 1), dtype)
    else:
        a, b = ints((2, 3, 4), dtype, 1), ints((3, 1), dtype, 1)
    b[b == 0] = 1
    out = "bool" if op_type in COMPARISONS else dtype
    check(one_node(op_type, {"a": a, "b": b}, out), {"a": a, "b": b}, rtol=1e-3)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_integer_div_truncates_toward_zero(dtype: str) -> None:
    a = np.array([7, -7, 7, -7, 0, -1, 5], dtype)
    b = np.array([2, 2, -2, -2, 3, 2, -5], dtype)
    got = check_model(one_node("Div", {"a": a, "b": b}, dtype), {"a": a, "b": b})[0]
    np.testing.assert_array_equal(got, [3, -3, -3, 3, 0, 0, -1])


@pytest.mark.parametrize(
    ("dtype", "fmod"),
    [
        ("int32", 0),
        ("int32", 1),
        ("int8", 0),
        ("uint16", 0),
        ("float32", 1),
        ("float64", 1),
    ],
)
def test_mod(dtype: str, fmod: int) -> None:
    a = (
        np.array([[7, -7, 7, -7, 5, 0]], dtype)
        if not dtype.startswith("uint")
        else np.array([[7, 9, 200, 1, 5, 0]], dtype)
    )
    b = (
        np.array([3, 3, -3, -3, 5, 4], dtype)
        if not dtype.startswith("uint")
        else np.array([3, 4, 7, 3, 5, 4], dtype)
    )
    if dtype.startswith("float"):
        a = a + np.asarray(0.5, dtype)
    check(one_node("Mod", {"a": a, "b": b}, dtype, fmod=fmod), {"a": a, "b": b})


def test_float_mod_fmod0_is_numpy_mod() -> None:
    # onnxruntime refuses float fmod=0 before opset 28; the spec's evaluator is numpy's %.
    a = np.array([5.5, -5.5, 5.5, -5.5, 0.0, 3.0], "float32")
    b = np.array([2.0, 2.0, -2.0, -2.0, -3.0, np.inf], "float32")
    check(one_node("Mod", {"a": a, "b": b}, "float32"), {"a": a, "b": b}, prefer="reference")


@pytest.mark.parametrize(
    ("base", "exponent"),
    [
        ("float32", "float32"),
        ("float32", "int64"),
        ("float32", "int32"),
        ("int32", "int32"),
        ("int64", "int64"),
        ("int32", "float32"),
        ("float16", "int64"),
    ],
)
def test_pow_types(base: str, exponent: str) -> None:
    x = np.array([[1, 2, 3], [4, 5, 6]]).astype(base)
    y = np.array([2, 3, 1]).astype(exponent)
    if exponent.startswith("float"):
        y = y + np.asarray(0.5, exponent)
    check(one_node("Pow", {"x": x, "y": y}, base), {"x": x, "y": y}, rtol=1e-3)


def test_variadic() -> None:
    a, b, c = floats((3, 1)), floats((1, 4)), floats((4,))
    for op_type in ("Max", "Min", "Sum", "Mean"):
        model = one_node(op_type, {"a": a, "b": b, "c": c}, "float32")
        check(model, {"a": a, "b": b, "c": c})
        check(one_node(op_type, {"a": a}, "float32"), {"a": a})


def test_max_min_propagate_nan() -> None:
    a = np.array([np.nan, 1.0, 2.0], "float32")
    b = np.array([0.0, np.nan, 1.0], "float32")
    for op_type, want in (("Max", [np.nan, np.nan, 2.0]), ("Min", [np.nan, np.nan, 1.0])):
        got = check_model(one_node(op_type, {"a": a, "b": b}, "float32"), {"a": a, "b": b})
        np.testing.assert_array_equal(got[0], want)


@pytest.mark.parametrize("op_type", ["And", "Or", "Xor"])
def test_logic(op_type: str) -> None:
    a = RNG.integers(0, 2, (2, 3, 4)).astype(bool)
    b = RNG.integers(0, 2, (3, 4)).astype(bool)
    check(one_node(op_type, {"a": a, "b": b}, "bool"), {"a": a, "b": b})


@pytest.mark.parametrize(
    ("op_type", "dtype"),
    [
        ("BitwiseAnd", "int32"),
        ("BitwiseOr", "uint8"),
        ("BitwiseXor", "int64"),
    ],
)
def test_bitwise(op_type: str, dtype: str) -> None:
    a, b = ints((2, 3), dtype, -100, 100), ints((3,), dtype, -100, 100)
    check(one_node(op_type, {"a": a, "b": b}, dtype), {"a": a, "b": b})


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
@pytest.mark.parametrize("dtype", ["uint8", "uint32", "uint64"])
def test_bitshift(direction: str, dtype: str) -> None:
    x = np.array([[1, 2, 255, 16]], dtype)
    y = np.array([1, 3, 4, 0], dtype)
    check(one_node("BitShift", {"x": x, "y": y}, dtype, direction=direction), {"x": x, "y": y})


def test_bitshift_out_of_range_and_signed() -> None:
    # Opset 28 semantics (signed types, shifts >= the width); checked against the reference.
    x = np.array([5, -5, -128, 64, 3, -3], "int8")
    y = np.array([1, 1, 7, 8, -1, 9], "int8")
    for direction in ("LEFT", "RIGHT"):
        model = one_node("BitShift", {"x": x, "y": y}, "int8", opset=28, direction=direction)
        check(model, {"x": x, "y": y}, prefer="reference")
    u = np.array([1, 255, 7], "uint8")
    v = np.array([8, 9, 200], "uint8")
    model = one_node("BitShift", {"x": u, "y": v}, "uint8", direction="LEFT")
    np.testing.assert_array_equal(check_model(model, {"x": u, "y": v})[0], [0, 0, 0])


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_where(dtype: str) -> None:
    cond = RNG.integers(0, 2, (2, 1, 4)).astype(bool)
    x = floats((3, 4)).astype(dtype)
    y = floats((4,)).astype(dtype)
    check(one_node("Where", {"c": cond, "x": x, "y": y}, dtype), {"c": cond, "x": x, "y": y})


def test_prelu_unidirectional_slope() -> None:
    x = floats((2, 3, 4))
    for slope in (floats((3, 1)), floats((4,)), floats((1,)), floats((2, 3, 4))):
        check(one_node("PRelu", {"x": x, "s": slope}, "float32"), {"x": x, "s": slope})
    xi = ints((2, 3), "int32")
    si = ints((3,), "int32")
    check(one_node("PRelu", {"x": xi, "s": si}, "int32"), {"x": xi, "s": si})


def test_shrink_int() -> None:
    x = ints((3, 4), "int32")
    check(one_node("Shrink", {"x": x}, "int32", bias=2.0, lambd=3.0), {"x": x})


# ---- Clip, Cast -----------------------------------------------------------------------------
def test_clip_opset6_attributes() -> None:
    x = floats((3, 4))
    check(one_node("Clip", {"x": x}, "float32", opset=6, min=-0.5, max=1.0), {"x": x})
    check(one_node("Clip", {"x": x}, "float32", opset=6, max=0.2), {"x": x})


@pytest.mark.parametrize(("low", "high"), [(-1.0, 1.0), (None, 0.5), (-0.5, None), (2.0, 1.0)])
@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_clip_inputs(low: float | None, high: float | None, dtype: str) -> None:
    x = floats((3, 4), low=-3, high=3) if dtype == "float32" else ints((3, 4), dtype)
    inits = {}
    names = {"x": x}
    for name, bound in (("lo", low), ("hi", high)):
        if bound is None:
            names[""] = np.zeros(0)  # an absent optional input
        else:
            inits[name] = np.asarray(bound * (1 if dtype == "float32" else 3)).astype(dtype)
    # Keep ONNX's input order: x, min, max (an absent one as "").
    node = helper.make_node(
        "Clip", ["x", "lo" if low is not None else "", "hi" if high is not None else ""], ["y"]
    )
    model = make_model([node], {"x": (dtype, [3, 4])}, {"y": (dtype, [3, 4])}, inits, opset=13)
    check(model, {"x": x})


def test_clip_nan_stays_nan() -> None:
    x = np.array([np.nan, -5.0, 5.0], "float32")
    model = one_node(
        "Clip",
        {"x": x},
        "float32",
        opset=13,
        initializers={"lo": np.asarray(-1.0, "float32"), "hi": np.asarray(1.0, "float32")},
        out_shape=[3],
    )
    got = check_model(model, {"x": x})[0]
    np.testing.assert_array_equal(got, [np.nan, -1.0, 1.0])


CASTS = [
    ("float32", "int32"),
    ("float32", "float16"),
    ("float64", "float16"),
    ("float16", "float64"),
    ("int64", "float32"),
    ("int32", "int8"),
    ("uint8", "int64"),
    ("bool", "float32"),
    ("float32", "bool"),
    ("int32", "bool"),
    ("int64", "uint8"),
]


@pytest.mark.parametrize(("source", "target"), CASTS)
def test_cast(source: str, target: str) -> None:
    x = np.array([[0.0, 1.5, -2.75, 3.0], [300.0, -0.0, 7.25, 1e-3]])
    if source == "bool":
        x = x != 0
    elif source.startswith("uint"):
        x = np.abs(x)
    x = x.astype(source)
    to = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(target))
    check(one_node("Cast", {"x": x}, target, to=to), {"x": x})
    like = np.zeros((1,), target)
    model = one_node(
        "CastLike", {"x": x}, target, initializers={"like": like}, out_shape=list(x.shape)
    )
    check(model, {"x": x})


def test_cast_nan_to_bool_is_true() -> None:
    x = np.array([np.nan, 0.0, -0.0, 0.25], "float32")
    got = check_model(one_node("Cast", {"x": x}, "bool", to=9), {"x": x})[0]
    np.testing.assert_array_equal(got, [True, False, False, True])


def test_opset6_legacy_broadcast_axis() -> None:
    a = floats((2, 3, 4))
    b = floats((3,))
    node = helper.make_node("Add", ["a", "b"], ["y"], broadcast=1, axis=1)
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("a", 1, [2, 3, 4]),
            helper.make_tensor_value_info("b", 1, [3]),
        ],
        [helper.make_tensor_value_info("y", 1, [2, 3, 4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 6)])
    from relaxvm.testing.onnx import run_model

    got = run_model(model, {"a": a, "b": b})[0]
    np.testing.assert_allclose(got, a + b[:, None], rtol=1e-6)


# ---- folding --------------------------------------------------------------------------------
def _script(model: Any) -> str:
    return from_onnx(model).script()


def test_constant_inputs_fold() -> None:
    inits = {"a": np.array([1, 2, 3], "int64"), "b": np.array([4, -5, 6], "int64")}
    cases = [
        ("Add", "R.add", [5, -3, 9]),
        ("Sub", "R.subtract", [-3, 7, -3]),
        ("Mul", "R.multiply", [4, -10, 18]),
        ("Div", "R.divide", [0, 0, 0]),
        ("Mod", "R.floor_mod", [1, -3, 3]),
        ("Max", "R.maximum", [4, 2, 6]),
        ("Less", "R.less", [True, False, True]),
        ("Equal", "R.equal", [False, False, False]),
    ]
    for op_type, call, want in cases:
        out = "bool" if op_type in COMPARISONS else "int64"
        model = one_node(op_type, {}, out, initializers=inits, out_shape=[3])
        assert call not in _script(model), op_type
        got = check_model(model, {})[0]
        np.testing.assert_array_equal(got, want, err_msg=op_type)


def test_unary_and_logic_fold() -> None:
    x = {"x": np.array([-1.5, 0.0, 2.5], "float32")}
    for op_type, call in (("Abs", "R.abs"), ("Neg", "R.negative"), ("Sign", "R.sign")):
        model = one_node(op_type, {}, "float32", initializers=x, out_shape=[3])
        assert call not in _script(model)
        check(model, {})
    cast = one_node("Cast", {}, "int32", initializers=x, out_shape=[3], to=6)
    assert "R.astype" not in _script(cast)
    check(cast, {})
    flags = {"p": np.array([True, False, True]), "q": np.array([True, True, False])}
    for op_type, call in (("And", "R.logical_and"), ("Or", "R.logical_or")):
        model = one_node(op_type, {}, "bool", initializers=flags, out_shape=[3])
        assert call not in _script(model)
        check(model, {})
    where = one_node(
        "Where",
        {},
        "float32",
        initializers={
            "c": np.array([True, False, True]),
            "x": np.ones(3, "float32"),
            "y": np.zeros(3, "float32"),
        },
    )
    assert "R.where" not in _script(where)


def test_symbolic_shape_arithmetic_folds() -> None:
    # Shape -> Mul/Div/Equal/Where/Max on the symbolic batch dim, as exporters write it.
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Mul", ["s", "two"], ["s2"]),
        helper.make_node("Div", ["s2", "half"], ["s3"]),
        helper.make_node("Equal", ["s3", "neg1"], ["e"]),
        helper.make_node("Where", ["e", "one", "s3"], ["s4"]),
        helper.make_node("Max", ["s4", "one"], ["s5"]),
        helper.make_node("Reshape", ["x", "s5"], ["y"]),
    ]
    inits = {
        "two": np.array([2, 1], np.int64),
        "half": np.array([2, 1], np.int64),
        "neg1": np.array(-1, np.int64),
        "one": np.array(1, np.int64),
    }
    model = make_model(
        nodes, {"x": ("float32", ["batch", 4])}, {"y": ("float32", ["batch", 4])}, inits
    )
    text = _script(model)
    for call in ("R.multiply", "R.divide", "R.equal", "R.where", "R.maximum"):
        assert call not in text, call
    check_model(model, {"x": floats((5, 4))})


def test_symbolic_comparison_not_provable_is_emitted() -> None:
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Less", ["s", "three"], ["y"]),
    ]
    model = make_model(
        nodes,
        {"x": ("float32", ["batch", 4])},
        {"y": ("bool", [2])},
        {"three": np.array(3, np.int64)},
    )
    assert "R.less" in _script(model)
    check_model(model, {"x": floats((2, 4))})
    check_model(model, {"x": floats((5, 4))})


# ---- refusals -------------------------------------------------------------------------------
@pytest.mark.parametrize(("to", "name"), [(8, "STRING"), (16, "BFLOAT16"), (18, "FLOAT8E4M3FNUZ")])
def test_cast_to_unsupported_type(to: int, name: str) -> None:
    node = helper.make_node("Cast", ["x"], ["y"], name="to_odd", to=to)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", 1, [2])],
        [helper.make_tensor_value_info("y", to, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    with pytest.raises(OpNotImplemented, match=rf"Cast node 'to_odd'.*{name}"):
        from_onnx(model)


@pytest.mark.parametrize(
    ("op_type", "attrs", "pattern"),
    [
        ("Mod", {"fmod": 2}, "fmod must be 0 or 1"),
        ("BitShift", {"direction": "UP"}, "direction must be 'LEFT' or 'RIGHT'"),
        ("Gelu", {"approximate": "fast"}, "approximate must be 'none' or 'tanh'"),
    ],
)
def test_bad_attributes_are_refused(op_type: str, attrs: dict[str, Any], pattern: str) -> None:
    dtype = "uint8" if op_type == "BitShift" else "float32"
    x = np.ones((2,), dtype)
    feeds = {"x": x} if op_type == "Gelu" else {"x": x, "z": x}
    node = helper.make_node(op_type, list(feeds), ["y"], name="bad", **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(k, 2 if dtype == "uint8" else 1, [2]) for k in feeds],
        [helper.make_tensor_value_info("y", 2 if dtype == "uint8" else 1, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    with pytest.raises(OpNotImplemented, match=rf"{op_type} node 'bad'.*{pattern}"):
        from_onnx(model)


def test_integer_division_by_zero_while_folding() -> None:
    inits = {"a": np.array([4], "int64"), "b": np.array([0], "int64")}
    for op_type in ("Div", "Mod"):
        model = one_node(op_type, {}, "int64", initializers=inits, out_shape=[1])
        with pytest.raises(FrontendError, match=rf"{op_type} node 'n0' divides an integer by zero"):
            from_onnx(model)


def test_unsupported_types_are_refused() -> None:
    x = np.ones((2,), "int32")
    with pytest.raises(OpNotImplemented, match=r"Mean node 'n0'.*int32"):
        from_onnx(one_node("Mean", {"x": x, "z": x}, "int32"))
    with pytest.raises(OpNotImplemented, match=r"Shrink node 'n0'.*whole numbers"):
        from_onnx(one_node("Shrink", {"x": x}, "int32", bias=0.5))
