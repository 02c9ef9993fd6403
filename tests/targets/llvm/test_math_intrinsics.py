"""The trigonometric, ``trunc``, bitwise and shift intrinsics agree with numpy on the
interpreter and the llvm target, serial and vectorized, at their edges.

Shifts follow numpy where C leaves the result undefined: a count outside ``[0, bits)``
(negative included) gives 0 for ``shift_left`` and the sign fill (0 or -1) for
``shift_right``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import relaxvm_llvm
from relaxvm.errors import VMTypeError
from relaxvm.ir import Var, evaluate
from relaxvm.ir.tir import Buffer, BufferStore, For, ForKind, PrimFunc, run_prim_func
from relaxvm.ir.tir import intrin as T
from relaxvm.script import from_source

FLOAT_FNS: dict[str, Callable[..., Any]] = {
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "trunc": np.trunc,
}
FLOAT_EDGES = [0.0, -0.0, 0.5, -0.75, 1.0, -1.0, 1.5, -2.5, 3.0, 100.0, -100.0, 1e-40]
FLOAT_EDGES += [np.inf, -np.inf, np.nan]

INT_FNS: dict[str, Callable[..., Any]] = {
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
    "shift_left": np.left_shift,
    "shift_right": np.right_shift,
}
INT_DTYPES = ["int8", "int32", "int64", "uint8", "uint32"]


def _unary_func(name: str, dtype: str, kind: ForKind) -> PrimFunc:
    n = Var("n", "int64")
    a, out = Buffer("A", (n,), dtype), Buffer("out", (n,), dtype)
    i = Var("i", "int64")
    return PrimFunc([a, out], For(i, 0, n, kind, BufferStore(out, getattr(T, name)(a[i]), [i])))


def _binary_func(name: str, dtype: str, kind: ForKind) -> PrimFunc:
    n = Var("n", "int64")
    a, b, out = (Buffer(x, (n,), dtype) for x in ("A", "B", "out"))
    i = Var("i", "int64")
    value = getattr(T, name)(a[i], b[i])
    return PrimFunc([a, b, out], For(i, 0, n, kind, BufferStore(out, value, [i])))


def _run_both(func: PrimFunc, out_like: np.ndarray, *inputs: np.ndarray) -> dict[str, Any]:
    results = {}
    interp = np.zeros_like(out_like)
    run_prim_func(func, *inputs, interp)
    results["interpreter"] = interp
    native = np.zeros_like(out_like)
    relaxvm_llvm.build(func)["main"](*inputs, native)
    results["llvm"] = native
    return results


@pytest.mark.parametrize("kind", [ForKind.SERIAL, ForKind.VECTORIZED])
@pytest.mark.parametrize("name", sorted(FLOAT_FNS))
def test_float_intrinsics_match_numpy(name: str, kind: ForKind) -> None:
    x = np.array(FLOAT_EDGES * 2, "float32")  # 30 values: a vector body and a tail
    with np.errstate(all="ignore"):
        expected = FLOAT_FNS[name](x)
    for where, got in _run_both(_unary_func(name, "float32", kind), x, x).items():
        np.testing.assert_allclose(got, expected, rtol=2e-6, atol=0, err_msg=where)
        # Signed zeros are part of the contract (sin(-0.0) is -0.0).
        zeros = expected == 0
        np.testing.assert_array_equal(np.signbit(got[zeros]), np.signbit(expected[zeros]))


def _int_operands(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    info = np.iinfo(dtype)
    values = [info.min, info.min + 1, -7, -1, 0, 1, 5, info.max - 1, info.max]
    values = sorted({v for v in values if info.min <= v <= info.max})
    bits = info.bits
    counts = [0, 1, 3, bits - 1, bits, bits + 1, 2 * bits, -1, -bits]
    counts = sorted({c for c in counts if info.min <= c <= info.max})
    a, b = np.meshgrid(np.array(values, dtype), np.array(counts, dtype), indexing="ij")
    return a.ravel(), b.ravel()


@pytest.mark.parametrize("kind", [ForKind.SERIAL, ForKind.VECTORIZED])
@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("name", sorted(INT_FNS))
def test_integer_intrinsics_match_numpy(name: str, dtype: str, kind: ForKind) -> None:
    a, b = _int_operands(dtype)
    with np.errstate(all="ignore"):
        expected = INT_FNS[name](a, b)
    for where, got in _run_both(_binary_func(name, dtype, kind), a, a, b).items():
        np.testing.assert_array_equal(got, expected, err_msg=f"{where} {name} {dtype}")


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_bitwise_not_matches_numpy(dtype: str) -> None:
    a, _ = _int_operands(dtype)
    for where, got in _run_both(
        _unary_func("bitwise_not", dtype, ForKind.VECTORIZED), a, a
    ).items():
        np.testing.assert_array_equal(got, np.invert(a), err_msg=where)


def test_constant_folding_uses_the_same_rules() -> None:
    x = T.shift_left(1, Var("s", "int32"))
    assert str(x.dtype) == "int32"  # a Python int takes the other operand's type
    one = Var("one", "int32")
    assert evaluate(T.shift_left(one, 40), {one: 1}) == 0
    assert evaluate(T.shift_right(one, -1), {one: -8}) == -1
    assert evaluate(T.shift_left(one, 31), {one: 1}) == -(2**31)  # wraps like the hardware
    assert evaluate(T.bitwise_not(one), {one: 5}) == -6
    f = Var("f", "float32")
    assert evaluate(T.atanh(f), {f: 1.0}) == float("inf")  # a pole, not NaN
    assert evaluate(T.asin(f), {f: 2.0}) != evaluate(T.asin(f), {f: 2.0})  # NaN, no raise
    assert evaluate(T.sinh(f), {f: -1000.0}) == float("-inf")


def test_type_errors_name_the_intrinsic() -> None:
    with pytest.raises(VMTypeError, match=r"T\.shift_left: needs an integer argument"):
        T.shift_left(Var("f", "float32"), 1)
    with pytest.raises(VMTypeError, match=r"T\.bitwise_not: needs an integer argument"):
        T.bitwise_not(Var("b", "bool"))
    with pytest.raises(VMTypeError, match=r"T\.sin: needs a float argument"):
        T.sin(Var("i", "int32"))
    with pytest.raises(VMTypeError, match=r"tir\.bitwise_and: argument 1 .* has type int64"):
        T.Call("int32", "tir.bitwise_and", [Var("a", "int32"), Var("b", "int64")])


def test_script_round_trip() -> None:
    source = """
from relaxvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((8,), "int32"), B: T.Buffer((8,), "float32")):
    for i in T.serial(8):
        A[i] = T.bitwise_xor(T.shift_right(A[i], 2), T.bitwise_not(A[i]))
        B[i] = T.atan(T.sin(B[i])) + T.trunc(B[i])
"""
    func = from_source(source)
    text = func.script()
    for name in ("T.bitwise_xor", "T.shift_right", "T.bitwise_not", "T.atan", "T.sin", "T.trunc"):
        assert name in text, text
    a = np.arange(-4, 4, dtype="int32")
    b = np.linspace(-3, 3, 8).astype("float32")
    run_prim_func(from_source(text), a_out := a.copy(), b_out := b.copy())
    np.testing.assert_array_equal(a_out, np.bitwise_xor(a >> 2, ~a))
    np.testing.assert_allclose(b_out, np.arctan(np.sin(b)) + np.trunc(b), rtol=1e-6)
