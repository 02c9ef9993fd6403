"""Builtins on values: copies, tuples, shapes of tensors, reshapes and branch conditions."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from relaxvm.errors import VMIndexError, VMTypeError, VMValueError
from relaxvm.registry.specialization import CallSite, Specialization, specializer
from relaxvm.runtime import DataTypeCode, Shape, Tensor
from relaxvm.vm.native_plan import replay_safe

from ._table import builtin
from ._util import type_name

__all__ = [
    "copy",
    "make_tuple",
    "read_if_cond",
    "reshape",
    "shape_of",
    "tensor_to_shape",
    "tuple_getitem",
]


@builtin("vm.builtin.copy")
@replay_safe
def copy(value: Any) -> Any:
    """``value`` itself: a register move (values are immutable or shared, as in TVM)."""
    return value


@specializer(copy)
def _copy_site(site: CallSite) -> Specialization | None:
    """A register move: the destination receives the argument, no call."""
    return Specialization.forward(0) if len(site) == 1 else None


@builtin("vm.builtin.make_tuple")
@replay_safe
def make_tuple(*fields: Any) -> tuple[Any, ...]:
    """A Relax tuple (a Python tuple) of ``fields``."""
    return fields


@builtin("vm.builtin.tuple_getitem")
@replay_safe
def tuple_getitem(tup: tuple[Any, ...], index: int) -> Any:
    """Field ``index`` of a Relax tuple.

    Raises
    ------
    VMTypeError
        ``tup`` is not a tuple (a Shape is not a Relax tuple), or ``index`` is not an int.
    VMIndexError
        ``index`` is out of range.
    """
    if type(tup) is tuple:
        try:
            return tup[index]
        except (IndexError, TypeError):
            pass
    return _tuple_getitem_checked(tup, index)


def _tuple_getitem_checked(tup: Any, index: Any) -> Any:
    if type(tup) is not tuple and type(tup) is not list:
        raise VMTypeError(f"vm.builtin.tuple_getitem: expect a Tuple but get {type_name(tup)}")
    if type(index) is not int:
        raise VMTypeError(f"vm.builtin.tuple_getitem: index must be an int, got {type_name(index)}")
    if not 0 <= index < len(tup):
        raise VMIndexError(
            f"vm.builtin.tuple_getitem: index {index} is out of range for a Tuple with "
            f"{len(tup)} elements"
        )
    return tup[index]


@builtin("vm.builtin.shape_of")
@replay_safe
def shape_of(data: Tensor) -> Shape:
    """The shape of a tensor.

    Raises
    ------
    VMTypeError
        ``data`` is not a Tensor.
    """
    if type(data) is not Tensor and not isinstance(data, Tensor):
        raise VMTypeError(f"vm.builtin.shape_of: expect a Tensor but get {type_name(data)}")
    return data.shape


@builtin("vm.builtin.reshape")
@replay_safe
def reshape(data: Tensor, new_shape: Shape) -> Tensor:
    """A view of ``data`` with ``new_shape`` (no copy); the element count must not change.

    Raises
    ------
    VMTypeError
        ``data`` is not a Tensor or ``new_shape`` is not a Shape.
    VMValueError
        The element counts differ.
    """
    if type(data) is not Tensor and not isinstance(data, Tensor):
        raise VMTypeError(f"vm.builtin.reshape: expect a Tensor but get {type_name(data)}")
    if type(new_shape) is not Shape:
        if not isinstance(new_shape, (tuple, list)):
            raise VMTypeError(
                f"vm.builtin.reshape: the new shape must be a Shape, got {type_name(new_shape)}"
            )
        new_shape = Shape(new_shape)
    old_count = math.prod(data.shape)
    if math.prod(new_shape) != old_count or (new_shape and min(new_shape) < 0):
        raise VMValueError(
            f"vm.builtin.reshape: cannot reshape a tensor of shape {list(data.shape)} "
            f"({old_count} elements) to shape {list(new_shape)}"
        )
    # Same bytes at the same place, so the view is in bounds if ``data`` was.
    return Tensor(data.storage, data.byte_offset, new_shape, data.dtype)


@builtin("vm.builtin.check_broadcast")
@replay_safe
def check_broadcast(data: Tensor, result_shape: Shape, op: str) -> Tensor:
    """``data`` itself, after checking that it broadcasts to ``result_shape`` (numpy rules:
    trailing axes line up, each extent is 1 or the result's).

    The op legalizations call it in front of a kernel whose operand extents the compiler could
    not prove compatible (two different symbolic dims): the kernel reads the operand assuming
    they are, so a mismatch must stop here rather than read outside the operand.

    Raises
    ------
    VMValueError
        Naming ``op``, both shapes and the first axis that does not broadcast.
    """
    if type(data) is not Tensor and not isinstance(data, Tensor):
        raise VMTypeError(f"vm.builtin.check_broadcast: expect a Tensor but get {type_name(data)}")
    shape, result = list(data.shape), list(result_shape)
    offset = len(result) - len(shape)
    for axis, extent in enumerate(shape):
        wanted = result[offset + axis] if offset + axis >= 0 else None
        if extent != 1 and extent != wanted:
            raise VMValueError(
                f"{op}: an operand of shape {shape} does not broadcast to the result's shape "
                f"{result}: its dimension {axis} is {extent}, expected "
                f"{'1' if wanted in (1, None) else f'1 or {wanted}'} (the compiler could not "
                "prove the symbolic extents compatible)"
            )
    return data


_SHAPE_INT_BITS = (16, 32, 64)


@builtin("vm.builtin.tensor_to_shape")
def tensor_to_shape(data: Tensor) -> Shape:
    """The values of a 1-d int16/int32/int64 tensor, as a Shape (read from any device).

    Raises
    ------
    VMTypeError
        ``data`` is not a Tensor.
    VMValueError
        ``data`` is not 1-d, or its dtype is not int16/int32/int64.
    """
    if type(data) is not Tensor and not isinstance(data, Tensor):
        raise VMTypeError(f"vm.builtin.tensor_to_shape: expect a Tensor but get {type_name(data)}")
    if len(data.shape) != 1:
        raise VMValueError(
            f"vm.builtin.tensor_to_shape: expect a 1-d tensor but get ndim {len(data.shape)} "
            f"(shape {list(data.shape)})"
        )
    dtype = data.dtype
    if dtype.code != DataTypeCode.INT or dtype.bits not in _SHAPE_INT_BITS or dtype.lanes != 1:
        raise VMValueError(
            f"vm.builtin.tensor_to_shape: expect an int16, int32 or int64 tensor but get {dtype}"
        )
    values = data.host_array() if data.storage.api.host_accessible else data.numpy()
    return Shape._trusted(tuple(values.tolist()))


_COND_CODES = (DataTypeCode.INT, DataTypeCode.UINT, DataTypeCode.BOOL)


@builtin("vm.builtin.read_if_cond")
def read_if_cond(cond: Any) -> bool:
    """The truth of a branch condition: a bool, or a 0-d int/uint/bool tensor (``!= 0``).

    An int (or numpy bool/int scalar) is accepted too, as TVM converts ints to bool here. Tensors on other
    devices are read through a host copy.

    Raises
    ------
    VMTypeError
        Anything else: other values, tensors that are not 0-d, float tensors.
    """
    cond_type = type(cond)
    if cond_type is bool:
        return cond
    if cond_type is Tensor or isinstance(cond, Tensor):
        dtype = cond.dtype
        if len(cond.shape) != 0:
            raise VMTypeError(
                f"vm.builtin.read_if_cond: the condition must be a 0-d (scalar) tensor, got "
                f"shape {list(cond.shape)}"
            )
        if dtype.code not in _COND_CODES or dtype.lanes != 1:
            raise VMTypeError(
                "vm.builtin.read_if_cond: the condition tensor must have an int, uint or bool "
                f"dtype, got {dtype}"
            )
        values = cond.host_array() if cond.storage.api.host_accessible else cond.numpy()
        return values.item() != 0
    if cond_type is int or isinstance(cond, (np.bool_, np.integer)):
        return bool(cond != 0)
    raise VMTypeError(
        f"vm.builtin.read_if_cond: the condition must be a bool or a 0-d int/bool tensor, got "
        f"{type_name(cond)}"
    )
