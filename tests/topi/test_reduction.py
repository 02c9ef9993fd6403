"""topi reductions: axes, keepdims, NaN and tie rules, and errors."""

from __future__ import annotations

import numpy as np
import pytest

from relaxvm import topi
from relaxvm.errors import VMTypeError, VMValueError
from relaxvm.ir.tir import te

X = np.random.default_rng(1).standard_normal((2, 3, 4)).astype("float32")

CASES = [
    (topi.sum, np.sum),
    (topi.max, np.max),
    (topi.min, np.min),
    (topi.prod, np.prod),
    (topi.mean, np.mean),
]
AXES = [None, 0, -1, (0, 2), [1]]


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize(("op", "ref"), CASES, ids=[c[1].__name__ for c in CASES])
def test_reduction_matches_numpy(interp, op, ref, axis, keepdims) -> None:
    np_axis = tuple(axis) if isinstance(axis, list) else axis
    want = ref(X, axis=np_axis, keepdims=keepdims)
    got = interp(op, X, axis=axis, keepdims=keepdims)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_integer_sum_and_prod_keep_the_dtype(interp) -> None:
    ints = np.arange(1, 7, dtype="int32").reshape(2, 3)
    total = interp(topi.sum, ints, axis=1)
    assert total.dtype == np.int32
    np.testing.assert_array_equal(total, ints.sum(axis=1))
    np.testing.assert_array_equal(interp(topi.prod, ints, axis=0), ints.prod(axis=0))


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)], ids=str)
@pytest.mark.parametrize(("op", "ref"), [(topi.argmax, np.argmax), (topi.argmin, np.argmin)])
def test_arg_reductions_match_numpy(interp, op, ref, axis) -> None:
    data = np.array([[3.0, 1.0, 3.0], [0.5, 7.0, 0.5]], "float32")
    got = interp(op, data, axis=axis)
    assert got.dtype == np.int32
    want = ref(data.reshape(-1)) if axis in (None, (0, 1)) else ref(data, axis=axis)
    np.testing.assert_array_equal(got, want)


def test_argmax_nan_and_last_index(interp) -> None:
    data = np.array([[1.0, np.nan, 5.0, np.nan], [2.0, 9.0, 9.0, -1.0]], "float32")
    np.testing.assert_array_equal(interp(topi.argmax, data, axis=1), np.argmax(data, axis=1))
    np.testing.assert_array_equal(interp(topi.argmin, data, axis=1), np.argmin(data, axis=1))
    last = interp(topi.argmax, data[1:], axis=1, select_last_index=True)
    np.testing.assert_array_equal(last, [2])
    kept = interp(topi.argmax, data, axis=1, keepdims=True)
    assert kept.shape == (2, 1)


def test_max_min_propagate_nan(interp) -> None:
    data = np.array([[1.0, np.nan], [-np.inf, 2.0]], "float32")
    np.testing.assert_array_equal(interp(topi.max, data, axis=1), np.max(data, axis=1))
    np.testing.assert_array_equal(interp(topi.min, data, axis=1), np.min(data, axis=1))


def test_reduction_errors() -> None:
    x = te.placeholder((2, 3), name="x")
    with pytest.raises(
        VMValueError, match=r"topi.sum: axis 2 is out of range for a tensor of rank 2"
    ):
        topi.sum(x, axis=2)
    with pytest.raises(VMValueError, match=r"topi.max: axis \[0, -2\] repeats an axis"):
        topi.max(x, axis=[0, -2])
    with pytest.raises(VMTypeError, match="topi.min: axis must be an int, got 'a'"):
        topi.min(x, axis=["a"])
    with pytest.raises(VMTypeError, match="topi.mean: expects a float tensor, got int32"):
        topi.mean(te.placeholder((2,), "int32", name="i"))
    with pytest.raises(VMTypeError, match="topi.argmax: data must be a te.Tensor"):
        topi.argmax(np.zeros(3))  # type: ignore[arg-type]


@pytest.mark.parametrize("axis", [None, 1, (0, 1)], ids=str)
def test_all_and_any(interp, axis) -> None:
    data = np.array([[True, False, True], [True, True, True]])
    np.testing.assert_array_equal(interp(topi.all, data, axis=axis), np.all(data, axis=axis))
    np.testing.assert_array_equal(interp(topi.any, data, axis=axis), np.any(data, axis=axis))
    ints = np.array([[0, 0], [0, 3]], "int32")
    np.testing.assert_array_equal(interp(topi.any, ints, axis=1, keepdims=True), [[False], [True]])


def test_bool_arithmetic_errors_name_the_function() -> None:
    b = te.placeholder((2,), "bool", name="b")
    with pytest.raises(
        VMTypeError, match=r"topi.sum: bool tensors have no arithmetic; use topi.all/topi.any"
    ):
        topi.sum(b)
    with pytest.raises(VMTypeError, match=r"topi.add: Add: needs int or float operands, got bool"):
        topi.add(b, b)
