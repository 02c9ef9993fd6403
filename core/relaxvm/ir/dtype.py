"""Predicates on scalar data types, as the IR and its lowerings use them.

``is_int_dtype``, ``is_float_dtype`` and ``is_bool_dtype`` classify a scalar
:class:`~relaxvm.runtime.DataType` (vector types, ``lanes > 1``, are none of them);
``dtype_int_range`` and ``fits_dtype`` give the values an integer or bool type holds. They are
public API: op legalizations and target schedules (first- or third-party plugins) use them to
pick identity elements, clamp constants and choose float or integer code paths.

Examples
--------
>>> from relaxvm.ir.dtype import dtype_int_range, is_float_dtype
>>> from relaxvm.runtime import DataType
>>> is_float_dtype(DataType("bfloat16")), dtype_int_range(DataType("int8"))
(True, (-128, 127))
"""

from __future__ import annotations

from ..runtime.dtype import DataType, DataTypeCode

__all__ = [
    "dtype_int_range",
    "fits_dtype",
    "is_bool_dtype",
    "is_float_dtype",
    "is_int_dtype",
]


def is_int_dtype(dtype: DataType) -> bool:
    """True for scalar signed or unsigned integer types (not ``bool``)."""
    return dtype.lanes == 1 and dtype.code in (DataTypeCode.INT, DataTypeCode.UINT)


def is_float_dtype(dtype: DataType) -> bool:
    """True for scalar floating point types (``float16/32/64``, ``bfloat16``)."""
    return dtype.lanes == 1 and dtype.code in (DataTypeCode.FLOAT, DataTypeCode.BFLOAT)


def is_bool_dtype(dtype: DataType) -> bool:
    """True for the scalar ``bool`` type."""
    return dtype.lanes == 1 and dtype.code == DataTypeCode.BOOL


def dtype_int_range(dtype: DataType) -> tuple[int, int]:
    """The inclusive range of values an integer or bool type can hold."""
    if dtype.code == DataTypeCode.BOOL:
        return 0, 1
    if dtype.code == DataTypeCode.UINT:
        return 0, (1 << dtype.bits) - 1
    half = 1 << (dtype.bits - 1)
    return -half, half - 1


def fits_dtype(value: int, dtype: DataType) -> bool:
    """Whether the integer ``value`` is representable in the integer or bool type ``dtype``."""
    low, high = dtype_int_range(dtype)
    return low <= value <= high
