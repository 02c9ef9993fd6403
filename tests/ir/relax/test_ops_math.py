"""Inference of the math family: trigonometric and hyperbolic functions, sign, square, trunc,
isnan/isinf/isfinite, mod/floor_mod, bitwise ops and shifts: dtypes, symbolic shapes,
unknown ranks, broadcasting and errors; plus the script spelling ``R.<op>``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm.ir import Var as SymVar
from relaxvm.ir.relax import PrimValue, TensorStructInfo, Var, op
from relaxvm.ir.relax.op import OpError, infer
from relaxvm.script import from_source

N = SymVar("n")
TRIG = ["sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh"]
CHECKS = ["isnan", "isinf", "isfinite"]
BITWISE = ["bitwise_and", "bitwise_or", "bitwise_xor"]
SHIFTS = ["left_shift", "right_shift"]


def tvar(shape: Any = None, dtype: str | None = "float32", ndim: int = -1) -> Var:
    return Var("x", TensorStructInfo(shape, dtype, ndim=ndim))


def sinfo_of(call: Any) -> TensorStructInfo:
    result = infer(call)
    assert isinstance(result, TensorStructInfo), result
    return result


def dims(info: TensorStructInfo) -> list[str]:
    assert info.shape_values is not None, info
    return [str(v) for v in info.shape_values]


@pytest.mark.parametrize("name", TRIG)
def test_trig_keeps_shape_and_float_dtype(name: str) -> None:
    builder = getattr(op, name)
    info = sinfo_of(builder(tvar((N, 3), "float16")))
    assert dims(info) == ["n", "3"] and str(info.dtype) == "float16"
    unknown = sinfo_of(builder(tvar(None, "float32", ndim=3)))
    assert unknown.shape_values is None and unknown.ndim == 3
    assert sinfo_of(builder(tvar(None, None))).dtype is None


@pytest.mark.parametrize("name", TRIG)
def test_trig_refuses_integers(name: str) -> None:
    with pytest.raises(OpError, match=rf"relax\.{name}: x must have a float dtype, got int32"):
        infer(getattr(op, name)(tvar((2,), "int32")))


@pytest.mark.parametrize("name", ["sign", "square", "trunc"])
def test_numeric_unary(name: str) -> None:
    builder = getattr(op, name)
    for dtype in ("float32", "int32", "uint8"):
        info = sinfo_of(builder(tvar((N, 4), dtype)))
        assert dims(info) == ["n", "4"] and str(info.dtype) == dtype
    with pytest.raises(OpError, match=rf"relax\.{name}: x must be numeric, got bool"):
        infer(builder(tvar((2,), "bool")))


@pytest.mark.parametrize("name", CHECKS)
def test_checks_give_bool_for_any_dtype(name: str) -> None:
    builder = getattr(op, name)
    for dtype in ("float32", "int64", "bool", None):
        info = sinfo_of(builder(tvar((N, 2), dtype)))
        assert dims(info) == ["n", "2"] and str(info.dtype) == "bool"
    assert sinfo_of(builder(tvar(None, ndim=-1))).ndim == -1


def test_bitwise_not_dtypes() -> None:
    assert str(sinfo_of(op.bitwise_not(tvar((3,), "int8"))).dtype) == "int8"
    assert str(sinfo_of(op.bitwise_not(tvar((3,), "bool"))).dtype) == "bool"
    with pytest.raises(OpError, match=r"relax\.bitwise_not: x must have an integer or bool"):
        infer(op.bitwise_not(tvar((3,), "float32")))


@pytest.mark.parametrize("name", ["mod", "floor_mod", *BITWISE, *SHIFTS])
def test_binary_broadcast_shapes(name: str) -> None:
    builder = getattr(op, name)
    a, b = tvar((N, 1, 4), "int32"), Var("y", TensorStructInfo((3, 1), "int32"))
    info = sinfo_of(builder(a, b))
    assert dims(info) == ["n", "3", "4"] and str(info.dtype) == "int32"
    ranked = sinfo_of(builder(tvar(None, "int32", ndim=2), tvar(None, "int32", ndim=3)))
    assert ranked.shape_values is None and ranked.ndim == 3
    # A scalar operand behaves as a 0-d tensor.
    assert dims(sinfo_of(builder(tvar((N,), "int64"), PrimValue(3)))) == ["n"]


@pytest.mark.parametrize("name", ["mod", "floor_mod"])
def test_remainders_take_floats_not_bools(name: str) -> None:
    builder = getattr(op, name)
    assert str(sinfo_of(builder(tvar((2,)), tvar((2,)))).dtype) == "float32"
    with pytest.raises(OpError, match=rf"relax\.{name}: operands must have numeric .* got bool"):
        infer(builder(tvar((2,), "bool"), tvar((2,), "bool")))


@pytest.mark.parametrize("name", BITWISE)
def test_bitwise_takes_ints_and_bools_not_floats(name: str) -> None:
    builder = getattr(op, name)
    assert str(sinfo_of(builder(tvar((2,), "bool"), tvar((2,), "bool"))).dtype) == "bool"
    assert str(sinfo_of(builder(tvar((2,), "uint16"), tvar((2,), "uint16"))).dtype) == "uint16"
    with pytest.raises(OpError, match=rf"relax\.{name}: operands must have integer or bool dtypes"):
        infer(builder(tvar((2,)), tvar((2,))))


@pytest.mark.parametrize("name", SHIFTS)
def test_shifts_take_integers_only(name: str) -> None:
    builder = getattr(op, name)
    for dtype in ("float32", "bool"):
        with pytest.raises(OpError, match=rf"relax\.{name}: operands must have integer dtypes"):
            infer(builder(tvar((2,), dtype), tvar((2,), dtype)))


def test_binary_dtype_mismatch_and_shape_mismatch() -> None:
    with pytest.raises(OpError, match=r"relax\.mod: operands must have the same dtype"):
        infer(op.mod(tvar((2,), "int32"), tvar((2,), "int64")))
    with pytest.raises(OpError, match=r"relax\.left_shift: "):
        infer(op.left_shift(tvar((2, 3), "int32"), tvar((4,), "int32")))


def test_script_spelling_and_run() -> None:
    source = """
from relaxvm.script import relax as R

@R.function
def main(x: R.Tensor(("n", 4), "int32"), f: R.Tensor(("n", 4), "float32")):
    with R.dataflow():
        a = R.right_shift(R.bitwise_and(x, R.const(6, "int32")), R.const(1, "int32"))
        b = R.isnan(R.acos(f))
        c = R.floor_mod(x, R.const(-3, "int32"))
        R.output(a, b, c)
    return (a, b, c)
"""
    func = from_source(source)
    text = func.script()
    for name in ("R.right_shift", "R.bitwise_and", "R.isnan", "R.acos", "R.floor_mod"):
        assert name in text, text
    ex = relaxvm.compile(relaxvm.ir.relax.IRModule({"main": func}), target="llvm")
    vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
    x = np.arange(-4, 4, dtype="int32").reshape(2, 4)
    f = np.array([[0.5, 2.0, -1.0, 1.5], [0.0, -3.0, 1.0, np.nan]], "float32")
    a, b, c = (t.numpy() for t in vm["main"](relaxvm.tensor(x), relaxvm.tensor(f)))
    np.testing.assert_array_equal(a, (x & 6) >> 1)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(b, np.isnan(np.arccos(f)))
    np.testing.assert_array_equal(c, np.mod(x, -3))
