"""Scalar semantics shared by constant folding and :func:`relaxvm.ir.evaluate`.

Both places must agree on what ``7 // -2`` or ``Cast("int8", 300)`` means, otherwise the
simplifier could fold a constant to a value that evaluation would not produce. Integer
arithmetic here is mathematical (Python ints, no wrap-around): the IR, like TVM's arithmetic
analysis, assumes index arithmetic does not overflow. Only an explicit ``Cast`` narrows a value
to a smaller integer type, wrapping as two's complement hardware does.
"""

from __future__ import annotations

import math

from ..errors import VMValueError
from ..runtime.dtype import DataType, DataTypeCode

# Re-exported from the public module, so the IR can keep importing them with the scalar helpers.
from .dtype import dtype_int_range, fits_dtype, is_bool_dtype, is_float_dtype, is_int_dtype

__all__ = [
    "Scalar",
    "cast_scalar",
    "dtype_int_range",
    "fits_dtype",
    "floordiv",
    "floormod",
    "is_bool_dtype",
    "is_float_dtype",
    "is_int_dtype",
    "maximum",
    "minimum",
    "truncdiv",
    "truncmod",
]

#: A Python value an expression can evaluate to.
Scalar = int | float | bool


def _check_divisor(name: str, divisor: Scalar) -> None:
    if divisor == 0:
        raise ZeroDivisionError(f"{name}: division by zero")


def floordiv(a: Scalar, b: Scalar) -> Scalar:
    """Floor division (Python's ``//``), for ints and floats; raises ZeroDivisionError."""
    _check_divisor("floordiv", b)
    return a // b


def floormod(a: Scalar, b: Scalar) -> Scalar:
    """Floor modulo (Python's ``%``): the result has the divisor's sign."""
    _check_divisor("floormod", b)
    return a % b


def truncdiv(a: Scalar, b: Scalar) -> Scalar:
    """C division: rounds toward zero for ints, true division for floats."""
    _check_divisor("truncdiv", b)
    if isinstance(a, float) or isinstance(b, float):
        return a / b
    quotient = abs(a) // abs(b)
    return -quotient if (a < 0) != (b < 0) else quotient


def truncmod(a: Scalar, b: Scalar) -> Scalar:
    """C remainder: the result has the dividend's sign (``math.fmod`` for floats)."""
    _check_divisor("truncmod", b)
    if isinstance(a, float) or isinstance(b, float):
        return math.fmod(a, b)
    return a - truncdiv(a, b) * b


def minimum(a: Scalar, b: Scalar) -> Scalar:
    """``min`` that propagates NaN from either side, like numpy's ``minimum`` (and every
    target's ``T.min``); Python's ``min(1.0, nan)`` would drop it."""
    if a != a:
        return a
    if b != b:
        return b
    return a if a <= b else b


def maximum(a: Scalar, b: Scalar) -> Scalar:
    """``max`` that propagates NaN from either side, like numpy's ``maximum``."""
    if a != a:
        return a
    if b != b:
        return b
    return a if a >= b else b


def cast_scalar(value: Scalar, dtype: DataType) -> Scalar:
    """Convert a Python scalar to the value a ``Cast`` to ``dtype`` produces.

    Float to int truncates toward zero; int to a narrower int wraps (two's complement); any
    value to ``bool`` tests against zero.

    Raises
    ------
    VMValueError
        When a NaN or infinite float is cast to an integer type.
    """
    if is_bool_dtype(dtype):
        return bool(value != 0)
    if is_float_dtype(dtype):
        return float(value)
    if not is_int_dtype(dtype):
        raise VMValueError(f"cast: cannot convert a value to non-scalar type {dtype}")
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise VMValueError(f"cast: cannot convert {value} to {dtype}")
        value = math.trunc(value)
    value = int(value)
    if fits_dtype(value, dtype):
        return value
    # Wrap like the hardware would: keep the low `bits` bits, then reinterpret the sign bit.
    modulus = 1 << dtype.bits
    value %= modulus
    if dtype.code == DataTypeCode.INT and value >= modulus >> 1:
        value -= modulus
    return value
