"""Elementwise legalizations executed by the TIR interpreter, against numpy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _ops_harness import legalize, prim_funcs, run

from relaxvm.ir.relax import PrimValue, op
from relaxvm.ir.relax.op._common import make_call
from relaxvm.transform import AnnotateTIROpPattern

RNG = np.random.default_rng(0)


def _data(shape: tuple[int, ...], dtype: str, positive: bool = False) -> np.ndarray:
    if dtype == "bool":
        return RNG.random(shape) > 0.5
    if dtype.startswith("int"):
        low = 1 if positive else -5
        return RNG.integers(low, 6, size=shape).astype(dtype)
    values = RNG.uniform(0.5 if positive else -2, 2, size=shape)
    return values.astype(dtype)


BINARY = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
}


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_binary_broadcast(name: str, dtype: str) -> None:
    a, b = _data((2, 3), dtype), _data((3,), dtype)
    got = run(getattr(op, name), [("a", (2, 3), dtype), ("b", (3,), dtype)], [a, b])
    want = BINARY[name](a, b)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_divisions_and_power(dtype: str) -> None:
    a = _data((2, 3), dtype)
    b = _data((2, 1), dtype, positive=True)
    params = [("a", (2, 3), dtype), ("b", (2, 1), dtype)]
    div = run(op.divide, params, [a, b])
    fdiv = run(op.floor_divide, params, [a, b])
    if dtype == "float32":
        np.testing.assert_allclose(div, a / b, rtol=1e-6)
        np.testing.assert_allclose(fdiv, np.floor_divide(a, b), rtol=1e-6)
        base = np.abs(a) + 0.5
        np.testing.assert_allclose(run(op.power, params, [base, b]), base**b, rtol=1e-5)
    else:
        np.testing.assert_array_equal(div, np.trunc(a / b).astype(dtype))  # C rounding, as TVM
        np.testing.assert_array_equal(fdiv, a // b)
        np.testing.assert_array_equal(run(op.power, params, [a, b]), a**b)


def test_symbolic_broadcast_both_ways() -> None:
    # (n, 1) + (1, m): each operand broadcasts along the other's symbolic axis.
    params = [("a", ("n", 1), "float32"), ("b", (1, "m"), "float32")]
    a, b = _data((3, 1), "float32"), _data((1, 4), "float32")
    np.testing.assert_allclose(run(op.add, params, [a, b]), a + b)


def test_unrelated_symbolic_dims_broadcast_at_run_time() -> None:
    # (n,) * (m,): inference keeps n; when m turns out to be 1 the kernel still broadcasts.
    params = [("a", ("n",), "float32"), ("b", ("m",), "float32")]
    a, b = _data((4,), "float32"), _data((1,), "float32")
    np.testing.assert_allclose(run(op.multiply, params, [a, b]), a * b)
    b4 = _data((4,), "float32")
    np.testing.assert_allclose(run(op.multiply, params, [a, b4]), a * b4)


def test_prim_value_operand() -> None:
    a = _data((2, 2), "float32")
    got = run(lambda x: op.multiply(x, PrimValue(2.5)), [("a", (2, 2), "float32")], [a])
    np.testing.assert_allclose(got, a * np.float32(2.5))


def test_logical() -> None:
    params = [("a", (2, 3), "bool"), ("b", (3,), "bool")]
    a, b = _data((2, 3), "bool"), _data((3,), "bool")
    for name, ref in (("logical_and", np.logical_and), ("logical_or", np.logical_or)):
        np.testing.assert_array_equal(run(getattr(op, name), params, [a, b]), ref(a, b))
    np.testing.assert_array_equal(run(op.logical_xor, params, [a, b]), np.logical_xor(a, b))
    not_a = run(op.logical_not, params[:1], [a])
    np.testing.assert_array_equal(not_a, ~a)


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf)(x.astype("float64")).astype(x.dtype)


FLOAT_UNARY = {
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "tanh": np.tanh,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "erf": _erf,
    "abs": np.abs,
    "negative": np.negative,
    "round": np.round,
    "floor": np.floor,
    "ceil": np.ceil,
}


@pytest.mark.parametrize("name", sorted(FLOAT_UNARY))
def test_float_unary_symbolic(name: str) -> None:
    x = _data((3, 2), "float32", positive=name in ("log", "sqrt", "rsqrt"))
    got = run(getattr(op, name), [("x", ("n", 2), "float32")], [x])
    np.testing.assert_allclose(got, FLOAT_UNARY[name](x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["abs", "negative", "round", "floor", "ceil"])
def test_int_unary(name: str) -> None:
    x = _data((5,), "int32")
    np.testing.assert_array_equal(run(getattr(op, name), [("x", (5,), "int32")], [x]),
                                  FLOAT_UNARY[name](x))  # fmt: skip


def test_activations() -> None:
    x = _data((2, 3), "float32")
    params = [("x", (2, 3), "float32")]
    np.testing.assert_allclose(run(op.nn.relu, params, [x]), np.maximum(x, 0))
    gelu = 0.5 * x * (1 + _erf(x / np.sqrt(2).astype("float32")))
    np.testing.assert_allclose(run(op.nn.gelu, params, [x]), gelu, rtol=1e-5, atol=1e-6)
    silu = x / (1 + np.exp(-x))
    np.testing.assert_allclose(run(op.nn.silu, params, [x]), silu, rtol=1e-5, atol=1e-6)
    xi = _data((4,), "int32")
    np.testing.assert_array_equal(run(op.nn.relu, [("x", (4,), "int32")], [xi]), np.maximum(xi, 0))


def test_gelu_tanh_approximation_attr() -> None:
    # TVM's gelu_tanh; our op has no such attribute yet, so the call is built by hand.
    x = _data((5,), "float32")
    build = lambda t: make_call("relax.nn.gelu", [t], {"approximate": "tanh"})  # noqa: E731
    got = run(build, [("x", (5,), "float32")], [x])
    want = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_clip(dtype: str) -> None:
    x = _data((2, 4), dtype)
    got = run(lambda t: op.clip(t, -1, 1), [("x", (2, 4), dtype)], [x])
    np.testing.assert_array_equal(got, np.clip(x, -1, 1))


@pytest.mark.parametrize(
    ("src", "dst"), [("float32", "int32"), ("int32", "float32"), ("float32", "bool")]
)
def test_astype(src: str, dst: str) -> None:
    x = _data((2, 3), src) * (3 if src == "float32" else 1)
    got = run(lambda t: op.astype(t, dst), [("x", (2, 3), src)], [x])
    np.testing.assert_array_equal(got, x.astype(dst))


def test_where_three_way_broadcast() -> None:
    params = [("c", (2, 1), "bool"), ("a", (3,), "int32"), ("b", (2, 3), "int32")]
    c, a, b = _data((2, 1), "bool"), _data((3,), "int32"), _data((2, 3), "int32")
    np.testing.assert_array_equal(run(op.where, params, [c, a, b]), np.where(c, a, b))


def test_primfunc_names_and_patterns() -> None:
    mod, _, _ = legalize(op.add, [("a", (2, 3), "float32"), ("b", (2, 3), "float32")])
    (func,) = prim_funcs(mod).values()
    assert func.attrs["global_symbol"] == "add" and func.attrs["op_pattern"] == 0
    mod, _, _ = legalize(op.add, [("a", (2, 3), "float32"), ("b", (3,), "float32")])
    assert prim_funcs(mod)["add"].attrs["op_pattern"] == 1
    # TVM's legalization of a unary op: the topi kernel "tir_exp", without a pattern until
    # AnnotateTIROpPattern finds it elementwise.
    mod, _, _ = legalize(op.exp, [("a", (2,), "float32")])
    assert "op_pattern" not in prim_funcs(mod)["tir_exp"].attrs
    annotated = AnnotateTIROpPattern()(mod)
    assert prim_funcs(annotated)["tir_exp"].attrs["op_pattern"] == 0
    # Rounding an int tensor is also a topi kernel (the identity), as TVM.
    mod, _, _ = legalize(op.floor, [("a", (2,), "int32")])
    assert set(prim_funcs(mod)) == {"tir_floor"}
    # clip: constant bounds on a float tensor are TVM's tir_clip; an int tensor keeps ours.
    mod, _, _ = legalize(lambda t: op.clip(t, 5, 8), [("a", (2,), "float32")])
    assert set(prim_funcs(mod)) == {"tir_clip"}
    mod, _, _ = legalize(lambda t: op.clip(t, 5, 8), [("a", (2,), "int32")])
    assert set(prim_funcs(mod)) == {"clip"}
