"""8-bit floats (``float8_e4m3fn``, ``float8_e5m2``): the numpy reference conversions.

numpy has no 8-bit float, so relaxvm stores these types as their bit patterns in ``uint8``
arrays and converts with vectorized integer arithmetic here. These functions are the
reference every backend (TIR interpreter, LLVM and CUDA codegen) is tested against, and they
agree bit for bit with the optional package ``ml_dtypes`` (which TVM uses for these types).

The two formats (OCP 8-bit floating point, as in ml_dtypes and TVM):

==================  =========  ====  ===========  ============  ===========================
type                exp / man  bias  max finite   infinity      NaN codes
==================  =========  ====  ===========  ============  ===========================
``float8_e4m3fn``   4 / 3      7     448          none          ``0x7f``, ``0xff``
``float8_e5m2``     5 / 2      15    57344        ``0x7c/0xfc`` exponent 31, mantissa != 0
==================  =========  ====  ===========  ============  ===========================

Conversion to float8 (:func:`float_to_float8_bits`) rounds to nearest, ties to even, from the
exact value (float16/32/64 input, no double rounding), like a cast in ml_dtypes:

* a value beyond the largest finite one (after rounding) becomes NaN in ``float8_e4m3fn``
  (it has no infinity) and infinity in ``float8_e5m2``; infinities do the same;
* NaN becomes the canonical NaN (``0x7f`` / ``0x7e``) with the input's sign;
* the sign of zero is kept (``-0.0`` is ``0x80``).

``relax.quantize`` to a float8 type clips to the finite range first, so it saturates instead.
Conversion from float8 (:func:`float8_bits_to_float`) is exact; every NaN code gives the quiet
float NaN with the code's sign.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import VMTypeError
from .dtype import FLOAT8_CODES, DataType

__all__ = [
    "FLOAT8_DTYPES",
    "Float8Format",
    "float8_bits_to_float",
    "float8_format",
    "float_to_float8_bits",
    "host_float8_bits",
    "to_ml_dtypes",
]

#: The float8 type spellings relaxvm supports (TVM's).
FLOAT8_DTYPES = ("float8_e4m3fn", "float8_e5m2")


@dataclass(frozen=True)
class Float8Format:
    """The layout of one 8-bit float type.

    Attributes
    ----------
    name : str
        TVM's spelling.
    exp_bits, man_bits, bias : int
        Exponent width, mantissa width and exponent bias.
    max_code : int
        The code of the largest finite value (``0x7e`` / ``0x7b``).
    overflow_code : int
        What a too-large magnitude becomes: NaN (``0x7f``) for e4m3fn, infinity (``0x7c``)
        for e5m2. Every code above ``max_code`` rounds to it.
    nan_code : int
        The canonical NaN a float NaN converts to (without the sign bit).
    has_inf : bool
        Whether the type has infinities (``0x7c`` / ``0xfc`` in e5m2).
    """

    name: str
    exp_bits: int
    man_bits: int
    bias: int
    max_code: int
    overflow_code: int
    nan_code: int
    has_inf: bool

    @property
    def max_value(self) -> float:
        """The largest finite value (448.0 or 57344.0)."""
        return float(float8_bits_to_float(np.uint8(self.max_code), self.name))

    @property
    def min_exponent(self) -> int:
        """The exponent of the smallest normal value, ``1 - bias``."""
        return 1 - self.bias


_FORMATS = {
    "float8_e4m3fn": Float8Format("float8_e4m3fn", 4, 3, 7, 0x7E, 0x7F, 0x7F, False),
    "float8_e5m2": Float8Format("float8_e5m2", 5, 2, 15, 0x7B, 0x7C, 0x7E, True),
}


def float8_format(dtype: DataType | str) -> Float8Format:
    """The :class:`Float8Format` of a float8 dtype.

    Raises
    ------
    VMTypeError
        ``dtype`` is not ``float8_e4m3fn`` or ``float8_e5m2`` (one lane).
    """
    parsed = DataType(dtype)
    if parsed.code not in FLOAT8_CODES or parsed.lanes != 1:
        raise VMTypeError(
            f"float8_format: {parsed} is not a float8 type; expected one of "
            f"{', '.join(FLOAT8_DTYPES)}"
        )
    return _FORMATS[str(parsed)]


_U64 = np.uint64
_MAN64 = 52
_BIAS64 = 1023


def float_to_float8_bits(values: Any, dtype: DataType | str) -> np.ndarray:
    """Round floats to a float8 type; returns the bit patterns as ``uint8``.

    Parameters
    ----------
    values : array_like
        Numbers (any real numpy dtype, or Python numbers). float16/float32/float64 values
        convert exactly from their own value (the work is done on float64 bits, which hold
        each of them exactly).
    dtype : DataType or str
        ``"float8_e4m3fn"`` or ``"float8_e5m2"``.

    Returns
    -------
    numpy.ndarray
        ``uint8`` codes, of ``values``' shape (a 0-d array for a scalar).

    Examples
    --------
    >>> float_to_float8_bits([1.0, 0.3, 1e6, -0.0], "float8_e4m3fn").tolist()
    [56, 41, 127, 128]
    """
    fmt = float8_format(dtype)
    x = np.asarray(values)
    if x.dtype.kind not in "biuf":
        x = x.astype(np.float32)  # ml_dtypes arrays (float8, bfloat16): exact in float32
    # np.asarray(order="C"), not ascontiguousarray, which turns 0-d arrays into 1-d. Widening
    # a signalling NaN raises numpy's "invalid" flag: it is data here, not an error.
    with np.errstate(invalid="ignore"):
        bits = np.asarray(x, dtype=np.float64, order="C").view(_U64)
    m = fmt.man_bits
    sign = (bits >> _U64(63)).astype(np.uint8) << np.uint8(7)
    mag = bits & _U64(0x7FFF_FFFF_FFFF_FFFF)
    exponent = (mag >> _U64(_MAN64)).astype(np.int64) - _BIAS64
    # Normal results: drop the low mantissa bits with round-half-even (the +half-1+lsb trick),
    # then rebias. A mantissa carry moves into the exponent, which is what rounding wants.
    shift = _U64(_MAN64 - m)
    lsb = (mag >> shift) & _U64(1)
    rounded = (mag + (_U64(1) << (shift - _U64(1))) - _U64(1) + lsb) >> shift
    rebias = _U64((_BIAS64 - fmt.bias) << m)
    normal = np.where(rounded >= rebias, rounded - np.minimum(rounded, rebias), _U64(0))
    # Subnormal results: the significand with its implicit bit, shifted so one unit is the
    # smallest subnormal, rounded the same way (a carry gives the smallest normal code).
    significand = (mag & _U64((1 << _MAN64) - 1)) | _U64(1 << _MAN64)
    sub_shift = np.clip(_MAN64 - m + (fmt.min_exponent - exponent), 1, 63).astype(_U64)
    sub_lsb = (significand >> sub_shift) & _U64(1)
    sub = (significand + (_U64(1) << (sub_shift - _U64(1))) - _U64(1) + sub_lsb) >> sub_shift
    code = np.where(exponent >= fmt.min_exponent, normal, sub)
    code = np.minimum(code, _U64(fmt.overflow_code)).astype(np.uint8)
    code = np.where(np.isnan(x), np.uint8(fmt.nan_code), code)
    return np.asarray(code | sign, dtype=np.uint8)


def float8_bits_to_float(bits: Any, dtype: DataType | str) -> np.ndarray:
    """The float32 values of float8 bit patterns (exact: float32 holds every float8 value).

    Parameters
    ----------
    bits : array_like of uint8
        Codes, as :func:`float_to_float8_bits` returns them.
    dtype : DataType or str
        ``"float8_e4m3fn"`` or ``"float8_e5m2"``.

    Returns
    -------
    numpy.ndarray
        ``float32`` values of ``bits``' shape. NaN codes give the quiet NaN with their sign.

    Examples
    --------
    >>> float8_bits_to_float([56, 41, 0x7E], "float8_e4m3fn").tolist()
    [1.0, 0.3125, 448.0]
    """
    fmt = float8_format(dtype)
    b = np.asarray(bits)
    if b.dtype != np.uint8:
        if b.dtype.kind not in "iu" or (b.size and (b.min() < 0 or b.max() > 255)):
            raise VMTypeError(
                f"float8_bits_to_float: bits must be uint8 codes (0..255), got dtype {b.dtype}"
            )
        b = b.astype(np.uint8)
    u = b.astype(np.uint32)
    m, e_mask, m_mask = fmt.man_bits, (1 << fmt.exp_bits) - 1, (1 << fmt.man_bits) - 1
    sign = (u >> np.uint32(7)) << np.uint32(31)
    exp_field = (u >> np.uint32(m)) & np.uint32(e_mask)
    man_field = u & np.uint32(m_mask)
    normal = (
        sign
        | ((exp_field + np.uint32(127 - fmt.bias)) << np.uint32(23))
        | (man_field << np.uint32(23 - m))
    )
    # Subnormals: mantissa * 2**(min_exponent - man_bits), exact in float32.
    sub_value = man_field.astype(np.float32) * np.float32(2.0 ** (fmt.min_exponent - m))
    sub = sub_value.view(np.uint32) | sign
    out = np.where(exp_field == 0, sub, normal)
    if fmt.has_inf:
        top = exp_field == np.uint32(e_mask)
        special = np.where(man_field == 0, np.uint32(0x7F80_0000), np.uint32(0x7FC0_0000))
        out = np.where(top, special | sign, out)
    else:
        out = np.where((u & np.uint32(0x7F)) == np.uint32(0x7F), np.uint32(0x7FC0_0000) | sign, out)
    return np.asarray(out, dtype=np.uint32).view(np.float32)


def to_ml_dtypes(bits: np.ndarray, dtype: DataType | str) -> np.ndarray:
    """View ``uint8`` codes as an ml_dtypes array of the float8 type (no copy).

    Raises
    ------
    VMTypeError
        ml_dtypes is not installed (the message says how to get the values without it).
    """
    fmt = float8_format(dtype)
    try:
        import ml_dtypes
    except ImportError:
        raise VMTypeError(
            f"Tensor.numpy: numpy has no {fmt.name} type; install the optional package "
            "ml_dtypes (pip install ml_dtypes) to get an ml_dtypes array, or convert the "
            "values in the model (R.astype(x, 'float32')) or with "
            "relaxvm.runtime.float8.float8_bits_to_float(tensor.view(shape, 'uint8').numpy(), "
            f"{fmt.name!r})"
        ) from None
    return np.asarray(bits, dtype=np.uint8).view(getattr(ml_dtypes, fmt.name))


def host_float8_bits(data: Any, dtype: DataType | str) -> np.ndarray:
    """The ``uint8`` codes of host data for a float8 tensor of ``dtype``.

    An ml_dtypes array of the same float8 type gives its own bits (no rounding); anything else
    array-like is converted by value with :func:`float_to_float8_bits` (ints, bools, floats,
    ml_dtypes' other float types).

    Raises
    ------
    VMTypeError
        ``data`` holds something that is not a number (strings, objects).
    """
    fmt = float8_format(dtype)
    array = np.asarray(data)
    if array.dtype.itemsize == 1 and array.dtype.name == fmt.name:
        return array.view(np.uint8)
    if array.dtype.kind not in "biuf" and array.dtype.name not in _ML_FLOAT_NAMES:
        raise VMTypeError(f"tensor: cannot convert numpy dtype {array.dtype} to {fmt.name}")
    return float_to_float8_bits(array, fmt.name)


#: ml_dtypes float types (numpy extension dtypes) that convert to float32 exactly.
_ML_FLOAT_NAMES = frozenset(
    {
        "bfloat16",
        "float8_e4m3fn",
        "float8_e5m2",
        "float8_e4m3",
        "float8_e3m4",
        "float8_e4m3fnuz",
        "float8_e5m2fnuz",
        "float8_e4m3b11fnuz",
        "float8_e8m0fnu",
        "float6_e2m3fn",
        "float6_e3m2fn",
        "float4_e2m1fn",
    }
)
