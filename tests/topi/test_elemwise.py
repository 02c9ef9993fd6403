"""topi unary operators, clip, cast and the filled tensors against numpy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from relaxvm import topi
from relaxvm.errors import VMTypeError, VMValueError
from relaxvm.ir.tir import te

X = np.array([[-2.5, -0.5, 0.0, 0.5], [1.5, 2.5, -1.2, 3.7]], "float32")
POS = np.abs(X) + 0.25

UNARY = [
    (topi.exp, np.exp, X),
    (topi.log, np.log, POS),
    (topi.sqrt, np.sqrt, POS),
    (topi.rsqrt, lambda v: 1 / np.sqrt(v), POS),
    (topi.sigmoid, lambda v: 1 / (1 + np.exp(-v)), X),
    (topi.tanh, np.tanh, X),
    (topi.erf, np.vectorize(math.erf), X),
    (topi.sin, np.sin, X),
    (topi.cos, np.cos, X),
    (topi.abs, np.abs, X),
    (topi.negative, np.negative, X),
    (topi.floor, np.floor, X),
    (topi.ceil, np.ceil, X),
    (topi.round, np.round, X),
    (topi.trunc, np.trunc, X),
    (topi.sign, np.sign, X),
    (topi.identity, lambda v: v, X),
]


@pytest.mark.parametrize(("op", "ref", "data"), UNARY, ids=[u[0].__name__ for u in UNARY])
def test_unary_matches_numpy(interp, op, ref, data) -> None:
    got = interp(op, data)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, ref(data).astype("float32"), rtol=1e-5, atol=1e-6)


def test_integer_abs_sign_and_rounding(interp) -> None:
    ints = np.array([-3, 0, 4], "int32")
    np.testing.assert_array_equal(interp(topi.abs, ints), np.abs(ints))
    np.testing.assert_array_equal(interp(topi.sign, ints), np.sign(ints))
    np.testing.assert_array_equal(interp(topi.floor, ints), ints)
    np.testing.assert_array_equal(interp(topi.negative, ints), -ints)


def test_sign_and_isnan_keep_nan(interp) -> None:
    v = np.array([np.nan, -0.0, -np.inf, 2.0], "float32")
    np.testing.assert_array_equal(interp(topi.sign, v), np.sign(v))
    np.testing.assert_array_equal(interp(topi.isnan, v), np.isnan(v))


def test_clip_and_cast(interp) -> None:
    v = np.array([np.nan, -5.0, 0.5, 7.0], "float32")
    np.testing.assert_array_equal(interp(lambda x: topi.clip(x, -1, 2), v), np.clip(v, -1, 2))
    casted = interp(lambda x: topi.cast(x, "int32"), X)
    assert casted.dtype == np.int32
    np.testing.assert_array_equal(casted, X.astype("int32"))
    np.testing.assert_array_equal(interp(lambda x: topi.cast(x, "bool"), X), X.astype(bool))


def test_full_and_likes(interp) -> None:
    full = interp(lambda: topi.full((2, 3), "int32", 7))
    assert full.dtype == np.int32
    np.testing.assert_array_equal(full, np.full((2, 3), 7))
    np.testing.assert_array_equal(interp(lambda x: topi.full_like(x, 1.5), X), np.full_like(X, 1.5))
    np.testing.assert_array_equal(interp(topi.zeros_like, X), np.zeros_like(X))
    np.testing.assert_array_equal(interp(topi.ones_like, X), np.ones_like(X))


def test_float_only_math_rejects_integers() -> None:
    x = te.placeholder((2,), "int32", name="x")
    with pytest.raises(
        VMTypeError, match=r"topi.exp: expects a float tensor, got int32; cast it first"
    ):
        topi.exp(x)
    with pytest.raises(VMTypeError, match="topi.negative: bool tensors cannot be negated"):
        topi.negative(te.placeholder((2,), "bool", name="b"))
    with pytest.raises(VMTypeError, match="topi.sqrt: x must be a te.Tensor, got list"):
        topi.sqrt([1.0])  # type: ignore[arg-type]
    with pytest.raises(
        VMValueError, match="topi.full fill_value: 1.5 is not representable as int32"
    ):
        topi.full((2,), "int32", 1.5)


def test_tan_log2_isinf_isfinite(interp) -> None:
    np.testing.assert_allclose(interp(topi.tan, X), np.tan(X), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(interp(topi.log2, POS), np.log2(POS), rtol=1e-5, atol=1e-6)
    v = np.array([np.nan, np.inf, -np.inf, 1.0], "float32")
    np.testing.assert_array_equal(interp(topi.isinf, v), np.isinf(v))
    np.testing.assert_array_equal(interp(topi.isfinite, v), np.isfinite(v))
