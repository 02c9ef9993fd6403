"""topi binary operators: numpy broadcasting, scalars, dtypes and errors."""

from __future__ import annotations

import numpy as np
import pytest

from relaxvm import topi
from relaxvm.errors import VMTypeError, VMValueError
from relaxvm.ir import PrimExpr, Var
from relaxvm.ir.tir import te

RNG = np.random.default_rng(0)
A = RNG.standard_normal((2, 3, 4)).astype("float32")
B = RNG.standard_normal((3, 1)).astype("float32") + 2.0  # broadcasts, never zero
INTS = np.array([[7, -7, 5], [-9, 4, 0]], "int32")
J = np.array([2, 3, -4], "int32")

FLOAT_CASES = [
    (topi.add, np.add),
    (topi.subtract, np.subtract),
    (topi.multiply, np.multiply),
    (topi.divide, np.divide),
    (topi.floor_divide, np.floor_divide),
    (topi.floor_mod, np.mod),
    (topi.mod, np.fmod),
    (topi.maximum, np.maximum),
    (topi.minimum, np.minimum),
    (topi.equal, np.equal),
    (topi.not_equal, np.not_equal),
    (topi.less, np.less),
    (topi.less_equal, np.less_equal),
    (topi.greater, np.greater),
    (topi.greater_equal, np.greater_equal),
]


@pytest.mark.parametrize(("op", "ref"), FLOAT_CASES, ids=[c[1].__name__ for c in FLOAT_CASES])
def test_float_binary_broadcasts_like_numpy(interp, op, ref) -> None:
    got = interp(op, A, B)
    want = ref(A, B)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_power_float_and_int(interp) -> None:
    base = np.abs(A) + 0.5
    np.testing.assert_allclose(interp(topi.power, base, B), base**B, rtol=1e-5)
    ints = np.array([2, 3, -2], "int32")
    np.testing.assert_array_equal(
        interp(topi.power, ints, np.array([3, 2, 3], "int32")), [8, 9, -8]
    )


def test_integer_division_and_remainders(interp) -> None:
    np.testing.assert_array_equal(interp(topi.divide, INTS, J), np.trunc(INTS / J).astype("int32"))
    np.testing.assert_array_equal(interp(topi.floor_divide, INTS, J), INTS // J)
    np.testing.assert_array_equal(interp(topi.floor_mod, INTS, J), INTS % J)
    np.testing.assert_array_equal(interp(topi.mod, INTS, J), np.fmod(INTS, J))


def test_python_number_takes_the_tensor_dtype(interp) -> None:
    out = interp(lambda x: topi.multiply(x, 2), A)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, A * 2)
    left = interp(lambda x: topi.subtract(10, x), INTS)
    assert left.dtype == np.int32
    np.testing.assert_array_equal(left, 10 - INTS)


def test_primexpr_operand_and_scalar_result() -> None:
    n = Var("n")
    x = te.placeholder((n,), "int64", name="x")
    out = topi.add(x, n)
    assert isinstance(out, te.Tensor) and out.dtype == "int64"
    # Neither operand a tensor: the expression itself, as TVM.
    expr = topi.multiply(n, 3)
    assert isinstance(expr, PrimExpr) and str(expr) == "n * 3"


def test_logical_ops_read_operands_as_bool(interp) -> None:
    x = np.array([0, 1, 2, 0], "int32")
    y = np.array([True, True, False, False])
    np.testing.assert_array_equal(interp(topi.logical_and, x, y), np.logical_and(x, y))
    np.testing.assert_array_equal(interp(topi.logical_or, x, y), np.logical_or(x, y))
    np.testing.assert_array_equal(interp(topi.logical_xor, x, y), np.logical_xor(x, y))
    np.testing.assert_array_equal(interp(topi.logical_not, x), np.logical_not(x))


def test_maximum_minimum_propagate_nan(interp) -> None:
    x = np.array([np.nan, 1.0, -np.inf, 2.0], "float32")
    y = np.array([0.0, np.nan, 3.0, np.inf], "float32")
    np.testing.assert_array_equal(interp(topi.maximum, x, y), np.maximum(x, y))
    np.testing.assert_array_equal(interp(topi.minimum, x, y), np.minimum(x, y))


def test_where_broadcasts_condition_and_values(interp) -> None:
    cond = np.array([True, False, True, False])
    x = np.arange(8, dtype="float32").reshape(2, 4)
    y = np.full((1, 4), -1.0, "float32")
    np.testing.assert_array_equal(interp(topi.where, cond, x, y), np.where(cond, x, y))
    scalar = interp(lambda c, v: topi.where(c, v, 0.5), cond, x)
    np.testing.assert_array_equal(scalar, np.where(cond, x, np.float32(0.5)))


def test_broadcast_to(interp) -> None:
    np.testing.assert_array_equal(
        interp(lambda x: topi.broadcast_to(x, (2, 3, 1)), B), np.broadcast_to(B, (2, 3, 1))
    )


def test_mismatched_shapes_raise() -> None:
    x = te.placeholder((2, 3), name="x")
    y = te.placeholder((4,), name="y")
    with pytest.raises(
        VMValueError, match=r"topi.add: shapes .* do not broadcast \(dimension 1: 3 vs 4\)"
    ):
        topi.add(x, y)
    with pytest.raises(VMValueError, match=r"topi.broadcast_to: shapes .* do not broadcast"):
        topi.broadcast_to(x, (2, 4))
    with pytest.raises(
        VMValueError, match=r"topi.broadcast_to: cannot broadcast shape \['2', '3'\]"
    ):
        topi.broadcast_to(x, (1, 3))
    with pytest.raises(VMValueError, match="cannot broadcast a rank-2 tensor to rank 1"):
        topi.broadcast_to(x, (3,))


def test_bad_operands_raise() -> None:
    x = te.placeholder((2,), name="x")
    with pytest.raises(
        VMTypeError, match="topi.add: operands must be te.Tensor, PrimExpr or numbers, got str"
    ):
        topi.add(x, "1")
    with pytest.raises(VMTypeError, match="topi.where: x and y must have the same dtype"):
        topi.where(x, x, te.placeholder((2,), "int32", name="y"))


def test_symbolic_extents_broadcast_to_the_symbol() -> None:
    n = Var("n")
    x = te.placeholder((n, 1), name="x")
    y = te.placeholder((3,), name="y")
    out = topi.add(x, y)
    assert [str(s) for s in out.shape] == ["n", "3"]


def test_float_floor_divide_and_mod_edge_values_match_numpy(interp) -> None:
    x = np.array([np.inf, -0.5, -3e-42, 7.0, -0.0, np.nan, 5.0, -1.5], "float32")
    y = np.array([2.0, np.inf, 1.5, -2.0, 2.0, 1.0, 0.0, np.inf], "float32")
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(interp(topi.floor_divide, x, y), np.floor_divide(x, y))
        np.testing.assert_array_equal(interp(topi.floor_mod, x, y), np.mod(x, y))
