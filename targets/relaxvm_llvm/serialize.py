"""The byte format of compiled LLVM kernel modules (what ``export_library`` stores).

Layout (integers little-endian)::

    8 bytes   magic b"RVMLLVM\\0"
    u32       format version (FORMAT_VERSION)
    u32       header length H
    H bytes   header: UTF-8 JSON (target triple, CPU, features, fast-math flags, LLVM
              version, object size and SHA-256, kernel signatures); data only, no pickle
    rest      the ELF object file emitted by LLVM

Loading checks everything before any code is linked: magic, version, lengths, the object's
SHA-256, the signatures' structure, the triple and that the host CPU has every feature the
code was compiled for. Any failure raises :class:`relaxvm.errors.ExecutableFormatError`.
"""

from __future__ import annotations

import hashlib
import json
import struct
from typing import Any

import llvmlite.binding as llvm

from relaxvm.errors import ExecutableFormatError

from . import jit
from .codegen import CompiledObject
from .signature import KernelSignature

__all__ = ["FORMAT_VERSION", "MAGIC", "check_cpu", "dumps", "loads"]

MAGIC = b"RVMLLVM\x00"
FORMAT_VERSION = 1
_PREFIX = struct.Struct("<8sII")
_MAX_HEADER = 64 << 20

#: Features implied by the generic x86-64 micro-architecture levels.
_V2 = {"sse3", "ssse3", "sse4.1", "sse4.2", "popcnt", "cx16", "sahf"}
_V3 = _V2 | {"avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave"}
_V4 = _V3 | {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}
_IMPLIED: dict[str, set[str]] = {
    "generic": set(),
    "x86-64": set(),
    "x86-64-v2": _V2,
    "x86-64-v3": _V3,
    "x86-64-v4": _V4,
}


def dumps(compiled: CompiledObject) -> bytes:
    """Serialize compiled kernels (object code plus signatures and target description)."""
    info = compiled.info
    header = {
        "format_version": FORMAT_VERSION,
        "triple": info.triple,
        "cpu": info.cpu,
        "features": info.features,
        "fastmath": list(info.fastmath),
        "llvm_version": ".".join(map(str, llvm.llvm_version_info)),
        "object_size": len(compiled.object_code),
        "object_sha256": hashlib.sha256(compiled.object_code).hexdigest(),
        "kernels": [s.to_json() for s in compiled.signatures],
    }
    raw = json.dumps(header, sort_keys=True).encode("utf-8")
    return _PREFIX.pack(MAGIC, FORMAT_VERSION, len(raw)) + raw + compiled.object_code


def check_cpu(cpu: str, features: str) -> None:
    """Refuse code compiled for a CPU whose features this host lacks.

    Raises
    ------
    ExecutableFormatError
        Naming the missing features, or the unknown CPU.
    """
    host = jit.host_cpu_name()
    host_features = jit.host_enabled_features()
    needed = set(jit.enabled_features(features))
    if cpu != host:
        implied = _IMPLIED.get(cpu)
        if implied is None:
            raise ExecutableFormatError(
                f"llvm module: compiled for CPU {cpu!r}, but this host is {host!r}; rebuild "
                "for this machine (or build with -mcpu=x86-64-v2/v3 for portable code)"
            )
        needed |= implied
    missing = sorted(needed - host_features)
    if missing:
        raise ExecutableFormatError(
            f"llvm module: compiled for CPU {cpu!r} with features this host ({host!r}) lacks: "
            f"{', '.join(missing)}; rebuild for this machine"
        )


def loads(data: bytes) -> CompiledObject:
    """Parse and validate serialized kernels (no code is linked or run here).

    Raises
    ------
    ExecutableFormatError
        Truncated, tampered, foreign or wrong-version data, or code for another CPU.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ExecutableFormatError(f"llvm module: expected bytes, got {type(data).__name__}")
    data = bytes(data)
    if len(data) < _PREFIX.size:
        raise ExecutableFormatError(
            f"llvm module: truncated data ({len(data)} bytes, the prefix alone is {_PREFIX.size})"
        )
    magic, version, header_size = _PREFIX.unpack_from(data)
    if magic != MAGIC:
        raise ExecutableFormatError("llvm module: not relaxvm LLVM kernel data (bad magic)")
    if version != FORMAT_VERSION:
        raise ExecutableFormatError(
            f"llvm module: format version {version}, but this relaxvm reads version "
            f"{FORMAT_VERSION}; rebuild the module"
        )
    start = _PREFIX.size
    if header_size > _MAX_HEADER or start + header_size > len(data):
        raise ExecutableFormatError(
            f"llvm module: truncated data (header of {header_size} bytes announced, "
            f"{len(data) - start} bytes present)"
        )
    try:
        header = json.loads(data[start : start + header_size].decode("utf-8"))
        if not isinstance(header, dict):
            raise ValueError("the header is not an object")
        fields = _fields(header)
    except (ValueError, TypeError, KeyError, UnicodeDecodeError) as err:
        raise ExecutableFormatError(f"llvm module: malformed header: {err}") from None
    obj = data[start + header_size :]
    if len(obj) != fields["object_size"]:
        raise ExecutableFormatError(
            f"llvm module: truncated or padded object code ({len(obj)} bytes, header says "
            f"{fields['object_size']})"
        )
    if hashlib.sha256(obj).hexdigest() != fields["object_sha256"]:
        raise ExecutableFormatError(
            "llvm module: the object code does not match its checksum (corrupted or tampered)"
        )
    if fields["triple"] != jit.process_triple():
        raise ExecutableFormatError(
            f"llvm module: compiled for {fields['triple']!r}, this process is "
            f"{jit.process_triple()!r}"
        )
    check_cpu(fields["cpu"], fields["features"])
    info = jit.TargetInfo(fields["cpu"], fields["features"], tuple(fields["fastmath"]))
    return CompiledObject(obj, fields["kernels"], info)


def _fields(header: dict[str, Any]) -> dict[str, Any]:
    if header.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"format_version {header.get('format_version')!r} in the header")
    out: dict[str, Any] = {}
    for key in ("triple", "cpu", "features", "object_sha256"):
        if not isinstance(header[key], str):
            raise TypeError(f"{key} must be a string")
        out[key] = header[key]
    size = header["object_size"]
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise ValueError("object_size must be a non-negative int")
    out["object_size"] = size
    fastmath = header["fastmath"]
    if not isinstance(fastmath, list) or not all(isinstance(f, str) for f in fastmath):
        raise TypeError("fastmath must be a list of strings")
    out["fastmath"] = fastmath
    kernels = header["kernels"]
    if not isinstance(kernels, list):
        raise TypeError("kernels must be a list")
    signatures = tuple(KernelSignature.from_json(k) for k in kernels)
    if len({s.symbol for s in signatures}) != len(signatures):
        raise ValueError("two kernels share a symbol")
    if len({s.name for s in signatures}) != len(signatures):
        raise ValueError("two kernels share a name")
    out["kernels"] = signatures
    return out
