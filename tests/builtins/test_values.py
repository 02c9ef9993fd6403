"""vm.builtin.copy / make_tuple / tuple_getitem / shape_of / reshape / tensor_to_shape /
read_if_cond."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm import Shape
from relaxvm.errors import VMIndexError, VMTypeError, VMValueError

Lookup = Callable[[str], Callable[..., Any]]


def test_copy_is_identity(builtin: Lookup) -> None:
    tensor = relaxvm.tensor(np.ones(3, "float32"))
    for value in (tensor, (1, 2), Shape([4]), None, "text", 2.5):
        assert builtin("copy")(value) is value


def test_make_tuple_and_tuple_getitem(builtin: Lookup) -> None:
    tensor = relaxvm.tensor(np.ones(3, "float32"))
    tup = builtin("make_tuple")(tensor, Shape([2]), (1, 2), 7)
    assert type(tup) is tuple and len(tup) == 4
    getitem = builtin("tuple_getitem")
    assert getitem(tup, 0) is tensor
    assert getitem(tup, 2) == (1, 2)
    assert getitem(tup, 3) == 7
    assert builtin("make_tuple")() == ()
    assert getitem([5, 6], 1) == 6  # lists are Arrays too


def test_tuple_getitem_errors(builtin: Lookup) -> None:
    getitem = builtin("tuple_getitem")
    with pytest.raises(
        VMIndexError, match=r"tuple_getitem: index 3 is out of range for a Tuple with 3 elements"
    ):
        getitem((1, 2, 3), 3)
    with pytest.raises(VMTypeError, match=r"tuple_getitem: expect a Tuple but get Shape"):
        getitem(Shape([1, 2]), 0)  # a Shape is not a Relax tuple
    with pytest.raises(VMTypeError, match=r"tuple_getitem: index must be an int, got str"):
        getitem((1,), "0")


def test_shape_of(builtin: Lookup) -> None:
    array = np.zeros((2, 0, 5), "int8")
    shape = builtin("shape_of")(relaxvm.tensor(array))
    assert type(shape) is Shape and shape == array.shape
    with pytest.raises(VMTypeError, match=r"shape_of: expect a Tensor but get Shape"):
        builtin("shape_of")(Shape([2]))


def test_reshape_is_a_view_matching_numpy(builtin: Lookup) -> None:
    array = np.arange(24, dtype="float32").reshape(2, 3, 4)
    source = relaxvm.tensor(array)
    result = builtin("reshape")(source, Shape([4, 6]))
    assert type(result.shape) is Shape and result.shape == (4, 6)
    np.testing.assert_array_equal(result.numpy(), array.reshape(4, 6))
    assert result.data_ptr == source.data_ptr
    source.host_array()[0, 0, 0] = -1
    assert result.numpy()[0, 0] == -1


def test_reshape_of_a_view_keeps_its_offset(builtin: Lookup) -> None:
    base = relaxvm.tensor(np.arange(8, dtype="int64"))
    view = base.view(Shape([2, 2]), None, 32)
    result = builtin("reshape")(view, (4,))  # a plain tuple is converted
    np.testing.assert_array_equal(result.numpy(), [4, 5, 6, 7])


def test_reshape_errors(builtin: Lookup) -> None:
    source = relaxvm.tensor(np.zeros((2, 3), "float32"))
    reshape = builtin("reshape")
    with pytest.raises(
        VMValueError,
        match=r"reshape: cannot reshape a tensor of shape \[2, 3\] \(6 elements\) to shape \[4, 2\]",
    ):
        reshape(source, Shape([4, 2]))
    with pytest.raises(VMValueError, match=r"cannot reshape"):
        reshape(source, Shape([-2, -3]))
    with pytest.raises(VMTypeError, match=r"reshape: expect a Tensor but get Tuple"):
        reshape((1, 2), Shape([2]))
    with pytest.raises(VMTypeError, match=r"reshape: the new shape must be a Shape, got int"):
        reshape(source, 6)


@pytest.mark.parametrize("dtype", ["int16", "int32", "int64"])
def test_tensor_to_shape(builtin: Lookup, dtype: str) -> None:
    shape = builtin("tensor_to_shape")(relaxvm.tensor(np.array([3, 1, 4], dtype)))
    assert type(shape) is Shape and shape == (3, 1, 4)
    assert all(type(d) is int for d in shape)


def test_tensor_to_shape_errors(builtin: Lookup) -> None:
    to_shape = builtin("tensor_to_shape")
    with pytest.raises(VMValueError, match=r"tensor_to_shape: expect a 1-d tensor but get ndim 2"):
        to_shape(relaxvm.tensor(np.zeros((1, 2), "int64")))
    with pytest.raises(
        VMValueError, match=r"expect an int16, int32 or int64 tensor but get float32"
    ):
        to_shape(relaxvm.tensor(np.zeros(2, "float32")))
    with pytest.raises(VMValueError, match=r"but get uint32"):
        to_shape(relaxvm.tensor(np.zeros(2, "uint32")))
    with pytest.raises(VMTypeError, match=r"tensor_to_shape: expect a Tensor but get Shape"):
        to_shape(Shape([1]))


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int16", "int32", "int64", "uint64"])
def test_read_if_cond_on_scalar_tensors(builtin: Lookup, dtype: str) -> None:
    read = builtin("read_if_cond")
    assert read(relaxvm.tensor(np.array(1, dtype))) is True
    assert read(relaxvm.tensor(np.array(0, dtype))) is False


def test_read_if_cond_on_values(builtin: Lookup) -> None:
    read = builtin("read_if_cond")
    assert read(True) is True and read(False) is False
    assert read(5) is True and read(0) is False
    assert read(np.bool_(True)) is True
    assert read(relaxvm.tensor(np.array(-3, "int8"))) is True


def test_read_if_cond_rejects_other_values(builtin: Lookup) -> None:
    read = builtin("read_if_cond")
    with pytest.raises(
        VMTypeError,
        match=r"read_if_cond: the condition must be a 0-d \(scalar\) tensor, got shape \[1\]",
    ):
        read(relaxvm.tensor(np.array([1], "bool")))
    with pytest.raises(VMTypeError, match=r"must have an int, uint or bool dtype, got float32"):
        read(relaxvm.tensor(np.array(1.0, "float32")))
    with pytest.raises(VMTypeError, match=r"must be a bool or a 0-d int/bool tensor, got str"):
        read("yes")
    with pytest.raises(VMTypeError, match=r"got float"):
        read(1.0)
