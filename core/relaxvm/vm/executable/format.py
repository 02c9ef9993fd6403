"""The executable file format: :func:`save_to_bytes`, :func:`load_from_bytes` and file helpers.

The layout is documented field by field in ``docs/file_format.md``. In short: a 24-byte header
(magic ``b"RLXVMEX\\0"``, u32 format version, u32 CRC-32 of the body, u64 body length), then
a body laid out like TVM's ``VMExecutable``: function table, memory scopes, constant pool
(tagged with tvm-ffi type indices), instruction offsets and instruction words. Everything is
little-endian; strings are ``u64 length + UTF-8``, vectors ``u64 count + elements``.

Loading treats the file as data only: nothing in it is imported, unpickled or evaluated.
Every read goes through the bounds-checking reader of :mod:`relaxvm.vm.executable.codec`, which
turns any problem into :class:`~relaxvm.errors.ExecutableFormatError` naming the byte offset
and the field being read.
"""

from __future__ import annotations

import os
import secrets
import struct
import zlib

from ...errors import BytecodeError, ExecutableFormatError, PluginError
from .codec import (
    _I32,
    _I64,
    _U32,
    _U64,
    TENSOR_MAGIC,
    ConstantTag,
    _read_constants,
    _Reader,
    _write_constants,
    _Writer,
)
from .executable import Executable, VMFuncInfo, VMFuncKind, max_register_file_size

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
#: TVM's own executable magics (V1 and V2), recognised only to give a better error.
_TVM_MAGICS = (0xD225DE2F4214151D, 0xD225DE2F4214151E)
# Smallest encoded sizes, used to reject counts that cannot fit in the bytes left before
# anything is allocated for them.
_MIN_FUNC_INFO_SIZE = 4 + 8 + 4 * 8 + 8  # kind, name length, four i64, param count
_MIN_SCOPE_SIZE = 8 + 8  # const_idx, scope length


# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------
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
        chained as the cause. This is the only error any byte string raises (see
        :func:`_contained`).
    PluginError
        The installed plugins cannot load (a problem of this machine, not of the bytes).
    TypeError
        ``data`` is not bytes-like.
    """
    try:
        view = memoryview(data).cast("B")
    except TypeError:
        raise TypeError(
            f"load_from_bytes: expected bytes, bytearray or memoryview, got {type(data).__name__}"
        ) from None
    try:
        return _parse(view)
    except (ExecutableFormatError, PluginError):
        raise
    except Exception as err:
        raise _contained(err) from err


def _contained(err: Exception) -> ExecutableFormatError:
    """The :class:`ExecutableFormatError` standing for anything else a load raised.

    Every field is checked where it is read, so this is a safety net: whatever a damaged file
    still provokes further down (a target kind's ``load`` parsing its kernel library, a
    ``RecursionError`` on deep nesting, a ``MemoryError``) reaches the caller as the one
    documented error, with the original chained as its cause.
    """
    return ExecutableFormatError(
        f"corrupt executable: reading it failed with {type(err).__name__}: {err}"
    )


def _parse(view: memoryview) -> Executable:
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
    from ...errors import RegistryError
    from ...registry.extensions import get_target_kind
    from ...target import Target

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
    try:
        module = kind.load(data, parsed)
    except (ExecutableFormatError, PluginError):
        raise
    except Exception as err:
        # The library's bytes come from the file: what its loader trips over is the file's
        # fault, so it is reported as such, naming where the library sits.
        raise ExecutableFormatError(
            f"corrupt executable: the {kind_name!r} kernel library at offset {offset} cannot "
            f"be loaded: {type(err).__name__}: {err}"
        ) from err
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
        rfs_offset = reader.field_start
        num_params = reader.count(f"the parameter count of {where}", 8)
        params = [reader.string(f"parameter name {i} of {where}") for i in range(num_params)]
        # Checked here too (the validator repeats it) so the message names the offset: the
        # frame a VM allocates must follow from the code in the file, not from this claim.
        limit = max_register_file_size(kind, len(params), end_instr - start_instr)
        if kind != VMFuncKind.PACKED_FUNC and register_file_size > limit:
            raise reader.fail(
                f"register_file_size of {where} is {register_file_size}, more than the "
                f"{limit} its {len(params)} parameters and code can use",
                rfs_offset,
            )
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

            try:
                data = read_payload(data)
            except (ExecutableFormatError, PluginError):
                raise
            except Exception as err:  # the same one-error contract as load_from_bytes
                raise _contained(err) from err
        return load_from_bytes(data)
    except ExecutableFormatError as err:
        raise ExecutableFormatError(f"cannot load executable {target!r}: {err}") from err
