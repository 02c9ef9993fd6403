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

import difflib
from typing import Any

from ..errors import VMTypeError, VMValueError
from ..runtime.dtype import DataType, DataTypeCode

__all__ = [
    "COMMON_DTYPES",
    "dtype_int_range",
    "fits_dtype",
    "is_bool_dtype",
    "is_float_dtype",
    "is_int_dtype",
    "parse_dtype",
    "suggest_dtype",
]

#: The spellings a misspelt dtype is compared with for a "did you mean".
COMMON_DTYPES: tuple[str, ...] = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "bfloat16",
    "handle",
)


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


def suggest_dtype(text: str) -> str | None:
    """The common dtype closest to a misspelt ``text`` (``"flaot32"`` -> ``"float32"``), or
    ``None`` when nothing is close."""
    close = difflib.get_close_matches(text.strip().lower(), COMMON_DTYPES, n=1, cutoff=0.6)
    return close[0] if close else None


def parse_dtype(value: Any, where: str) -> DataType:
    """``value`` (a dtype string, a :class:`DataType` or a numpy dtype) as a DataType.

    Parameters
    ----------
    value : str, DataType or numpy dtype
        What an annotation or builder was given.
    where : str
        What is parsing it, to start the error message (``"R.Tensor"``).

    Raises
    ------
    VMTypeError
        ``value`` is not a data type; a misspelt string gets ``did you mean 'float32'?``.
    """
    try:
        return DataType(value)
    except (VMTypeError, VMValueError) as err:
        close = suggest_dtype(value) if isinstance(value, str) else None
        hint = f"; did you mean {close!r}?" if close and close != value else ""
        raise VMTypeError(f"{where}: {err}{hint}") from None
