"""Which inference errors are TypeErrors: a wrong argument kind or dtype is an ``OpTypeError``
(a ``TypeError``, as TVM raises), a wrong rank, extent or axis stays a plain ``OpError``.

Every ``OpTypeError`` is still an ``OpError`` (a ``ValueError``), so the older ``except``
clauses keep working; the tests check both sides of that contract.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from relaxvm.ir.relax import PrimStructInfo, TensorStructInfo, Var, VDevice, op
from relaxvm.ir.relax.op import OpError, infer
from relaxvm.ir.relax.op.registry import OpTypeError

from .conftest import assert_shape, tvar


# ---- where ------------------------------------------------------------------------------------
def test_where_refuses_a_condition_of_unknown_dtype() -> None:
    cond = tvar((2, 3), None)
    with pytest.raises(
        OpTypeError, match=r"relax\.where: condition must be bool, got a tensor of unknown dtype"
    ) as info:
        infer(op.where(cond, tvar((2, 3)), tvar((2, 3))))
    assert isinstance(info.value, TypeError) and isinstance(info.value, OpError)


def test_where_refuses_a_float_condition_as_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"relax\.where: condition must be bool, got float32"):
        infer(op.where(tvar((2, 3)), tvar((2, 3)), tvar((2, 3))))


def test_where_with_a_bool_condition_still_infers() -> None:
    assert_shape(infer(op.where(tvar((2, 1), "bool"), tvar((3,)), tvar((2, 3)))), (2, 3))


def test_logical_ops_still_accept_an_unknown_dtype() -> None:
    # Only where insists on a known bool condition; logical_and of unknown dtypes is bool.
    assert_shape(infer(op.logical_and(tvar((2,), None), tvar((2,), "bool"))), (2,), "bool")


# ---- binary ops on two vdevices ---------------------------------------------------------------
@pytest.mark.parametrize("name", ["add", "multiply", "less"])
def test_binary_vdevice_mismatch_is_a_type_error(name: str) -> None:
    x = Var("x", TensorStructInfo((2, 3), "float32", vdevice=VDevice("llvm")))
    y = Var("y", TensorStructInfo((2, 3), "float32", vdevice=VDevice("cuda", 0)))
    with pytest.raises(
        OpTypeError, match=rf"relax\.{name}: operands are on different vdevices"
    ) as info:
        infer(getattr(op, name)(x, y))
    assert isinstance(info.value, ValueError)  # an OpError too


def test_binary_same_vdevice_keeps_it() -> None:
    dev = VDevice("llvm")
    x = Var("x", TensorStructInfo((2, 3), "float32", vdevice=dev))
    sinfo = infer(op.add(x, x))
    assert isinstance(sinfo, TensorStructInfo) and sinfo.vdevice == dev


# ---- quantize / dequantize ---------------------------------------------------------------------
def _scale(shape: tuple[int, ...] = (), dtype: str = "float32") -> Var:
    return Var("s", TensorStructInfo(shape, dtype))


def _zero(shape: tuple[int, ...] = (), dtype: str = "int8") -> Var:
    return Var("z", TensorStructInfo(shape, dtype))


QDQ_TYPE_ERRORS: list[tuple[Callable[[], Any], str]] = [
    (lambda: op.quantize(tvar([2], "int32"), _scale(), _zero()), "data must have a float dtype"),
    (lambda: op.dequantize(tvar([2], "float64"), _scale(), _zero()), "data must have an integer"),
    (lambda: op.quantize(tvar([2]), _scale(), _zero(), out_dtype="float32"), "out_dtype must be"),
    (lambda: op.quantize(tvar([2]), _scale((), "int32"), _zero()), "scale must have a float"),
    (
        lambda: op.quantize(tvar([2]), _scale(), _zero((), "float32")),
        "zero_point must have an integer or float16 dtype, got float32",
    ),
]


@pytest.mark.parametrize(("build", "message"), QDQ_TYPE_ERRORS)
def test_qdq_wrong_dtypes_are_type_errors(build: Callable[[], Any], message: str) -> None:
    with pytest.raises(OpTypeError, match=rf"relax\.(de)?quantize: {message}"):
        infer(build())


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: op.quantize(tvar([2, 3]), _scale(), _zero(), axis=2), "axis 2 is out of range"),
        (lambda: op.quantize(tvar([2, 3]), _scale([2, 3]), _zero()), "scale must be a scalar"),
        (lambda: op.quantize(tvar([2, 3]), _scale([2]), _zero([2])), "scale has 2 values"),
    ],
)
def test_qdq_wrong_ranks_and_extents_are_not_type_errors(
    build: Callable[[], Any], message: str
) -> None:
    with pytest.raises(OpError, match=message) as info:
        infer(build())
    assert not isinstance(info.value, TypeError)


@pytest.mark.parametrize("out_dtype", ["int8", "float8_e4m3fn", "float8_e5m2"])
def test_qdq_accepts_a_float16_zero_point(out_dtype: str) -> None:
    # TVM allows an int8 or a float16 zero point (float8 quantization uses the latter).
    n = tvar((4, 3))
    q = infer(op.quantize(n, _scale((3,)), _zero((3,), "float16"), axis=1, out_dtype=out_dtype))
    assert_shape(q, (4, 3), out_dtype)
    d = infer(op.dequantize(tvar((4, 3), out_dtype), _scale((3,)), _zero((3,), "float16"), 1))
    assert_shape(d, (4, 3), "float32")


# ---- shapes of the wrong kind -------------------------------------------------------------------
def test_reshape_to_a_prim_value_dimension_is_a_type_error() -> None:
    pv = Var("pv", PrimStructInfo("int64"))
    with pytest.raises(OpTypeError, match=r"relax\.reshape: cannot use \[pv\] as a shape"):
        op.reshape(tvar((2, 3)), [pv])


def test_reshape_to_a_negative_extent_is_still_a_value_error() -> None:
    with pytest.raises(OpError, match=r"relax\.reshape: new shape .* negative extent") as info:
        infer(op.reshape(tvar((2, 3)), (-2, -3)))
    assert not isinstance(info.value, TypeError)
