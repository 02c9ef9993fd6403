"""topi's inverse and hyperbolic trigonometric functions (TVM's ``topi.acos`` ...) against numpy,
through the TIR interpreter and compiled for llvm."""

from __future__ import annotations

import numpy as np
import pytest

from relaxvm import topi
from relaxvm.errors import VMTypeError
from relaxvm.ir.tir import te

UNIT = np.array([[-0.9, -0.5, 0.0], [0.25, 0.5, 0.9]], "float32")  # inside (-1, 1)
WIDE = np.array([[-2.5, -0.5, 0.0], [0.5, 1.5, 3.0]], "float32")
ABOVE_ONE = np.array([[1.0, 1.5, 2.0], [3.0, 5.0, 10.0]], "float32")

TRIG = [
    (topi.asin, np.arcsin, UNIT),
    (topi.acos, np.arccos, UNIT),
    (topi.atan, np.arctan, WIDE),
    (topi.sinh, np.sinh, WIDE),
    (topi.cosh, np.cosh, WIDE),
    (topi.asinh, np.arcsinh, WIDE),
    (topi.acosh, np.arccosh, ABOVE_ONE),
    (topi.atanh, np.arctanh, UNIT),
]
IDS = [t[0].__name__ for t in TRIG]


@pytest.mark.parametrize(("op", "ref", "data"), TRIG, ids=IDS)
def test_trig_matches_numpy_interpreted(interp, op, ref, data) -> None:
    got = interp(op, data)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, ref(data), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("op", "ref", "data"), TRIG, ids=IDS)
def test_trig_matches_numpy_compiled(llvm, op, ref, data) -> None:
    np.testing.assert_allclose(llvm(op, data), ref(data), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", [t[0] for t in TRIG], ids=IDS)
def test_trig_rejects_integer_tensors(op) -> None:
    with pytest.raises(VMTypeError, match=f"topi.{op.__name__}: expects a float tensor"):
        op(te.placeholder((2,), "int32", name="x"))
