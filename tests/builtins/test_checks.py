"""vm.builtin.check_tensor_info / check_shape_info / check_prim_value_info / check_tuple_info /
check_func_info."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm import DataType, Shape, VMClosure
from relaxvm.errors import VMTypeError, VMValueError

ERR_CTX = 'ErrorContext(fn=main, loc=param[0], param=x, annotation=R.Tensor((n, 4), "float32")) '
Lookup = Callable[[str], Callable[..., Any]]
F32 = DataType("float32")


@pytest.fixture
def x() -> relaxvm.Tensor:
    return relaxvm.tensor(np.zeros((2, 4), "float32"))


# -- check_tensor_info ------------------------------------------------------------------------
def test_check_tensor_info_accepts_matching_tensors(builtin: Lookup, x: Any) -> None:
    check = builtin("check_tensor_info")
    assert check(x, 2, F32, ERR_CTX) is None  # 4 arguments: dtype then err_ctx
    assert check(x, 2, ERR_CTX) is None  # 3 arguments: err_ctx only
    assert check(x, -1, F32, ERR_CTX) is None  # any ndim
    assert check(x, 2, None, ERR_CTX) is None  # any dtype
    assert check(x, 2, "float32", None) is None  # a dtype spelled as a string
    assert check(x, 2, F32) is None  # hand-written: a DataType third argument is a dtype
    assert check(x, 2) is None


def test_check_tensor_info_rejects_non_tensors(builtin: Lookup) -> None:
    check = builtin("check_tensor_info")
    with pytest.raises(VMTypeError) as info:
        check(Shape([2, 4]), 2, F32, ERR_CTX)
    assert str(info.value) == ERR_CTX + "expect a Tensor but get Shape"
    with pytest.raises(VMTypeError, match=r"^ErrorContext.*expect a Tensor but get Tuple$"):
        check((1, 2), 2, ERR_CTX)
    with pytest.raises(
        VMTypeError, match=r"^vm\.builtin\.check_tensor_info: expect a Tensor but get int$"
    ):
        check(3, 0)
    with pytest.raises(VMTypeError, match=r"expect a Tensor but get None"):
        check(None, 0, None, None)


def test_check_tensor_info_ndim_mismatch(builtin: Lookup, x: Any) -> None:
    with pytest.raises(VMValueError) as info:
        builtin("check_tensor_info")(x, 3, F32, ERR_CTX)
    assert str(info.value) == ERR_CTX + "expect Tensor with ndim 3 but get 2"
    with pytest.raises(VMValueError, match=r"^ErrorContext.*expect Tensor with ndim 1 but get 2$"):
        builtin("check_tensor_info")(x, 1, ERR_CTX)


def test_check_tensor_info_dtype_mismatch(builtin: Lookup, x: Any) -> None:
    with pytest.raises(VMValueError) as info:
        builtin("check_tensor_info")(x, 2, DataType("int32"), ERR_CTX)
    assert str(info.value) == ERR_CTX + "expect Tensor with dtype int32 but get float32"
    with pytest.raises(
        VMValueError, match=r"^vm\.builtin\.check_tensor_info: expect Tensor with dtype float16"
    ):
        builtin("check_tensor_info")(x, 2, DataType("float16"))


def test_err_ctx_without_trailing_space_is_separated(builtin: Lookup, x: Any) -> None:
    with pytest.raises(VMValueError, match=r"^ctx\) expect Tensor with ndim 1"):
        builtin("check_tensor_info")(x, 1, "ctx)")


# -- check_shape_info -------------------------------------------------------------------------
def test_check_shape_info(builtin: Lookup) -> None:
    check = builtin("check_shape_info")
    assert check(Shape([1, 2]), 2, ERR_CTX) is None
    assert check(Shape([1, 2, 3]), -1, ERR_CTX) is None
    assert check(Shape([]), 0) is None
    with pytest.raises(VMValueError) as info:
        check(Shape([1, 2]), 3, ERR_CTX)
    assert str(info.value) == ERR_CTX + "expect Shape with ndim 3 but get 2"
    with pytest.raises(VMTypeError, match=r"^ErrorContext.*expect a Shape but get Tuple$"):
        check((1, 2), 2, ERR_CTX)  # a Relax tuple of ints is not a shape
    with pytest.raises(
        VMTypeError, match=r"^vm\.builtin\.check_shape_info: expect a Shape but get Tensor"
    ):
        check(relaxvm.tensor(np.zeros(2, "int64")), 1)


# -- check_prim_value_info --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "dtype"),
    [
        (3, "int64"),
        (True, "int64"),
        (np.int32(3), "int32"),
        (True, "bool"),
        (0, "bool"),
        (7, "uint8"),
        (2.5, "float32"),
        (2, "float64"),
        (np.float32(1.5), "float16"),
        (None, "handle"),
    ],
)
def test_check_prim_value_info_accepts(builtin: Lookup, value: Any, dtype: str) -> None:
    assert builtin("check_prim_value_info")(value, DataType(dtype), ERR_CTX) is None


def test_check_prim_value_info_rejects_objects(builtin: Lookup) -> None:
    check = builtin("check_prim_value_info")
    tensor = relaxvm.tensor(np.zeros((), "int64"))
    with pytest.raises(VMTypeError) as info:
        check(tensor, DataType("int64"), ERR_CTX)
    assert (
        str(info.value) == ERR_CTX + "expected dtype int64, but received ObjectRef of type Tensor"
    )
    with pytest.raises(VMTypeError, match=r"received ObjectRef of type Shape"):
        check(Shape([1]), DataType("int64"), ERR_CTX)


def test_check_prim_value_info_rejects_wrong_scalars(builtin: Lookup) -> None:
    check = builtin("check_prim_value_info")
    with pytest.raises(
        VMTypeError,
        match=r"^ErrorContext.*expected dtype int64, but received a value of type float \(2\.5\)",
    ):
        check(2.5, DataType("int64"), ERR_CTX)
    with pytest.raises(VMTypeError, match=r"expected dtype bool, but received a value of type str"):
        check("yes", DataType("bool"))
    with pytest.raises(
        VMValueError, match=r"expected dtype uint32, but received the negative value -1"
    ):
        check(-1, DataType("uint32"), ERR_CTX)
    with pytest.raises(
        VMTypeError, match=r"^vm\.builtin\.check_prim_value_info: unsupported dtype complex64"
    ):
        check(1, DataType("complex64"))


def test_check_prim_value_info_accepts_a_dtype_string(builtin: Lookup) -> None:
    assert builtin("check_prim_value_info")(4, "int32") is None


# -- check_tuple_info -------------------------------------------------------------------------
def test_check_tuple_info(builtin: Lookup) -> None:
    check = builtin("check_tuple_info")
    assert check((1, "a", None), 3, ERR_CTX) is None
    assert check((), 0) is None
    assert check([1, 2], 2) is None  # TVM accepts any Array
    with pytest.raises(VMValueError) as info:
        check((1, 2), 3, ERR_CTX)
    assert (
        str(info.value)
        == ERR_CTX + "expect a Tuple with 3 elements, but get a Tuple with 2 elements."
    )
    with pytest.raises(VMTypeError, match=r"^ErrorContext.*expect a Tuple but get Shape$"):
        check(Shape([1, 2]), 2, ERR_CTX)
    with pytest.raises(
        VMTypeError, match=r"^vm\.builtin\.check_tuple_info: expect a Tuple but get int"
    ):
        check(1, 1)


# -- check_func_info --------------------------------------------------------------------------
def test_check_func_info(builtin: Lookup) -> None:
    check = builtin("check_func_info")
    assert check(VMClosure("f", lambda ctx: 0), ERR_CTX) is None
    assert check(len, ERR_CTX) is None
    assert check(lambda a: a) is None
    with pytest.raises(VMTypeError) as info:
        check(3, ERR_CTX)
    assert str(info.value) == ERR_CTX + "expect a Function but get int"
    with pytest.raises(
        VMTypeError, match=r"^vm\.builtin\.check_func_info: expect a Function but get Tensor"
    ):
        check(relaxvm.tensor(np.zeros(1, "float32")))
