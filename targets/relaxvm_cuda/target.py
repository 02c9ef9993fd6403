"""The ``cuda`` target kind: build, serialize and load CUDA kernel modules.

Target attributes (``Target("cuda -arch=sm_90 -max_threads_per_block=1024")``), TVM's names:

``arch``
    The ``sm_XY`` the PTX is generated for. Default: ``$RELAXVM_CUDA_ARCH`` if set, else the
    compute capability of device ``$RELAXVM_CUDA_DEVICE`` (0) when a driver and device are
    present, else ``sm_80``. ``mcpu`` is accepted when it equals ``arch``.
``max_num_threads``, ``max_threads_per_block``
    Threads per block the schedules may use (default 1024).
``thread_warp_size``
    Must be 32 (every NVIDIA GPU).
``max_shared_memory_per_block``, ``registers_per_block``, ``l2_cache_size_bytes``
    Positive integers the schedules may consult.
``libs``, ``model``, ``keys``, ``tag``, ``device``
    Accepted and ignored, as descriptive attributes.

Compiling needs no GPU (llvmlite ships the NVPTX backend); only running the kernels does.
Any other attribute, or a malformed value, raises :class:`relaxvm.target.TargetError`.

Host functions (PrimFuncs with ``tir.is_host_func``, such as the shape functions VMShapeLower
writes over the VM's host shape heap) are not GPU kernels: as TVM builds them for the cuda
target's host, they are compiled by the ``llvm`` target and imported by the CUDA module.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from relaxvm import security
from relaxvm.errors import ExecutableFormatError, VMValueError
from relaxvm.target import TargetError

from .module import CUDAModule, check_launch_expr
from .options import TARGET_OPTIONS
from .program import PTXKernel, PTXProgram

__all__ = [
    "ARCH_ENV",
    "DEFAULT_ARCH",
    "DEVICE_ENV",
    "FORMAT_VERSION",
    "MAGIC",
    "READABLE_VERSIONS",
    "TAG_PURPOSE",
    "TARGET_OPTIONS",
    "CUDATargetInfo",
    "build",
    "default_arch",
    "default_attrs",
    "load",
    "parse",
    "serialize",
    "target_info",
]

ARCH_ENV = "RELAXVM_CUDA_ARCH"
DEVICE_ENV = "RELAXVM_CUDA_DEVICE"
MAGIC = b"RVMCUDA\x00"
FORMAT_VERSION = 2
#: Versions :func:`parse` reads (1: PTX only; 2: PTX, TIR and host functions).
READABLE_VERSIONS = (1, 2)
#: What the tag is made for: a tag of any other relaxvm data never verifies CUDA kernels.
TAG_PURPOSE = b"relaxvm-cuda-kernels-v1"
_PREFIX = struct.Struct("<8sII")
_MAX_HEADER = 64 << 20
_MAX_KERNELS = 100_000
#: The architecture compiled for when no driver can be asked (the PTX also runs on newer GPUs).
DEFAULT_ARCH = "sm_80"
_ARCH = re.compile(r"sm_[1-9][0-9]{1,2}[af]?\Z")

_INT_OPTIONS = (
    "max_num_threads",
    "max_threads_per_block",
    "thread_warp_size",
    "max_shared_memory_per_block",
    "registers_per_block",
    "l2_cache_size_bytes",
)


@dataclass(frozen=True)
class CUDATargetInfo:
    """The validated attributes of a ``cuda`` target."""

    arch: str
    max_threads_per_block: int = 1024
    max_shared_memory_per_block: int = 48 * 1024
    thread_warp_size: int = 32


def _check_arch(value: Any, what: str) -> str:
    if not isinstance(value, str) or not _ARCH.match(value):
        raise TargetError(
            f"cuda target: {what} must name a CUDA architecture such as 'sm_80' or 'sm_90a', "
            f"got {value!r}"
        )
    return value


def default_arch() -> str:
    """The ``arch`` of ``Target("cuda")``: ``$RELAXVM_CUDA_ARCH``, else the compute capability
    of device ``$RELAXVM_CUDA_DEVICE`` (default 0) when a driver reports it, else
    :data:`DEFAULT_ARCH`. Never fails for lack of a GPU.

    Raises
    ------
    TargetError
        ``RELAXVM_CUDA_ARCH`` or ``RELAXVM_CUDA_DEVICE`` is malformed.
    """
    forced = os.environ.get(ARCH_ENV, "").strip()
    if forced:
        return _check_arch(forced, f"${ARCH_ENV}")
    text = os.environ.get(DEVICE_ENV, "0").strip() or "0"
    if not text.isdigit():
        raise TargetError(f"cuda target: ${DEVICE_ENV} must be a device ordinal, got {text!r}")
    from .driver import get_driver

    try:
        major, minor = get_driver().compute_capability(int(text))
    except Exception:  # no driver, no such device: compile for the default
        return DEFAULT_ARCH
    return f"sm_{major}{minor}"


def default_attrs() -> dict[str, Any]:
    """What ``Target("cuda")`` has unless given: the architecture (:func:`default_arch`),
    ``max_num_threads=1024`` and ``thread_warp_size=32`` (TVM's defaults)."""
    return {"arch": default_arch(), "max_num_threads": 1024, "thread_warp_size": 32}


def _positive_int(key: str, value: Any) -> int:
    if isinstance(value, bool):
        value = None
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = 0
    if number <= 0:
        raise TargetError(f"cuda target: -{key} must be a positive integer, got {value!r}")
    return number


def target_info(target: Any = None) -> CUDATargetInfo:
    """Validate a ``cuda`` Target (or attribute mapping; None: the defaults).

    Raises
    ------
    TargetError
        An unknown attribute (named, with the accepted ones) or a malformed value.
    """
    attrs: Mapping[str, Any] = default_attrs() if target is None else {}
    if target is not None:
        attrs = getattr(target, "attrs", target)
        if not isinstance(attrs, Mapping):
            raise TargetError(f"cuda target: expected a Target, got {type(target).__name__}")
    unknown = sorted(set(attrs) - set(TARGET_OPTIONS))
    if unknown:
        raise TargetError(
            f"cuda target: unknown attribute(s) {', '.join('-' + k for k in unknown)}; "
            f"accepted: {', '.join('-' + k for k in TARGET_OPTIONS)}"
        )
    arch = attrs.get("arch")
    arch = default_arch() if arch is None else _check_arch(arch, "-arch")
    if "mcpu" in attrs and attrs["mcpu"] != arch:
        # TVM's cuda kind lists -mcpu too; here -arch decides, and a different -mcpu is
        # refused rather than silently ignored.
        raise TargetError(
            f"cuda target: -mcpu={attrs['mcpu']} differs from -arch={arch}; choose the "
            "architecture with -arch"
        )
    numbers = {key: _positive_int(key, attrs[key]) for key in _INT_OPTIONS if key in attrs}
    if numbers.get("thread_warp_size", 32) != 32:
        raise TargetError(
            f"cuda target: -thread_warp_size must be 32, got {numbers['thread_warp_size']}"
        )
    for key in ("max_num_threads", "max_threads_per_block"):
        if numbers.get(key, 0) > 1024:
            raise TargetError(
                f"cuda target: -{key}: at most 1024 threads per block, got {numbers[key]}"
            )
    threads = min(numbers.get("max_num_threads", 1024), numbers.get("max_threads_per_block", 1024))
    return CUDATargetInfo(
        arch=arch,
        max_threads_per_block=threads,
        max_shared_memory_per_block=numbers.get("max_shared_memory_per_block", 48 * 1024),
    )


def build(mod: Any, target: Any = None) -> CUDAModule:
    """Compile every ``tir.PrimFunc`` of ``mod`` (scheduled: loops bound to blocks and
    threads) into PTX kernels. Needs no GPU.

    Parameters
    ----------
    mod : IRModule, mapping of name to PrimFunc, or PrimFunc
    target : Target, optional
        A ``cuda`` target (``-arch`` chooses the architecture).

    Returns
    -------
    CUDAModule
        Kernels by name, launched on the GPU when called with CUDA tensors.

    Raises
    ------
    relaxvm_cuda.errors.CUDABuildError
        A kernel cannot be compiled (naming it).
    relaxvm.target.TargetError
        An unknown target attribute or a malformed value.
    """
    info = target_info(target)
    from relaxvm_llvm.target import named_prim_funcs  # kernels are listed as for the CPU

    from .codegen import compile_ptx  # llvmlite loads only when something is compiled

    funcs = named_prim_funcs(mod)
    host = [(name, func) for name, func in funcs if func.attrs.get("tir.is_host_func")]
    kernels = [(name, func) for name, func in funcs if not func.attrs.get("tir.is_host_func")]
    host_module = _build_host(host) if host else None
    # The TIR stays with the PTX: the simulated device (relaxvm_cuda.simulator) runs it.
    return CUDAModule(compile_ptx(kernels, info.arch), dict(kernels), host=host_module)


def _build_host(funcs: list[tuple[str, Any]]) -> Any:
    """The host functions compiled for the CPU by the ``llvm`` target (this target's host)."""
    from relaxvm_llvm.target import build as build_llvm

    return build_llvm(dict(funcs))


def serialize(module: Any) -> bytes:
    """The bytes :func:`load` turns back into the same module.

    Layout (integers little-endian), format version 2::

        8 bytes   magic b"RVMCUDA\\0"
        u32       format version (FORMAT_VERSION)
        u32       header length H
        H bytes   header: UTF-8 JSON {"arch", "ptx_size", "ptx_sha256", "kernels": [the
                  PTXKernel.to_json() of each kernel: name, symbol, signature, launch,
                  dynamic_shared_bytes], "tir_size", "tir_sha256", "tir_missing",
                  "host_size", "host_sha256"}
        P bytes   the PTX text (UTF-8); P = ptx_size
        T bytes   the kernels' TIR (relaxvm_llvm.tir_data; T = tir_size, 0 when the module
                  has none or it does not encode: "tir_missing" then says why)
        L bytes   the host functions, as the llvm target serializes them (L = host_size,
                  0 when there are none)
        32 bytes  tag: HMAC-SHA256 under the user's key (relaxvm.security, purpose
                  TAG_PURPOSE) of every byte before it

    Version 1 files (no TIR, no host functions) still load.

    Raises
    ------
    TargetError
        ``module`` was not made by this target.
    """
    if not isinstance(module, CUDAModule):
        raise TargetError(
            f"cuda target: can only serialize modules built by the cuda target, got "
            f"{type(module).__name__}"
        )
    program = module.program
    ptx = program.ptx.encode("utf-8")
    tir, missing = _encode_tir(module)
    host = b""
    if module.host is not None:
        from relaxvm_llvm.target import serialize as serialize_llvm

        host = serialize_llvm(module.host)
    header = json.dumps(
        {
            "arch": program.arch,
            "ptx_size": len(ptx),
            "ptx_sha256": hashlib.sha256(ptx).hexdigest(),
            "kernels": [k.to_json() for k in program.kernels],
            "tir_size": len(tir),
            "tir_sha256": hashlib.sha256(tir).hexdigest(),
            "tir_missing": missing,
            "host_size": len(host),
            "host_sha256": hashlib.sha256(host).hexdigest(),
        },
        sort_keys=True,
        separators=(",", ":"),
    ).encode("utf-8")
    body = _PREFIX.pack(MAGIC, FORMAT_VERSION, len(header)) + header + ptx + tir + host
    return body + security.sign(body, purpose=TAG_PURPOSE)


def _encode_tir(module: CUDAModule) -> tuple[bytes, str | None]:
    """The module's TIR in the llvm target's strict codec, or ``b""`` and why not."""
    if module.tir is None:
        return b"", module.tir_missing
    from relaxvm_llvm.tir_data import UnencodableTIR, encode

    try:
        return encode([(k.name, module.tir[k.name]) for k in module.program.kernels]), None
    except UnencodableTIR as err:
        return b"", f"its TIR could not be exported: {err}"


def _corrupt(message: str) -> ExecutableFormatError:
    return ExecutableFormatError(f"cuda module: {message}")


def _take(data: bytes, offset: int, size: int, what: str) -> bytes:
    if size > len(data) - offset:
        raise _corrupt(
            f"truncated: {what} needs {size} bytes at offset {offset}, but only "
            f"{max(len(data) - offset, 0)} remain"
        )
    return data[offset : offset + size]


def _read_header(raw: bytes, offset: int) -> dict[str, Any]:
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise _corrupt(f"the header at offset {offset} is not valid JSON ({err})") from None
    if not isinstance(header, dict):
        raise _corrupt(f"the header at offset {offset} must be a JSON object")
    missing = [k for k in ("arch", "ptx_size", "ptx_sha256", "kernels") if k not in header]
    if missing:
        raise _corrupt(f"header field(s) {missing} missing (header at offset {offset})")
    size = header["ptx_size"]
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise _corrupt(f"header field 'ptx_size' must be a non-negative int, got {size!r}")
    if not isinstance(header["arch"], str) or not _ARCH.match(header["arch"]):
        raise _corrupt(f"header field 'arch' is not a CUDA architecture: {header['arch']!r}")
    if not isinstance(header["kernels"], list) or len(header["kernels"]) > _MAX_KERNELS:
        raise _corrupt(f"header field 'kernels' must be a list of at most {_MAX_KERNELS}")
    return header


def _kernels(header: dict[str, Any], ptx: str) -> tuple[PTXKernel, ...]:
    kernels = []
    names: set[str] = set()
    for index, entry in enumerate(header["kernels"]):
        field = f"kernels[{index}]"
        try:
            kernel = PTXKernel.from_json(entry)
            nvars = len(kernel.signature.var_names)
            for tree in kernel.launch:
                check_launch_expr(tree, nvars)
        except (ValueError, TypeError, KeyError, RecursionError) as err:
            what = f"{type(err).__name__}: {err}" if isinstance(err, KeyError) else str(err)
            raise _corrupt(f"header field {field!r} is malformed: {what}") from None
        if kernel.name in names:
            raise _corrupt(f"header field {field!r}: kernel name {kernel.name!r} repeats")
        if kernel.symbol != kernel.signature.symbol:
            raise _corrupt(
                f"header field {field!r}: symbol {kernel.symbol!r} differs from its "
                f"signature's {kernel.signature.symbol!r}"
            )
        if not re.search(rf"\.entry\s+{re.escape(kernel.symbol)}\s*\(", ptx):
            raise _corrupt(
                f"header field {field!r}: kernel {kernel.name!r} (symbol {kernel.symbol!r}) "
                "is not an .entry of the PTX"
            )
        names.add(kernel.name)
        kernels.append(kernel)
    return tuple(kernels)


@dataclass(frozen=True)
class _Parsed:
    program: PTXProgram
    authentic: bool
    tir: bytes
    tir_missing: str | None
    host: bytes


def parse(data: bytes) -> tuple[PTXProgram, bool]:
    """Validate serialized bytes; the program and whether the user's key signed them.

    Raises
    ------
    ExecutableFormatError
        Naming the offset or header field at fault.
    """
    parsed = _parse(data)
    return parsed.program, parsed.authentic


def _section(data: bytes, header: dict[str, Any], offset: int, name: str, what: str) -> bytes:
    size = header.get(f"{name}_size", 0)
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise _corrupt(f"header field '{name}_size' must be a non-negative int, got {size!r}")
    raw = _take(data, offset, size, what)
    if size and hashlib.sha256(raw).hexdigest() != header.get(f"{name}_sha256"):
        raise _corrupt(f"{what} at offset {offset} does not match header field '{name}_sha256'")
    return raw


def _parse(data: bytes) -> _Parsed:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise _corrupt(f"expected bytes, got {type(data).__name__}")
    data = bytes(data)
    magic, version, header_size = _PREFIX.unpack(_take(data, 0, _PREFIX.size, "the prefix"))
    if magic != MAGIC:
        raise _corrupt(f"bad magic {magic!r} at offset 0 (expected {MAGIC!r}): not CUDA kernels")
    if version not in READABLE_VERSIONS:
        raise _corrupt(
            f"format version {version} at offset 8 is not supported (this relaxvm reads "
            f"versions {', '.join(map(str, READABLE_VERSIONS))})"
        )
    if header_size > _MAX_HEADER:
        raise _corrupt(f"header length {header_size} at offset 12 exceeds {_MAX_HEADER}")
    offset = _PREFIX.size
    header = _read_header(_take(data, offset, header_size, "the header"), offset)
    offset += header_size
    ptx_bytes = _take(data, offset, header["ptx_size"], "the PTX")
    if hashlib.sha256(ptx_bytes).hexdigest() != header["ptx_sha256"]:
        raise _corrupt(f"the PTX at offset {offset} does not match header field 'ptx_sha256'")
    try:
        ptx = ptx_bytes.decode("utf-8")
    except UnicodeDecodeError as err:
        raise _corrupt(f"the PTX at offset {offset + err.start} is not UTF-8 text") from None
    if "\0" in ptx:
        raise _corrupt(f"the PTX at offset {offset + ptx.index(chr(0))} contains a NUL byte")
    offset += len(ptx_bytes)
    tir = host = b""
    missing: str | None = "the file was written by an earlier relaxvm (format version 1)"
    if version >= 2:
        tir = _section(data, header, offset, "tir", "the TIR")
        offset += len(tir)
        host = _section(data, header, offset, "host", "the host functions")
        offset += len(host)
        missing = header.get("tir_missing")
        if not isinstance(missing, str | None):
            raise _corrupt("header field 'tir_missing' must be a string or null")
    tag = _take(data, offset, security.TAG_SIZE, "the tag")
    if len(data) != offset + security.TAG_SIZE:
        raise _corrupt(
            f"{len(data) - offset - security.TAG_SIZE} unexpected bytes after the tag at "
            f"offset {offset + security.TAG_SIZE}"
        )
    program = PTXProgram(ptx, header["arch"], _kernels(header, ptx))
    try:
        authentic = security.verify(data[:offset], tag, purpose=TAG_PURPOSE)
    except security.KeyFileError:
        authentic = False
    return _Parsed(program, authentic, tir, None if tir else missing, host)


def load(data: bytes, target: Any = None, *, trust: bool = False) -> CUDAModule:
    """Reload a serialized module (no GPU needed until a kernel is called).

    PTX is code the GPU runs: it is used only when the file's tag verifies under the user's
    key (the user exported it), or when ``trust``, ``relaxvm.load_module(path, trust=True)``
    or ``RELAXVM_TRUST_OBJECT_CODE=1`` says so (``docs/security.md``). Otherwise the PTX is
    ignored and the kernels are compiled again from the file's TIR, checked for memory
    safety first (:mod:`relaxvm_cuda.untrusted`; the module's ``rebuilt`` is then True). The
    TIR (also what the simulator runs) is decoded by the strict codec of
    ``relaxvm_llvm.tir_data``; the host functions are loaded by the llvm target, trusted with
    the file or else by their own tag.

    Raises
    ------
    relaxvm.errors.ExecutableFormatError
        Truncated, corrupt or foreign data (naming the offset or header field), another
        format version, or an untrusted file whose TIR is missing, does not decode, does not
        compile safely or does not match its header.
    """
    parsed = _parse(data)
    trusted = parsed.authentic or trust or security.object_code_trusted()
    tir = None
    if parsed.tir:
        from relaxvm_llvm.tir_data import decode

        try:
            tir = dict(decode(parsed.tir))
        except ExecutableFormatError as err:
            if trusted:
                raise
            from .untrusted import UNTRUSTED

            raise _corrupt(f"{UNTRUSTED}, and its TIR does not decode: {err}") from None
    program = parsed.program
    if not trusted:  # the PTX is ignored: compiled again from the (checked) TIR
        from .untrusted import rebuild

        program, tir = rebuild(parsed.program, tir, parsed.tir_missing)
    host = None
    if parsed.host:
        from relaxvm_llvm.target import load as load_llvm

        # Inside this file's verified tag when trusted; else the llvm target decides by the
        # host functions' own tag (rebuilding them from their TIR when it does not verify).
        host = load_llvm(parsed.host, trust=trusted)
    try:
        module = CUDAModule(program, tir, host=host, tir_missing=parsed.tir_missing)
    except VMValueError as err:
        raise _corrupt(f"the TIR does not match the kernels: {err}") from None
    module.rebuilt = not trusted
    return module
