"""The byte format of compiled LLVM kernel modules (what ``export_library`` stores).

Layout (integers little-endian), format version 3 (2 when there is one object file)::

    8 bytes   magic b"RVMLLVM\\0"
    u32       format version (FORMAT_VERSION)
    u32       header length H
    H bytes   header: UTF-8 JSON (target triple, CPU, features, fast-math flags, LLVM
              version, object size and SHA-256, the size of each object file in
              version 3, TIR size, kernel signatures); data only
    T bytes   the kernels' TIR as strict JSON (:mod:`relaxvm_llvm.tir_data`); T = tir_size,
              0 when the kernels could not be encoded
    O bytes   the ELF object files emitted by LLVM, one after another; O = object_size
    32 bytes  tag: HMAC-SHA256 under the user's key (:mod:`relaxvm.security`, purpose
              :data:`TAG_PURPOSE`) of every byte before it

:func:`loads` validates everything (magic, version, sizes, header fields, symbol names, a
strict pattern for CPU and feature strings, the triple, the CPU's features) before anything
reaches LLVM, and says whether the tag verifies. Whether the object code is then used or the
kernels are rebuilt from the TIR is :func:`relaxvm_llvm.target.load`'s decision; see
``docs/security.md``. Any failure raises :class:`relaxvm.errors.ExecutableFormatError`.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
import warnings
from dataclasses import dataclass
from typing import Any

import llvmlite.binding as llvm

from relaxvm import security
from relaxvm.errors import ExecutableFormatError

from . import jit
from .codegen import CompiledObject
from .signature import KernelSignature

__all__ = [
    "FORMAT_VERSION",
    "MAGIC",
    "TAG_PURPOSE",
    "LoadedData",
    "check_cpu",
    "check_target_strings",
    "dumps",
    "loads",
    "read",
]

MAGIC = b"RVMLLVM\x00"
#: The version written for more than one object file (a large build's per-kernel objects).
FORMAT_VERSION = 3
#: The version written for one object file, readable by relaxvm releases before version 3.
SINGLE_OBJECT_VERSION = 2
#: What the tag is made for: a tag of any other relaxvm data never verifies a kernel library.
TAG_PURPOSE = b"relaxvm-llvm-kernels-v2"
_PREFIX = struct.Struct("<8sII")
_TAG = security.TAG_SIZE
_MAX_HEADER = 64 << 20
_MAX_KERNELS = 100_000
#: Longest schedule description a header may carry.
MAX_SCHEDULE_TEXT = 512

# Everything that reaches LLVM's target machine is held to these patterns first: LLVM aborts
# the process on some malformed strings (a feature without +/-), and a name is all it needs.
_CPU = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}\Z")
_FEATURE = re.compile(r"[+\-][A-Za-z0-9][A-Za-z0-9_.\-]{0,63}\Z")
_TRIPLE = re.compile(r"[A-Za-z0-9_.\-]{1,128}\Z")
_SYMBOL = re.compile(r"__rvm_[A-Za-z0-9_]{1,512}\Z")
_FASTMATH = frozenset(("reassoc", "contract", "nsz", "arcp", "afn", "nnan", "ninf"))

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


@dataclass(frozen=True)
class LoadedData:
    """What :func:`loads` found: validated kernels, their TIR and whether the tag verified.

    Attributes
    ----------
    compiled : CompiledObject
        Object code, signatures and target description (validated, not yet linked).
    tir : bytes
        The kernels' TIR (empty when the file carries none).
    authentic : bool
        The tag verifies under this user's key: the object code is what a compiler this
        user trusts produced.
    schedule : str
        The schedule choice recorded at build time (``CpuConfig.describe()``; empty when the
        file has none): text for ``relaxvm inspect``, never used to build anything.
    """

    compiled: CompiledObject
    tir: bytes
    authentic: bool
    schedule: str = ""


def dumps(compiled: CompiledObject, tir: bytes = b"", schedule: str = "") -> bytes:
    """Serialize compiled kernels and their TIR, tagged with the user's key; ``schedule``
    (optional, printable, at most :data:`MAX_SCHEDULE_TEXT` characters) is stored in the
    header for ``relaxvm inspect``.

    Without a usable key (:class:`relaxvm.security.KeyFileError`) the tag is left blank with
    a warning: the file still loads, by rebuilding its kernels from the TIR.
    """
    info = compiled.info
    object_code = b"".join(compiled.objects)
    version = FORMAT_VERSION if len(compiled.objects) > 1 else SINGLE_OBJECT_VERSION
    header = {
        "format_version": version,
        "triple": info.triple,
        "cpu": info.cpu,
        "features": info.features,
        "fastmath": list(info.fastmath),
        "llvm_version": ".".join(map(str, llvm.llvm_version_info)),
        "object_size": len(object_code),
        "object_sha256": hashlib.sha256(object_code).hexdigest(),
        "tir_size": len(tir),
        "kernels": [s.to_json() for s in compiled.signatures],
    }
    if version == FORMAT_VERSION:
        header["object_sizes"] = [len(obj) for obj in compiled.objects]
    if schedule:  # optional: readers that predate it ignore the key
        header["schedule"] = schedule[:MAX_SCHEDULE_TEXT]
    raw = json.dumps(header, sort_keys=True).encode("utf-8")
    body = b"".join((_PREFIX.pack(MAGIC, version, len(raw)), raw, tir, object_code))
    try:
        tag = security.sign(body, purpose=TAG_PURPOSE)
    except security.KeyFileError as err:
        warnings.warn(
            f"relaxvm: kernels exported without a tag ({err}); loading them will rebuild the "
            "kernels from their TIR",
            RuntimeWarning,
            stacklevel=2,
        )
        tag = bytes(_TAG)
    return body + tag


def check_target_strings(triple: str, cpu: str, features: str) -> None:
    """Refuse triple, CPU and feature strings outside the strict patterns LLVM may see.

    Raises
    ------
    ExecutableFormatError
        Naming the offending string.
    """
    if not _TRIPLE.match(triple):
        raise ExecutableFormatError(f"llvm module: malformed target triple {triple[:80]!r}")
    if not _CPU.match(cpu):
        raise ExecutableFormatError(f"llvm module: malformed CPU name {cpu[:80]!r}")
    if features:
        entries = features.split(",")
        if len(entries) > 4096:
            raise ExecutableFormatError("llvm module: too many CPU features")
        for entry in entries:
            if not _FEATURE.match(entry):
                raise ExecutableFormatError(
                    f"llvm module: malformed CPU feature {entry[:80]!r} (each feature is "
                    "+name or -name)"
                )


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
    """Parse and validate serialized kernels, and check that this host has every CPU
    feature their object code needs; whether their tag verifies is not checked here (see
    :func:`read`, which says so). No code is linked or run.

    Raises
    ------
    ExecutableFormatError
        As :func:`read`, or code built for a CPU whose features this host lacks.
    """
    compiled = read(data, authenticate=False).compiled
    check_cpu(compiled.info.cpu, compiled.info.features)
    return compiled


def read(data: bytes, *, authenticate: bool = True) -> LoadedData:
    """Parse and validate serialized kernels and check their tag (no code is linked or run).

    The CPU and features are checked against strict patterns, not against this host:
    :func:`check_cpu` is for callers about to link the object code.

    Raises
    ------
    ExecutableFormatError
        Truncated, corrupted, foreign or wrong-version data, or strings LLVM must not see.
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
    if version not in (SINGLE_OBJECT_VERSION, FORMAT_VERSION):
        hint = (
            " (version 1 files carry no TIR and no tag, so their object code cannot be "
            "trusted; export the model again)"
            if version == 1
            else ""
        )
        raise ExecutableFormatError(
            f"llvm module: format version {version}, but this relaxvm reads versions "
            f"{SINGLE_OBJECT_VERSION} and {FORMAT_VERSION}; rebuild the module{hint}"
        )
    start = _PREFIX.size
    if header_size > _MAX_HEADER or start + header_size + _TAG > len(data):
        raise ExecutableFormatError(
            f"llvm module: truncated data (header of {header_size} bytes announced, "
            f"{len(data) - start} bytes present)"
        )
    try:
        header = json.loads(data[start : start + header_size].decode("utf-8"))
        if not isinstance(header, dict):
            raise ValueError("the header is not an object")
        fields = _fields(header, version)
    except RecursionError:
        raise ExecutableFormatError("llvm module: malformed header: nested too deeply") from None
    except (ValueError, TypeError, KeyError, UnicodeDecodeError) as err:
        raise ExecutableFormatError(f"llvm module: malformed header: {err}") from None
    tir_start = start + header_size
    obj_start = tir_start + fields["tir_size"]
    body_end = len(data) - _TAG
    if obj_start + fields["object_size"] != body_end:
        raise ExecutableFormatError(
            f"llvm module: truncated or padded data ({body_end - tir_start} bytes of TIR and "
            f"object code, header says {fields['tir_size']} + {fields['object_size']})"
        )
    obj = data[obj_start:body_end]
    if hashlib.sha256(obj).hexdigest() != fields["object_sha256"]:
        raise ExecutableFormatError(
            "llvm module: the object code does not match its checksum (corrupted or tampered)"
        )
    check_target_strings(fields["triple"], fields["cpu"], fields["features"])
    if fields["triple"] != jit.process_triple():
        raise ExecutableFormatError(
            f"llvm module: compiled for {fields['triple']!r}, this process is "
            f"{jit.process_triple()!r}"
        )
    authentic = False
    if authenticate:
        try:
            authentic = security.verify(data[:body_end], data[body_end:], purpose=TAG_PURPOSE)
        except security.KeyFileError:
            pass  # no usable key: nothing verifies, the kernels are rebuilt
    info = jit.TargetInfo(fields["cpu"], fields["features"], tuple(fields["fastmath"]))
    objects, start = [], 0
    for size in fields["object_sizes"]:
        objects.append(obj[start : start + size])
        start += size
    compiled = CompiledObject(tuple(objects), fields["kernels"], info)
    return LoadedData(compiled, data[tir_start:obj_start], authentic, fields["schedule"])


def _object_sizes(header: dict[str, Any], version: int, total: int) -> list[int]:
    """The sizes of the object files: ``object_sizes`` in version 3, one file before."""
    if version == SINGLE_OBJECT_VERSION:
        if "object_sizes" in header:
            raise ValueError(f"object_sizes in a version {version} header")
        return [total] if total else []
    sizes = header["object_sizes"]
    if not isinstance(sizes, list) or not 1 < len(sizes) <= _MAX_KERNELS:
        raise TypeError(f"object_sizes must be a list of 2 to {_MAX_KERNELS} sizes")
    for size in sizes:
        if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
            raise ValueError("object_sizes must be positive ints")
    if sum(sizes) != total:
        raise ValueError(f"object_sizes add up to {sum(sizes)}, object_size is {total}")
    return sizes


def _size(header: dict[str, Any], key: str) -> int:
    size = header[key]
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise ValueError(f"{key} must be a non-negative int")
    return size


def _fields(header: dict[str, Any], version: int) -> dict[str, Any]:
    if header.get("format_version") != version:
        raise ValueError(f"format_version {header.get('format_version')!r} in the header")
    out: dict[str, Any] = {}
    for key in ("triple", "cpu", "features", "object_sha256"):
        if not isinstance(header[key], str):
            raise TypeError(f"{key} must be a string")
        out[key] = header[key]
    out["object_size"] = _size(header, "object_size")
    out["object_sizes"] = _object_sizes(header, version, out["object_size"])
    out["tir_size"] = _size(header, "tir_size")
    fastmath = header["fastmath"]
    if not isinstance(fastmath, list) or not all(f in _FASTMATH for f in fastmath):
        raise TypeError(f"fastmath must be a list of {sorted(_FASTMATH)}")
    out["fastmath"] = fastmath
    kernels = header["kernels"]
    if not isinstance(kernels, list) or len(kernels) > _MAX_KERNELS:
        raise TypeError(f"kernels must be a list of at most {_MAX_KERNELS}")
    signatures = tuple(KernelSignature.from_json(k) for k in kernels)
    for s in signatures:
        if not _SYMBOL.match(s.symbol):
            raise ValueError(f"kernel {s.name[:80]!r}: malformed symbol {s.symbol[:80]!r}")
    if len({s.symbol for s in signatures}) != len(signatures):
        raise ValueError("two kernels share a symbol")
    if len({s.name for s in signatures}) != len(signatures):
        raise ValueError("two kernels share a name")
    out["kernels"] = signatures
    schedule = header.get("schedule", "")
    if not isinstance(schedule, str) or len(schedule) > MAX_SCHEDULE_TEXT:
        raise TypeError(f"schedule must be a string of at most {MAX_SCHEDULE_TEXT} characters")
    if not schedule.isprintable():
        raise ValueError("schedule must be printable text")
    out["schedule"] = schedule
    return out
