"""Data types in TVM's spelling (``"float32"``, ``"int64"``, ``"bool"``, ``"float32x4"``).

A :class:`DataType` is the triple DLPack uses, ``(code, bits, lanes)``, with the string form TVM
prints. It compares equal to its string spelling so ``t.dtype == "float32"`` reads naturally.

The 8-bit floats ``float8_e4m3fn`` and ``float8_e5m2`` carry DLPack 1.1's own type codes
(``kDLFloat8_e4m3fn = 10``, ``kDLFloat8_e5m2 = 12``), as in TVM; numpy has no such types, so
their :meth:`DataType.numpy_dtype` is the storage type ``uint8`` (the bit patterns) and
:mod:`relaxvm.runtime.float8` converts values.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from typing import Any

import numpy as np

from ..errors import VMTypeError, VMValueError

__all__ = ["FLOAT8_CODES", "DataType", "DataTypeCode"]


class DataTypeCode:
    """DLPack type codes (``DLDataTypeCode``), as stored in executable files."""

    INT = 0
    UINT = 1
    FLOAT = 2
    HANDLE = 3
    BFLOAT = 4
    COMPLEX = 5
    BOOL = 6
    FLOAT8_E4M3FN = 10
    FLOAT8_E5M2 = 12


_CODE_NAMES = {
    DataTypeCode.INT: "int",
    DataTypeCode.UINT: "uint",
    DataTypeCode.FLOAT: "float",
    DataTypeCode.HANDLE: "handle",
    DataTypeCode.BFLOAT: "bfloat",
    DataTypeCode.COMPLEX: "complex",
    DataTypeCode.BOOL: "bool",
    DataTypeCode.FLOAT8_E4M3FN: "float8_e4m3fn",
    DataTypeCode.FLOAT8_E5M2: "float8_e5m2",
}
_NAME_CODES = {name: code for code, name in _CODE_NAMES.items()}
#: Type codes whose name is the whole spelling (no bit width follows it).
_NAMED_CODES = (DataTypeCode.FLOAT8_E4M3FN, DataTypeCode.FLOAT8_E5M2)
#: The 8-bit float type codes (stored as one byte per element, numpy ``uint8``).
FLOAT8_CODES = frozenset(_NAMED_CODES)
_SPELLING = re.compile(
    r"^(float8_e4m3fn|float8_e5m2|int|uint|float|bfloat|complex|handle|bool)(\d+)?(?:x(\d+))?$"
)
_VALID_BITS = {
    DataTypeCode.INT: (8, 16, 32, 64),
    DataTypeCode.UINT: (1, 8, 16, 32, 64),
    DataTypeCode.FLOAT: (16, 32, 64),
    DataTypeCode.BFLOAT: (16,),
    DataTypeCode.COMPLEX: (64, 128),
    DataTypeCode.HANDLE: (64,),
    DataTypeCode.BOOL: (8,),
    DataTypeCode.FLOAT8_E4M3FN: (8,),
    DataTypeCode.FLOAT8_E5M2: (8,),
}


class DataType:
    """An element type: DLPack ``(code, bits, lanes)`` with TVM's string spelling.

    Parameters
    ----------
    spec : str, DataType, numpy dtype or numpy scalar type
        ``"float32"``, ``"int8"``, ``"bool"``, ``"handle"``, ``"float16x8"`` (8 lanes),
        ``"float8_e4m3fn"``, ``"float8_e5m2"``, or anything :func:`numpy.dtype` accepts
        (including ml_dtypes' ``float8_e4m3fn`` / ``float8_e5m2`` when it is installed).

    Examples
    --------
    >>> DataType("float32").bits
    32
    >>> DataType("float32") == "float32"
    True
    """

    __slots__ = ("_hash", "_str", "bits", "code", "lanes")

    code: int
    bits: int
    lanes: int
    _str: str
    _hash: int

    def __new__(cls, spec: Any) -> DataType:
        if isinstance(spec, DataType):
            return spec
        return _parse(spec if isinstance(spec, str) else _numpy_name(spec))

    @classmethod
    def from_code(cls, code: int, bits: int, lanes: int = 1) -> DataType:
        """Build a data type from its DLPack triple, validating each field.

        Raises
        ------
        VMValueError
            If the triple does not name a data type relaxvm supports.
        """
        if code not in _CODE_NAMES:
            raise VMValueError(f"DataType.from_code: unknown type code {code}")
        if bits not in _VALID_BITS[code]:
            raise VMValueError(
                f"DataType.from_code: {bits} bits is not valid for type code {code} "
                f"({_CODE_NAMES[code]}); expected one of {_VALID_BITS[code]}"
            )
        if not 1 <= lanes <= 65535:
            raise VMValueError(f"DataType.from_code: lanes must be in 1..65535, got {lanes}")
        return _make(code, bits, lanes)

    @property
    def itemsize(self) -> int:
        """Bytes taken by one element, all lanes counted."""
        return (self.bits * self.lanes + 7) // 8

    @property
    def is_float8(self) -> bool:
        """Whether this is ``float8_e4m3fn`` or ``float8_e5m2`` (any lane count)."""
        return self.code in FLOAT8_CODES

    def numpy_dtype(self) -> np.dtype:
        """The numpy dtype holding one lane of this type.

        For the float8 types this is the *storage* type ``uint8``: an array of it holds bit
        patterns, not values (see :mod:`relaxvm.runtime.float8`).

        Raises
        ------
        VMTypeError
            For types numpy cannot hold (``bfloat16``, ``handle``).
        """
        try:
            return _NUMPY_OF[(self.code, self.bits)]
        except KeyError:
            raise VMTypeError(f"DataType {self} has no numpy equivalent") from None

    def with_lanes(self, lanes: int) -> DataType:
        """The same element type with ``lanes`` vector lanes."""
        return DataType.from_code(self.code, self.bits, lanes)

    def __str__(self) -> str:
        return self._str

    def __repr__(self) -> str:
        return f"DataType({self._str!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DataType):
            return self is other or (
                self.code == other.code and self.bits == other.bits and self.lanes == other.lanes
            )
        if isinstance(other, str):
            try:
                other_type = DataType(other)
            except (VMTypeError, VMValueError):
                return False
            return self == other_type
        return NotImplemented

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[Any, ...]:
        return (DataType, (self._str,))


def _make(code: int, bits: int, lanes: int) -> DataType:
    return _interned(code, bits, lanes)


@cache
def _interned(code: int, bits: int, lanes: int) -> DataType:
    obj = object.__new__(DataType)
    object.__setattr__(obj, "code", code)
    object.__setattr__(obj, "bits", bits)
    object.__setattr__(obj, "lanes", lanes)
    if code == DataTypeCode.BOOL:
        text = "bool"
    elif code == DataTypeCode.HANDLE:
        text = "handle"
    elif code in _NAMED_CODES:
        text = _CODE_NAMES[code]
    else:
        text = f"{_CODE_NAMES[code]}{bits}"
    if lanes != 1:
        text += f"x{lanes}"
    object.__setattr__(obj, "_str", text)
    object.__setattr__(obj, "_hash", hash(("DataType", code, bits, lanes)))
    return obj


@lru_cache(maxsize=256)
def _parse(text: str) -> DataType:
    match = _SPELLING.match(text.strip())
    if match is None:
        raise VMTypeError(f"DataType: cannot parse data type {text!r}")
    name, bits_text, lanes_text = match.groups()
    code = _NAME_CODES[name]
    if name == "bool":
        bits = 8
    elif name == "handle":
        bits = 64
    elif code in _NAMED_CODES:
        if bits_text is not None:
            raise VMTypeError(f"DataType: cannot parse data type {text!r}")
        bits = 8
    elif bits_text is None:
        raise VMTypeError(f"DataType: {text!r} needs a bit width, such as {name}32")
    else:
        bits = int(bits_text)
    lanes = int(lanes_text) if lanes_text else 1
    try:
        return DataType.from_code(code, bits, lanes)
    except VMValueError as err:
        raise VMTypeError(f"DataType: cannot parse data type {text!r}: {err}") from None


def _numpy_name(spec: Any) -> str:
    try:
        np_type = np.dtype(spec)
    except TypeError:
        raise VMTypeError(f"DataType: cannot interpret {spec!r} as a data type") from None
    if np_type == np.bool_:
        return "bool"
    if np_type.itemsize == 1 and np_type.name in ("float8_e4m3fn", "float8_e5m2"):
        # ml_dtypes' float8 types: numpy extension types of the same names (their ``kind``
        # differs between the two, so the name decides).
        return np_type.name
    if np_type.kind not in "iufc":
        raise VMTypeError(f"DataType: numpy dtype {np_type} has no relaxvm equivalent")
    prefix = {"i": "int", "u": "uint", "f": "float", "c": "complex"}[np_type.kind]
    return f"{prefix}{np_type.itemsize * 8}"


_NUMPY_OF: dict[tuple[int, int], np.dtype] = {
    (DataTypeCode.BOOL, 8): np.dtype(np.bool_),
    (DataTypeCode.UINT, 1): np.dtype(np.bool_),
    **{(DataTypeCode.INT, b): np.dtype(f"int{b}") for b in (8, 16, 32, 64)},
    **{(DataTypeCode.UINT, b): np.dtype(f"uint{b}") for b in (8, 16, 32, 64)},
    **{(DataTypeCode.FLOAT, b): np.dtype(f"float{b}") for b in (16, 32, 64)},
    (DataTypeCode.COMPLEX, 64): np.dtype(np.complex64),
    (DataTypeCode.COMPLEX, 128): np.dtype(np.complex128),
    (DataTypeCode.FLOAT8_E4M3FN, 8): np.dtype(np.uint8),
    (DataTypeCode.FLOAT8_E5M2, 8): np.dtype(np.uint8),
}
