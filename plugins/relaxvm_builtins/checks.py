"""Run-time type checks of function parameters and results (``vm.builtin.check_*_info``).

``VMShapeLower`` emits one of these for every parameter of a Relax function (and for
``match_cast`` and return values), with an ``err_ctx`` string naming the function, parameter
and annotation. A wrong *kind* of value is a :class:`~relaxvm.errors.VMTypeError`; a value
of the right kind whose ndim, dtype or size is wrong is a
:class:`~relaxvm.errors.VMValueError`, as in TVM.

Each check offers the VM a fast path for its call sites (call-site specialisation, see
:mod:`relaxvm.registry.specialization`): with the expectation fixed at load time, the common
case is one class test and one comparison, written inline in compiled mode. A value that
fails it goes to the builtin, which accepts what it accepts and raises the exact error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relaxvm.errors import VMTypeError, VMValueError
from relaxvm.registry.specialization import CallSite, Specialization, specializer
from relaxvm.runtime import DataType, DataTypeCode, Shape, Tensor
from relaxvm.vm.closure import VMClosure
from relaxvm.vm.native_plan import replay_safe

from ._table import builtin
from ._util import error_prefix, type_name

__all__ = [
    "check_func_info",
    "check_prim_value_info",
    "check_shape_info",
    "check_tensor_info",
    "check_tuple_info",
    "static_tensor_check",
]


# Marks "no fourth argument": None is a legitimate err_ctx value, so it cannot mark absence.
_ABSENT: Any = object()


@builtin("vm.builtin.check_tensor_info")
@replay_safe
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
@replay_safe
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
@replay_safe
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
    code = dtype.code  # type: ignore[union-attr]  # a DataType now (type(x) is: no narrowing)
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
            if code == DataTypeCode.UINT and arg < 0:  # type: ignore[operator]  # an int here
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
@replay_safe
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
@replay_safe
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


# -- call-site fast paths -----------------------------------------------------------------------
def _value_site(site: CallSite, min_args: int, max_args: int) -> bool:
    """A check of a register value whose other arguments are all fixed."""
    return min_args <= len(site) <= max_args and site.is_register(0) and site.all_fixed(1)


def _guard(
    site: CallSite, passes: Callable[[Any], bool], inline_test: str, **bound: Any
) -> Specialization:
    """A check that returns None when ``passes(value)``, else calls the builtin; in
    compiled mode the same test as the expression ``inline_test``."""
    generic = site.generic()

    def check(value: Any) -> None:
        if passes(value):
            return None
        return generic(value)

    return Specialization.call(check, inline=f"None if {inline_test} else {{call}}", **bound)


def static_tensor_check(values: list[Any]) -> tuple[int, DataType | None] | None:
    """``(ndim, dtype)`` of a ``check_tensor_info(value, *values)`` call whose arguments from
    ``ndim`` on are the fixed ``values``: ``ndim`` an int (``-1`` for any), ``dtype`` a
    DataType or None (any). None when they are of other kinds: the call then always goes to
    the builtin.

    Such a call passes when the value is a Tensor with that many dimensions and that very
    (interned) DataType, so that test can stand in for it; anything else goes to the
    builtin, which accepts what it accepts and raises the exact error.
    """
    if not 1 <= len(values) <= 3:
        return None
    ndim = values[0]
    if len(values) == 3:
        dtype = values[1]
    else:
        dtype = values[1] if len(values) == 2 and type(values[1]) is DataType else None
    if type(ndim) is not int or ndim < -1 or (dtype is not None and type(dtype) is not DataType):
        return None
    return ndim, dtype


@specializer(check_tensor_info)
def _check_tensor_info_site(site: CallSite) -> Specialization | None:
    found = static_tensor_check(list(site.args[1:])) if _value_site(site, 2, 4) else None
    if found is None:
        return None
    ndim, dtype = found
    generic = site.generic()
    tests = ["{0}.__class__ is {Tensor}"]
    if ndim != -1:
        tests.append("len({0}.shape) == {ndim}")
    if dtype is not None:
        tests.append("{0}.dtype is {dtype}")
    inline = f"None if {' and '.join(tests)} else {{call}}"
    bound = {"Tensor": Tensor, "ndim": ndim, "dtype": dtype}
    if ndim == -1 or dtype is None:  # rare: a slower but general guard
        return _guard(
            site,
            lambda v: (
                v.__class__ is Tensor
                and (ndim == -1 or len(v.shape) == ndim)
                and (dtype is None or v.dtype is dtype)
            ),
            " and ".join(tests),
            **bound,
        )

    def check(value: Any) -> None:
        if value.__class__ is Tensor and len(value.shape) == ndim and value.dtype is dtype:
            return None
        return generic(value)

    return Specialization.call(check, inline=inline, **bound)


@specializer(check_shape_info)
def _check_shape_info_site(site: CallSite) -> Specialization | None:
    if not _value_site(site, 2, 3) or type(site.args[1]) is not int or site.args[1] < -1:
        return None
    ndim = site.args[1]
    if ndim == -1:
        return _guard(site, lambda v: v.__class__ is Shape, "{0}.__class__ is {Shape}", Shape=Shape)
    return _guard(
        site,
        lambda v: v.__class__ is Shape and len(v) == ndim,
        "{0}.__class__ is {Shape} and len({0}) == {ndim}",
        Shape=Shape,
        ndim=ndim,
    )


@specializer(check_tuple_info)
def _check_tuple_info_site(site: CallSite) -> Specialization | None:
    if not _value_site(site, 2, 3) or type(site.args[1]) is not int:
        return None
    size = site.args[1]
    return _guard(
        site,
        lambda v: v.__class__ is tuple and len(v) == size,
        "{0}.__class__ is tuple and len({0}) == {size}",
        size=size,
    )


@specializer(check_prim_value_info)
def _check_prim_value_info_site(site: CallSite) -> Specialization | None:
    if not _value_site(site, 2, 3) or type(site.args[1]) is not DataType:
        return None
    code = site.args[1].code
    if code in (DataTypeCode.INT, DataTypeCode.BOOL):
        return _guard(site, lambda v: v.__class__ is int, "{0}.__class__ is int")
    if code == DataTypeCode.UINT:
        return _guard(
            site, lambda v: v.__class__ is int and v >= 0, "{0}.__class__ is int and {0} >= 0"
        )
    if code in (DataTypeCode.FLOAT, DataTypeCode.BFLOAT):
        return _guard(
            site,
            lambda v: v.__class__ is float or v.__class__ is int,
            "({0}.__class__ is float or {0}.__class__ is int)",
        )
    return None


@specializer(check_func_info)
def _check_func_info_site(site: CallSite) -> Specialization | None:
    if not _value_site(site, 1, 2):
        return None
    return _guard(
        site,
        lambda v: v.__class__ is VMClosure,
        "{0}.__class__ is {VMClosure}",
        VMClosure=VMClosure,
    )
