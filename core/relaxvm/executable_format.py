"""The executable file format: :func:`save_to_bytes`, :func:`load_from_bytes` and file helpers.

The layout is documented field by field in ``docs/file_format.md``. In short: a 24-byte header
(magic ``b"RLXVMEX\\0"``, u32 format version, u32 CRC-32 of the body, u64 body length), then
a body laid out like TVM's ``VMExecutable``: function table, memory scopes, constant pool
(tagged with tvm-ffi type indices), instruction offsets and instruction words. Everything is
little-endian; strings are ``u64 length + UTF-8``, vectors ``u64 count + elements``.

Loading treats the file as data only: nothing in it is imported, unpickled or evaluated.
Every read goes through :class:`_Reader`, which checks bounds before it touches a byte and
turns any problem into :class:`~relaxvm.errors.ExecutableFormatError` naming the byte offset
and the field being read.
"""

from __future__ import annotations

import math
import os
import secrets
import struct
import zlib
from enum import IntEnum
from typing import Any

import numpy as np

from .errors import BytecodeError, ExecutableFormatError, VMTypeError, VMValueError
from .executable import Executable, VMFuncInfo, VMFuncKind
from .runtime import DataType, Shape, Tensor, tensor

__all__ = [
    "FORMAT_VERSION",
    "HEADER_SIZE",
    "MAGIC",
    "TENSOR_MAGIC",
    "ConstantTag",
    "load_file",
    "load_from_bytes",
    "save_file",
    "save_file_with",
    "save_to_bytes",
]

#: The first eight bytes of every relaxvm executable.
MAGIC = b"RLXVMEX\x00"
#: The base format version: files without extensions are written as version 1.
FORMAT_VERSION = 1
#: Version 1 plus an extension section after the code (exec mode, kernel libraries); written
#: only when an executable needs it, so plain executables stay byte-identical to version 1.
FORMAT_VERSION_EXT = 2
#: magic (8) + version (u32) + CRC-32 of the body (u32) + body length (u64).
HEADER_SIZE = 24
#: Magic that opens each tensor payload (TVM's ``kTVMTensorMagic``).
TENSOR_MAGIC = 0xDD5E40F096B4A13F
#: TVM's own executable magics (V1 and V2), recognised only to give a better error.
_TVM_MAGICS = (0xD225DE2F4214151D, 0xD225DE2F4214151E)
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


class ConstantTag(IntEnum):
    """Type tags of constant-pool entries (tvm-ffi type indices, as TVM writes them)."""

    INT = 1
    FLOAT = 3
    DTYPE = 5
    STR = 65
    SHAPE = 69
    TENSOR = 70


# Smallest encoded sizes, used to reject counts that cannot fit in the bytes left before
# anything is allocated for them.
_MIN_FUNC_INFO_SIZE = 4 + 8 + 4 * 8 + 8  # kind, name length, four i64, param count
_MIN_SCOPE_SIZE = 8 + 8  # const_idx, scope length
_MIN_CONSTANT_SIZE = 4 + 4  # tag + the smallest payload (a dtype)


# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------
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


def save_to_bytes(ex: Executable, kernel_libs: list[tuple[str, str, bytes]] | None = None) -> bytes:
    """Serialize ``ex`` to the relaxvm executable format (see ``docs/file_format.md``).

    Parameters
    ----------
    ex : Executable
    kernel_libs : list of (target kind, target string, bytes), optional
        Serialized kernel libraries to store (``export_library``); each is reloaded through
        its target kind's ``load`` when the file is read.

    Returns
    -------
    bytes

    Raises
    ------
    ExecutableFormatError
        A value has no encoding: an int constant outside the signed 64-bit range, a tensor
        constant whose dtype numpy cannot hold (``bfloat16``, ``handle``) or that has vector
        lanes, or a string that is not valid Unicode.
    """
    body = _Writer()
    _write_func_table(body, ex.func_table)
    _write_memory_scopes(body, ex.memory_scopes)
    _write_constants(body, ex.constants)
    body.i64_vector(ex.instr_offset, "instr_offset")
    body.i64_vector(ex.instr_data, "instr_data")
    extensions = _extensions(ex, kernel_libs or [])
    version = FORMAT_VERSION
    if extensions:
        version = FORMAT_VERSION_EXT
        body.put(_U64, len(extensions), "extension count")
        for key, data in extensions:
            body.string(key, "extension key")
            body.put(_U64, len(data), f"length of extension {key!r}")
            body.raw(data)
    payload = body.getvalue()
    header = MAGIC + struct.pack("<IIQ", version, zlib.crc32(payload), len(payload))
    return header + payload


def _extensions(
    ex: Executable, kernel_libs: list[tuple[str, str, bytes]]
) -> list[tuple[str, bytes]]:
    """The extension records of ``ex``: ``(key, payload)``."""
    records: list[tuple[str, bytes]] = []
    if ex.exec_mode != "bytecode":
        records.append(("exec_mode", ex.exec_mode.encode("utf-8")))
    for kind, target, data in kernel_libs:
        out = _Writer()
        out.string(kind, "kernel library target kind")
        out.string(target, "kernel library target")
        out.put(_U64, len(data), "kernel library length")
        out.raw(bytes(data))
        records.append(("kernel_lib", out.getvalue()))
    return records


def _write_func_table(out: _Writer, table: list[VMFuncInfo]) -> None:
    out.put(_U64, len(table), "function count")
    for info in table:
        where = f"function {info.name!r}"
        out.put(_I32, int(info.kind), f"{where} kind")
        out.string(info.name, f"{where} name")
        out.put(_I64, info.start_instr, f"{where} start_instr")
        out.put(_I64, info.end_instr, f"{where} end_instr")
        out.put(_I64, info.num_args, f"{where} num_args")
        out.put(_I64, info.register_file_size, f"{where} register_file_size")
        out.put(_U64, len(info.param_names), f"{where} parameter count")
        for param in info.param_names:
            out.string(param, f"{where} parameter name")


def _write_memory_scopes(out: _Writer, scopes: dict[int, str]) -> None:
    out.put(_U64, len(scopes), "memory scope count")
    for const_idx, scope in scopes.items():
        out.put(_I64, const_idx, "memory scope constant index")
        out.string(scope, f"memory scope of c[{const_idx}]")


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
    array = np.ascontiguousarray(value.numpy()).astype(element_type, copy=False)
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


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------
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


def load_from_bytes(data: bytes | bytearray | memoryview) -> Executable:
    """Parse an executable written by :func:`save_to_bytes`.

    Parameters
    ----------
    data : bytes-like

    Returns
    -------
    Executable
        Validated: its constructor checked every register, index and jump.

    Raises
    ------
    ExecutableFormatError
        The bytes are not a relaxvm executable, have another format version, are truncated
        or corrupt, or decode to an invalid program. The message names the byte offset and
        the field; for an invalid program the :class:`~relaxvm.errors.BytecodeError` is
        chained as the cause.
    TypeError
        ``data`` is not bytes-like.
    """
    try:
        view = memoryview(data).cast("B")
    except TypeError:
        raise TypeError(
            f"load_from_bytes: expected bytes, bytearray or memoryview, got {type(data).__name__}"
        ) from None
    body_start, version = _check_header(view)
    reader = _Reader(view, body_start, len(view))
    table = _read_func_table(reader)
    scope_entries = _read_memory_scopes(reader)
    constants = _read_constants(reader)
    memory_scopes: dict[int, str] = {}
    for const_idx, scope, offset in scope_entries:
        if not 0 <= const_idx < len(constants):
            raise reader.fail(
                f"memory scope names constant c[{const_idx}], but the pool has "
                f"{len(constants)} constants",
                offset,
            )
        memory_scopes[const_idx] = scope
    instr_offset = reader.i64_vector("instr_offset")
    instr_data = reader.i64_vector("instr_data")
    exec_mode = "bytecode"
    kernel_libs: list[tuple[str, str, bytes, int]] = []
    if version == FORMAT_VERSION_EXT:
        exec_mode = _read_extensions(reader, kernel_libs)
    if reader.remaining:
        raise reader.fail(f"{reader.remaining} trailing bytes after the code section")
    try:
        ex = Executable(table, constants, instr_offset, instr_data, memory_scopes, exec_mode)
    except BytecodeError as err:
        raise ExecutableFormatError(f"file decodes but the program is invalid: {err}") from err
    for kind, target, payload, offset in kernel_libs:
        _load_kernel_lib(ex, kind, target, payload, offset)
    return ex


def _read_extensions(reader: _Reader, kernel_libs: list[tuple[str, str, bytes, int]]) -> str:
    """Read the version-2 extension section; returns the exec mode."""
    from .executable import EXEC_MODES

    exec_mode = "bytecode"
    count = reader.count("the extension count", 16)
    for index in range(count):
        key = reader.string(f"the key of extension {index}")
        size = reader.count(f"the length of extension {key!r}", 1)
        start = reader.pos
        data = bytes(reader.take(size, f"extension {key!r}"))
        if key == "exec_mode":
            try:
                exec_mode = data.decode("utf-8")
            except UnicodeDecodeError:
                exec_mode = ""
            if exec_mode not in EXEC_MODES:
                raise reader.fail(f"unknown exec_mode {exec_mode!r} (expected {EXEC_MODES})", start)
        elif key == "kernel_lib":
            inner = _Reader(memoryview(data), 0, len(data))
            kind = inner.string("kernel library target kind")
            target = inner.string("kernel library target")
            length = inner.count("kernel library length", 1)
            payload = bytes(inner.take(length, "kernel library"))
            if inner.remaining:
                raise reader.fail(f"{inner.remaining} trailing bytes in a kernel library", start)
            kernel_libs.append((kind, target, payload, start))
        else:
            raise reader.fail(f"unknown extension {key!r}; this relaxvm cannot run the file", start)
    return exec_mode


def _load_kernel_lib(ex: Executable, kind_name: str, target: str, data: bytes, offset: int) -> None:
    """Reload one kernel library through its target kind and import it into ``ex``."""
    from .errors import RegistryError
    from .extensions import get_target_kind
    from .target import Target

    try:
        kind = get_target_kind(kind_name)
    except RegistryError as err:
        raise ExecutableFormatError(
            f"the executable holds kernels built for target kind {kind_name!r} (at offset "
            f"{offset}), which is not installed here: {err}"
        ) from None
    if kind.load is None:
        raise ExecutableFormatError(
            f"the executable holds kernels for target kind {kind_name!r}, whose plugin cannot "
            "load serialized kernels"
        )
    try:
        parsed = Target(target)
    except RegistryError as err:
        raise ExecutableFormatError(f"kernel library target {target!r} is invalid: {err}") from None
    module = kind.load(data, parsed)
    ex.import_module(module)
    ex.kernel_libs.append((kind_name, target, module))


def _check_header(view: memoryview) -> tuple[int, int]:
    """Validate magic, version, length and checksum; return where the body starts."""
    size = len(view)
    magic = bytes(view[: len(MAGIC)])
    if magic != MAGIC[: len(magic)]:
        hint = ""
        if len(magic) == 8 and struct.unpack("<Q", magic)[0] in _TVM_MAGICS:
            hint = " (this is an Apache TVM Relax VM executable; relaxvm has its own format)"
        raise ExecutableFormatError(
            f"not a relaxvm executable: the magic at offset 0 is {magic!r}, expected "
            f"{MAGIC!r}{hint}"
        )
    reader = _Reader(view, 0, size)
    reader.take(len(MAGIC), "the magic")
    version = reader.get(_U32, "the format version")
    if version not in (FORMAT_VERSION, FORMAT_VERSION_EXT):
        raise ExecutableFormatError(
            f"unsupported executable format version {version} (at offset {len(MAGIC)}): this "
            f"relaxvm reads version {FORMAT_VERSION} (and {FORMAT_VERSION_EXT}, with "
            "extensions) only"
        )
    checksum = reader.get(_U32, "the body checksum")
    body_length = reader.get(_U64, "the body length")
    if body_length > reader.remaining:
        raise ExecutableFormatError(
            f"truncated executable: the header says the body is {body_length} bytes, but "
            f"only {reader.remaining} bytes follow the header at offset {HEADER_SIZE}"
        )
    if body_length < reader.remaining:
        raise ExecutableFormatError(
            f"corrupt executable: {reader.remaining - body_length} trailing bytes after the "
            f"body, which ends at offset {HEADER_SIZE + body_length}"
        )
    actual = zlib.crc32(view[HEADER_SIZE:])
    if actual != checksum:
        raise ExecutableFormatError(
            f"checksum mismatch: the body (offsets {HEADER_SIZE} to {size}) has CRC-32 "
            f"{actual:#010x}, but the header (offset 12) says {checksum:#010x}; the file is "
            "corrupt"
        )
    return HEADER_SIZE, version


def _read_func_table(reader: _Reader) -> list[VMFuncInfo]:
    count = reader.count("the function count", _MIN_FUNC_INFO_SIZE)
    table = []
    for index in range(count):
        where = f"function table entry {index}"
        kind = reader.get(_I32, f"the kind of {where}")
        if kind not in (0, 1, 2):
            raise reader.fail(f"{where} has unknown kind {kind} (0 packed, 1 VM, 2 compiled)")
        name = reader.string(f"the name of {where}")
        where = f"function {name!r} (table entry {index})"
        start_instr = reader.get(_I64, f"start_instr of {where}")
        end_instr = reader.get(_I64, f"end_instr of {where}")
        num_args = reader.get(_I64, f"num_args of {where}")
        register_file_size = reader.get(_I64, f"register_file_size of {where}")
        num_params = reader.count(f"the parameter count of {where}", 8)
        params = [reader.string(f"parameter name {i} of {where}") for i in range(num_params)]
        table.append(
            VMFuncInfo(
                VMFuncKind(kind), name, start_instr, end_instr, num_args, register_file_size, params
            )
        )
    return table


def _read_memory_scopes(reader: _Reader) -> list[tuple[int, str, int]]:
    """Read ``(const_idx, scope, offset)`` entries; indices are checked once constants exist."""
    count = reader.count("the memory scope count", _MIN_SCOPE_SIZE)
    entries = []
    seen: set[int] = set()
    for index in range(count):
        const_idx = reader.get(_I64, f"the constant index of memory scope {index}")
        offset = reader.field_start
        if const_idx in seen:
            # A dict cannot hold both, and silently keeping one would change the program.
            raise reader.fail(f"constant c[{const_idx}] has two memory scopes")
        seen.add(const_idx)
        entries.append((const_idx, reader.string(f"memory scope {index}"), offset))
    return entries


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
    array = np.frombuffer(raw, dtype=element_type).astype(element_type.newbyteorder("="))
    # tensor() infers the dtype from numpy, which spells uint1 as bool: view() restores it.
    return tensor(array.reshape(shape)).view(Shape(shape), dtype)


# ---------------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------------
def save_file(ex: Executable, path: str | os.PathLike[str]) -> None:
    """Write ``ex`` to ``path`` atomically (the program, without kernel libraries)."""
    save_file_with(ex, path, None)


def save_file_with(
    ex: Executable,
    path: str | os.PathLike[str],
    kernel_libs: list[tuple[str, str, bytes]] | None,
) -> None:
    """Write ``ex`` to ``path`` atomically.

    The bytes go to a temporary file in the same directory, which then replaces ``path`` in
    one step, so readers never see a half-written executable and a failed save leaves any
    previous file intact.

    Raises
    ------
    ExecutableFormatError
        ``ex`` cannot be serialized (see :func:`save_to_bytes`).
    OSError
        The directory cannot be written.
    """
    data = save_to_bytes(ex, kernel_libs)
    target = os.fspath(path)
    directory, name = os.path.split(os.path.abspath(target))
    temp_path = os.path.join(directory, f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    # os.open with 0o666 lets the umask decide the final permissions, as open() would.
    fd = os.open(
        temp_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666
    )
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temp_path, target)
    except BaseException:
        try:
            os.unlink(temp_path)
        except OSError:
            pass
        raise


def load_file(path: str | os.PathLike[str]) -> Executable:
    """Read an executable written by :func:`save_file`.

    Raises
    ------
    ExecutableFormatError
        The file is not a valid executable; the message starts with the path.
    OSError
        The file cannot be read (the error names the path).
    """
    target = os.fspath(path)
    with open(target, "rb") as stream:
        data = stream.read()
    try:
        if data[:4] == b"\x7fELF":  # a shared library from export_library("x.so")
            from .elf_payload import read_payload

            data = read_payload(data)
        return load_from_bytes(data)
    except ExecutableFormatError as err:
        raise ExecutableFormatError(f"cannot load executable {target!r}: {err}") from err
