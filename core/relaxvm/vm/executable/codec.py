"""Field and constant-pool codecs of the executable file format.

:class:`_Writer` appends little-endian fields and refuses values that do not fit them;
:class:`_Reader` bounds-checks every read and names the byte offset of any problem. The
constant pool (ints, floats, dtypes, strings, shapes and tensors, tagged with tvm-ffi type
indices as TVM writes them) is encoded and decoded here. :mod:`relaxvm.vm.executable.format`
lays out the sections with them; ``docs/file_format.md`` documents every field.
"""

from __future__ import annotations

import math
import struct
from enum import IntEnum
from typing import Any

import numpy as np

from ...errors import ExecutableFormatError, VMTypeError, VMValueError
from ...runtime import DataType, Shape, Tensor, tensor

#: Magic that opens each tensor payload (TVM's ``kTVMTensorMagic``).
TENSOR_MAGIC = 0xDD5E40F096B4A13F
#: DLPack's ``kDLCPU``: tensor constants are always stored as CPU tensors.
_DL_CPU = 1
#: numpy 1.x arrays have at most 32 dimensions (numpy 2 allows 64); stay portable.
_MAX_TENSOR_NDIM = 32
#: numpy refuses arrays whose size in bytes, zero dimensions counted as one, reaches 2**63.
_MAX_TENSOR_EXTENT = 1 << 62
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1
_U8, _U16, _I32, _U32 = (
    struct.Struct("<B"),
    struct.Struct("<H"),
    struct.Struct("<i"),
    struct.Struct("<I"),
)
_U64, _I64, _F64 = struct.Struct("<Q"), struct.Struct("<q"), struct.Struct("<d")


#: The smallest encoded constant (a tag and a dtype): counts needing more bytes than remain
#: are refused before anything is allocated.
_MIN_CONSTANT_SIZE = 4 + 4


class ConstantTag(IntEnum):
    """Type tags of constant-pool entries (tvm-ffi type indices, as TVM writes them)."""

    INT = 1
    FLOAT = 3
    DTYPE = 5
    STR = 65
    SHAPE = 69
    TENSOR = 70


class _Writer:
    """Appends little-endian fields; refuses values that do not fit their field."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def getvalue(self) -> bytes:
        return b"".join(self._parts)

    def raw(self, data: bytes) -> None:
        self._parts.append(data)

    def put(self, fmt: struct.Struct, value: Any, what: str) -> None:
        try:
            self._parts.append(fmt.pack(value))
        except (struct.error, TypeError, OverflowError):
            raise ExecutableFormatError(
                f"cannot save executable: {what} is {value!r}, which does not fit its "
                f"{fmt.size * 8}-bit field"
            ) from None

    def string(self, text: str, what: str) -> None:
        try:
            encoded = text.encode("utf-8")
        except (AttributeError, UnicodeEncodeError):
            raise ExecutableFormatError(
                f"cannot save executable: {what} {text!r} is not a valid Unicode string"
            ) from None
        self.put(_U64, len(encoded), f"length of {what}")
        self.raw(encoded)

    def i64_vector(self, values: list[int], what: str) -> None:
        self.put(_U64, len(values), f"{what} count")
        try:
            self.raw(struct.pack(f"<{len(values)}q", *values))
        except (struct.error, TypeError):
            for index, value in enumerate(values):  # name the word that does not fit
                self.put(_I64, value, f"{what}[{index}]")
            raise


def _write_constants(out: _Writer, constants: list[Any]) -> None:
    out.put(_U64, len(constants), "constant count")
    for index, value in enumerate(constants):
        where = f"constant c[{index}]"
        # bool never gets here as an int: the Executable validator rejects bool constants.
        if isinstance(value, Tensor):
            out.put(_I32, ConstantTag.TENSOR, "tag")
            _write_tensor(out, value, where)
        elif isinstance(value, Shape):
            out.put(_I32, ConstantTag.SHAPE, "tag")
            out.put(_U64, len(value), f"{where} ndim")
            for dim in value:
                out.put(_I64, dim, f"{where} dimension")
        elif isinstance(value, str):
            out.put(_I32, ConstantTag.STR, "tag")
            out.string(value, where)
        elif isinstance(value, DataType):
            out.put(_I32, ConstantTag.DTYPE, "tag")
            _write_dtype(out, value, where)
        elif isinstance(value, int) and not isinstance(value, bool):
            out.put(_I32, ConstantTag.INT, "tag")
            if not _I64_MIN <= value <= _I64_MAX:
                raise ExecutableFormatError(
                    f"cannot save executable: {where} is the int {value}, outside the signed "
                    "64-bit range the format stores"
                )
            out.put(_I64, value, where)
        elif isinstance(value, float):
            out.put(_I32, ConstantTag.FLOAT, "tag")
            out.put(_F64, value, where)
        else:
            raise ExecutableFormatError(
                f"cannot save executable: {where} has unsupported type {type(value).__name__}"
            )


def _write_dtype(out: _Writer, dtype: DataType, where: str) -> None:
    out.put(_U8, dtype.code, f"{where} dtype code")
    out.put(_U8, dtype.bits, f"{where} dtype bits")
    out.put(_U16, dtype.lanes, f"{where} dtype lanes")


def _write_tensor(out: _Writer, value: Tensor, where: str) -> None:
    dtype = value.dtype
    element_type = _tensor_element_type(dtype)
    if element_type is None:
        raise ExecutableFormatError(
            f"cannot save executable: {where} is a {dtype} tensor; only tensors numpy can "
            "hold with one lane per element can be stored"
        )
    if len(value.shape) > _MAX_TENSOR_NDIM:
        raise ExecutableFormatError(
            f"cannot save executable: {where} has {len(value.shape)} dimensions; files hold "
            f"at most {_MAX_TENSOR_NDIM} so that every numpy version can load them"
        )
    array = np.ascontiguousarray(value.numpy_storage()).astype(element_type, copy=False)
    out.put(_U64, TENSOR_MAGIC, "tensor magic")
    out.put(_U64, 0, "reserved")
    out.put(_I32, _DL_CPU, "device_type")
    out.put(_I32, 0, "device_id")
    out.put(_I32, len(value.shape), f"{where} ndim")
    _write_dtype(out, dtype, where)
    for dim in value.shape:
        out.put(_I64, dim, f"{where} dimension")
    data = array.tobytes()
    out.put(_I64, len(data), f"{where} data_byte_size")
    out.raw(data)


def _tensor_element_type(dtype: DataType) -> np.dtype | None:
    """Little-endian numpy type of a storable tensor element, or ``None`` if not storable."""
    if dtype.lanes != 1:
        return None
    try:
        return dtype.numpy_dtype().newbyteorder("<")
    except VMTypeError:
        return None


class _Reader:
    """A cursor over ``data[start:end]`` that bounds-checks every read.

    Offsets in messages are absolute positions in the whole file, so they can be looked up
    with a hex dump.
    """

    def __init__(self, data: memoryview, start: int, end: int) -> None:
        self._data = data
        self.pos = start
        self._end = end
        #: Where the most recently read field starts: the default offset in messages.
        self.field_start = start

    @property
    def remaining(self) -> int:
        return self._end - self.pos

    def fail(self, message: str, offset: int | None = None) -> ExecutableFormatError:
        where = self.field_start if offset is None else offset
        return ExecutableFormatError(f"corrupt executable: {message} (at offset {where})")

    def take(self, size: int, what: str) -> memoryview:
        if size > self.remaining:
            raise ExecutableFormatError(
                f"truncated executable: need {size} bytes for {what} at offset {self.pos}, "
                f"{self.remaining} remain"
            )
        self.field_start = self.pos
        self.pos += size
        return self._data[self.field_start : self.pos]

    def get(self, fmt: struct.Struct, what: str) -> Any:
        return fmt.unpack(self.take(fmt.size, what))[0]

    def count(self, what: str, min_element_size: int) -> int:
        """Read a u64 element count, refusing counts the remaining bytes cannot hold."""
        value: int = self.get(_U64, what)
        if value * min_element_size > self.remaining:
            # Checked before anything is allocated, so a damaged count cannot ask for 2**60
            # elements. Whether the count or the file end is wrong cannot be told apart.
            raise ExecutableFormatError(
                f"truncated or corrupt executable: {what} at offset {self.field_start} is {value}, but "
                f"only {self.remaining} bytes remain (each entry takes at least "
                f"{min_element_size} bytes)"
            )
        return value

    def string(self, what: str) -> str:
        raw = self.take(self.count(f"the length of {what}", 1), what)
        try:
            return str(raw, "utf-8")
        except UnicodeDecodeError as err:
            raise self.fail(
                f"{what} is not valid UTF-8 ({err.reason} at byte {err.start} of the string)"
            ) from None

    def i64_vector(self, what: str) -> list[int]:
        size = self.count(f"the {what} count", 8)
        return list(struct.unpack(f"<{size}q", self.take(8 * size, what)))


def _read_constants(reader: _Reader) -> list[Any]:
    count = reader.count("the constant count", _MIN_CONSTANT_SIZE)
    constants: list[Any] = []
    for index in range(count):
        where = f"constant c[{index}]"
        tag = reader.get(_I32, f"the type tag of {where}")
        if tag == ConstantTag.TENSOR:
            constants.append(_read_tensor(reader, where))
        elif tag == ConstantTag.SHAPE:
            ndim = reader.count(f"the ndim of {where}", 8)
            dims = [reader.get(_I64, f"dimension {i} of {where}") for i in range(ndim)]
            constants.append(Shape(dims))
        elif tag == ConstantTag.STR:
            constants.append(reader.string(where))
        elif tag == ConstantTag.INT:
            constants.append(reader.get(_I64, where))
        elif tag == ConstantTag.FLOAT:
            constants.append(reader.get(_F64, where))
        elif tag == ConstantTag.DTYPE:
            constants.append(_read_dtype(reader, where))
        else:
            known = ", ".join(f"{t.value} {t.name.lower()}" for t in ConstantTag)
            raise reader.fail(f"unknown type tag {tag} for {where} (known: {known})")
    return constants


def _read_dtype(reader: _Reader, where: str) -> DataType:
    code = reader.get(_U8, f"the dtype code of {where}")
    bits = reader.get(_U8, f"the dtype bits of {where}")
    lanes = reader.get(_U16, f"the dtype lanes of {where}")
    try:
        return DataType.from_code(code, bits, lanes)
    except VMValueError as err:
        raise reader.fail(
            f"{where} has an invalid dtype (code {code}, bits {bits}, lanes {lanes}): {err}",
            reader.field_start - 2,
        ) from None


def _read_tensor(reader: _Reader, where: str) -> Tensor:
    magic = reader.get(_U64, f"the tensor magic of {where}")
    if magic != TENSOR_MAGIC:
        raise reader.fail(f"{where} has tensor magic {magic:#x}, expected {TENSOR_MAGIC:#x}")
    if reader.get(_U64, f"the reserved field of {where}") != 0:
        raise reader.fail(f"the reserved field of {where} is not 0")
    device_type = reader.get(_I32, f"the device_type of {where}")
    device_id = reader.get(_I32, f"the device_id of {where}")
    if (device_type, device_id) != (_DL_CPU, 0):
        raise reader.fail(
            f"{where} is stored for device ({device_type}, {device_id}); tensor constants "
            "are always stored as CPU (1, 0)",
            reader.field_start - 4,
        )
    ndim = reader.get(_I32, f"the ndim of {where}")
    if not 0 <= ndim <= _MAX_TENSOR_NDIM:
        raise reader.fail(f"{where} has ndim {ndim} (must be 0..{_MAX_TENSOR_NDIM})")
    dtype = _read_dtype(reader, where)
    element_type = _tensor_element_type(dtype)
    if element_type is None:
        raise reader.fail(
            f"{where} is a {dtype} tensor; tensor constants must have one lane and a type "
            "numpy can hold",
            reader.field_start - 2,
        )
    shape = []
    for axis in range(ndim):
        shape.append(reader.get(_I64, f"dimension {axis} of {where}"))
        if shape[-1] < 0:
            raise reader.fail(f"dimension {axis} of {where} is negative ({shape[-1]})")
    if math.prod(max(dim, 1) for dim in shape) * dtype.itemsize >= _MAX_TENSOR_EXTENT:
        raise reader.fail(f"{where} has shape {shape}, too large for an array")
    byte_size = reader.get(_I64, f"the data_byte_size of {where}")
    expected = math.prod(shape) * dtype.itemsize
    if byte_size != expected:
        raise reader.fail(
            f"{where} says data_byte_size {byte_size}, but shape {shape} of {dtype} needs "
            f"{expected} bytes"
        )
    raw = reader.take(byte_size, f"the data of {where}")
    array = np.frombuffer(raw, dtype=element_type)
    if not array.dtype.isnative:  # files are little-endian; a big-endian host converts
        array = array.astype(element_type.newbyteorder("="))
    # tensor() copies into storage of its own, so the read-only view is copied exactly once.
    # tensor() infers the dtype from numpy, which spells uint1 as bool: view() restores it.
    return tensor(array.reshape(shape)).view(Shape(shape), dtype)
