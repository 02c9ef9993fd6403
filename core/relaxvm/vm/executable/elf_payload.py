"""Executables inside ELF shared libraries (``export_library("model.so")``).

A target kind with ``export_shared`` links its kernels into a shared library and embeds the
executable's bytes in section :data:`SECTION`, framed as ``b"RVMSOEX\\0" | u64 length |
bytes``. Loading reads that section as data: the library is never ``dlopen``-ed, so nothing
in it runs before the embedded executable has passed the usual checks.
"""

from __future__ import annotations

import os
import struct
from typing import TYPE_CHECKING

from ...errors import ExecutableFormatError

if TYPE_CHECKING:
    from .executable import Executable

__all__ = ["PAYLOAD_MAGIC", "SECTION", "export_shared_library", "read_payload"]

SECTION = "relaxvm_exec"
PAYLOAD_MAGIC = b"RVMSOEX\x00"
_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_SHDR = struct.Struct("<IIQQQQIIQQ")


def export_shared_library(
    ex: Executable, path: str | os.PathLike[str], libs: list[tuple[str, str, bytes]]
) -> None:
    """Write ``ex`` (with its serialized kernel libraries) as a shared library at ``path``.

    Raises
    ------
    ExecutableFormatError
        No installed target kind can write shared libraries for these kernels.
    """
    from ...registry.extensions import get_target_kind, list_target_kinds
    from .format import save_to_bytes

    payload = save_to_bytes(ex, libs)
    kinds = [kind for kind, _, _ in ex.kernel_libs] or [
        k for k in ("llvm",) if k in list_target_kinds()
    ]
    for kind_name in dict.fromkeys(kinds):
        kind = get_target_kind(kind_name)
        if kind.export_shared is not None:
            modules = [m for k, _, m in ex.kernel_libs if k == kind_name]
            kind.export_shared(path, payload, modules)
            return
    raise ExecutableFormatError(
        f"export_library({os.fspath(path)!r}): no installed target kind can write a shared "
        f"library for these kernels (kinds: {sorted(set(kinds)) or 'none'}); use a '.rvm' path"
    )


def read_payload(data: bytes) -> bytes:
    """The executable bytes embedded in an ELF shared library.

    Raises
    ------
    ExecutableFormatError
        Not a 64-bit little-endian ELF file, malformed headers, or no relaxvm section.
    """
    if len(data) < _EHDR.size or data[4] != 2 or data[5] != 1:
        raise ExecutableFormatError(
            "an ELF file, but not a 64-bit little-endian one written by export_library"
        )
    fields = _EHDR.unpack_from(data)
    shoff, shentsize, shnum, shstrndx = fields[6], fields[11], fields[12], fields[13]
    if shentsize != _SHDR.size or shnum == 0 or shoff + shnum * shentsize > len(data):
        raise ExecutableFormatError("an ELF file with malformed section headers")
    sections = [_SHDR.unpack_from(data, shoff + i * shentsize) for i in range(shnum)]
    if shstrndx >= shnum:
        raise ExecutableFormatError("an ELF file with malformed section headers")
    names_offset, names_size = sections[shstrndx][4], sections[shstrndx][5]
    names = data[names_offset : names_offset + names_size]
    wanted = SECTION.encode()
    for section in sections:
        name_at = section[0]
        if names[name_at : name_at + len(wanted) + 1] != wanted + b"\x00":
            continue
        offset, size = section[4], section[5]
        body = data[offset : offset + size]
        if len(body) != size or body[: len(PAYLOAD_MAGIC)] != PAYLOAD_MAGIC or size < 16:
            raise ExecutableFormatError(f"an ELF file whose {SECTION} section is damaged")
        length = int.from_bytes(body[8:16], "little")
        if 16 + length > size:
            raise ExecutableFormatError(
                f"an ELF file whose {SECTION} section is truncated ({size - 16} bytes of {length})"
            )
        return body[16 : 16 + length]
    raise ExecutableFormatError(
        f"an ELF file without a {SECTION} section (not written by export_library)"
    )
