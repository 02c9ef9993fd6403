"""Run-time type checks of function parameters and results (``vm.builtin.check_*_info``).

``VMShapeLower`` emits one of these for every parameter of a Relax function (and for
``match_cast`` and return values), with an ``err_ctx`` string naming the function, parameter
and annotation. A wrong *kind* of value is a :class:`~relaxvm.errors.VMTypeError`; a value
of the right kind whose ndim, dtype or size is wrong is a
:class:`~relaxvm.errors.VMValueError`, as in TVM.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relaxvm.errors import VMTypeError, VMValueError
from relaxvm.runtime import DataType, DataTypeCode, Shape, Tensor
from relaxvm.vm.closure import VMClosure

from ._table import builtin
from ._util import error_prefix, type_name

__all__ = [
    "check_func_info",
    "check_prim_value_info",
    "check_shape_info",
    "check_tensor_info",
    "check_tuple_info",
]


# Marks "no fourth argument": None is a legitimate err_ctx value, so it cannot mark absence.
_ABSENT: Any = object()


@builtin("vm.builtin.check_tensor_info")
def check_tensor_info(
    arg: Any, ndim: int, dtype_or_err_ctx: Any = None, err_ctx: Any = _ABSENT
) -> None:
    """Check that ``arg`` is a Tensor of ``ndim`` dimensions (and ``dtype``).

    Called as ``check_tensor_info(arg, ndim, err_ctx)`` or ``check_tensor_info(arg, ndim,
    dtype, err_ctx)``, told apart by the argument count as in TVM. For hand-written calls,
    ``(arg, ndim)`` and ``(arg, ndim, dtype)`` with a :class:`DataType` also work.

    Parameters
    ----------
    arg : Any
        The value to check.
    ndim : int
        The expected number of dimensions; ``-1`` accepts any.
    dtype_or_err_ctx : DataType, str or None
        With four arguments, the expected element type (None accepts any); with three, the
        ``err_ctx`` (unless it is a DataType).
    err_ctx : str or None, optional
        Prefix for error messages.

    Raises
    ------
    VMTypeError
        ``"expect a Tensor but get <kind>"``.
    VMValueError
        ``"expect Tensor with ndim N but get M"`` or ``"expect Tensor with dtype X but get Y"``.
    """
    # Positional parameters with a sentinel are measurably cheaper than ``*args`` here.
    if err_ctx is _ABSENT:
        if type(dtype_or_err_ctx) is DataType:
            dtype = dtype_or_err_ctx
            err_ctx = None
        else:
            dtype = None
            err_ctx = dtype_or_err_ctx
    else:
        dtype = dtype_or_err_ctx
    if type(arg) is not Tensor and not isinstance(arg, Tensor):
        raise VMTypeError(
            f"{error_prefix(err_ctx, 'check_tensor_info')}expect a Tensor but get {type_name(arg)}"
        )
    if ndim != -1 and len(arg.shape) != ndim:
        raise VMValueError(
            f"{error_prefix(err_ctx, 'check_tensor_info')}expect Tensor with ndim {ndim} but "
            f"get {len(arg.shape)}"
        )
    # DataTypes are interned, so identity settles the common case; == also accepts a string.
    if dtype is not None and arg.dtype is not dtype and arg.dtype != dtype:
        raise VMValueError(
            f"{error_prefix(err_ctx, 'check_tensor_info')}expect Tensor with dtype {dtype} but "
            f"get {arg.dtype}"
        )


@builtin("vm.builtin.check_shape_info")
def check_shape_info(arg: Any, ndim: int, err_ctx: Any = None) -> None:
    """Check that ``arg`` is a Shape of ``ndim`` dimensions (``-1`` accepts any).

    Raises
    ------
    VMTypeError
        ``"expect a Shape but get <kind>"``.
    VMValueError
        ``"expect Shape with ndim N but get M"``.
    """
    if type(arg) is not Shape and not isinstance(arg, Shape):
        raise VMTypeError(
            f"{error_prefix(err_ctx, 'check_shape_info')}expect a Shape but get {type_name(arg)}"
        )
    if ndim != -1 and len(arg) != ndim:
        raise VMValueError(
            f"{error_prefix(err_ctx, 'check_shape_info')}expect Shape with ndim {ndim} but get "
            f"{len(arg)}"
        )


# What each DLPack type code accepts as a Python prim value. As in TVM, a bool converts to
# an int and an int to a float, but not the other way round.
_INTEGRAL = (bool, int, np.integer, np.bool_)
_PRIM_ACCEPTS: dict[int, tuple[type, ...]] = {
    DataTypeCode.BOOL: _INTEGRAL,
    DataTypeCode.INT: _INTEGRAL,
    DataTypeCode.UINT: _INTEGRAL,
    DataTypeCode.FLOAT: (*_INTEGRAL, float, np.floating),
    DataTypeCode.BFLOAT: (*_INTEGRAL, float, np.floating),
}


@builtin("vm.builtin.check_prim_value_info")
def check_prim_value_info(arg: Any, dtype: DataType | str, err_ctx: Any = None) -> None:
    """Check that ``arg`` is a Python scalar convertible to ``dtype``.

    Parameters
    ----------
    arg : Any
        The value to check: bool, int or float (numpy scalars are accepted too).
    dtype : DataType
        The annotation's dtype; its type code decides what is accepted (``bool``, ``int``,
        ``uint`` take bools and ints; ``float`` also floats; ``handle`` takes None or an int
        address).
    err_ctx : str, optional
        Prefix for error messages.

    Raises
    ------
    VMTypeError
        ``arg`` is an object (Tensor, Shape, Tuple, ...) or a scalar of the wrong kind.
    VMValueError
        A negative value for an unsigned type.
    """
    if type(dtype) is not DataType:
        dtype = DataType(dtype)
    code = dtype.code
    if code == DataTypeCode.HANDLE:
        if arg is None or (type(arg) is int and arg >= 0):
            return
    else:
        accepted = _PRIM_ACCEPTS.get(code)
        if accepted is None:
            raise VMTypeError(
                f"{error_prefix(err_ctx, 'check_prim_value_info')}unsupported dtype {dtype} "
                "for a PrimValue"
            )
        if isinstance(arg, accepted):
            if code == DataTypeCode.UINT and arg < 0:
                raise VMValueError(
                    f"{error_prefix(err_ctx, 'check_prim_value_info')}expected dtype {dtype}, "
                    f"but received the negative value {arg}"
                )
            return
    if isinstance(arg, (Tensor, Shape, tuple, list, VMClosure)):
        raise VMTypeError(
            f"{error_prefix(err_ctx, 'check_prim_value_info')}expected dtype {dtype}, but "
            f"received ObjectRef of type {type_name(arg)}"
        )
    raise VMTypeError(
        f"{error_prefix(err_ctx, 'check_prim_value_info')}expected dtype {dtype}, but received "
        f"a value of type {type_name(arg)} ({arg!r})"
    )


@builtin("vm.builtin.check_tuple_info")
def check_tuple_info(arg: Any, size: int, err_ctx: Any = None) -> None:
    """Check that ``arg`` is a Relax tuple (a Python tuple, not a Shape) of ``size`` fields.

    A list is accepted too, as TVM accepts any Array.

    Raises
    ------
    VMTypeError
        ``"expect a Tuple but get <kind>"``.
    VMValueError
        ``"expect a Tuple with N elements, but get a Tuple with M elements."``
    """
    arg_type = type(arg)
    if arg_type is not tuple and arg_type is not list:
        raise VMTypeError(
            f"{error_prefix(err_ctx, 'check_tuple_info')}expect a Tuple but get {type_name(arg)}"
        )
    if len(arg) != size:
        raise VMValueError(
            f"{error_prefix(err_ctx, 'check_tuple_info')}expect a Tuple with {size} elements, "
            f"but get a Tuple with {len(arg)} elements."
        )


@builtin("vm.builtin.check_func_info")
def check_func_info(arg: Any, err_ctx: Any = None) -> None:
    """Check that ``arg`` is callable by the VM: a :class:`VMClosure` or a Python callable.

    Raises
    ------
    VMTypeError
        ``"expect a Function but get <kind>"``.
    """
    if type(arg) is VMClosure:
        return
    if not callable(arg) and not isinstance(arg, VMClosure):
        raise VMTypeError(
            f"{error_prefix(err_ctx, 'check_func_info')}expect a Function but get {type_name(arg)}"
        )
