"""What a compile cache entry is: its key, its bytes and its checks (:mod:`.cache` stores them).

An entry is keyed by the SHA-256 of the kernels' printed TIR and names, the target, and the
versions of everything that makes the code (:func:`cache_key`). It holds the serialized object
code and signatures (:func:`relaxvm_llvm.serialize.dumps`) and the optimized LLVM IR,
followed by an HMAC-SHA256 tag under the user's key (:mod:`relaxvm.security`, purpose
:data:`TAG_PURPOSE`), and is served only for exactly the kernels asked for
(:func:`check_request`).
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from relaxvm import security
from relaxvm.ir.tir import PrimFunc

from . import jit
from .codegen import CompiledObject
from .signature import KernelSignature, assign_symbols, signature_of

__all__ = [
    "CACHE_FORMAT",
    "MIN_ENTRY_BYTES",
    "TAG_PURPOSE",
    "cache_key",
    "check_request",
    "decode_entry",
    "encode_entry",
    "expected_signatures",
]

#: Bump when the entry layout or the meaning of a key changes.
CACHE_FORMAT = 2
#: What an entry's tag is made for (a tag of an export never verifies a cache entry).
TAG_PURPOSE = b"relaxvm-llvm-cache-v1"
_MAGIC = b"RVMCACHE"
_PREFIX = struct.Struct("<8sIIQQ")  # magic, format, key length, module length, IR length
_TAG = security.TAG_SIZE
#: The size of an entry with empty contents.
MIN_ENTRY_BYTES = _PREFIX.size + _TAG


@cache
def _source_fingerprint() -> str:
    """Hash of the code generator's sources (schedules change the TIR, which is keyed)."""
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


@cache
def _versions() -> str:
    import llvmlite
    import llvmlite.binding as llvm

    import relaxvm

    from .serialize import FORMAT_VERSION

    return "|".join(
        [
            f"cache={CACHE_FORMAT}",
            f"format={FORMAT_VERSION}",
            f"relaxvm={relaxvm.__version__}",
            f"llvmlite={llvmlite.__version__}",
            "llvm=" + ".".join(map(str, llvm.llvm_version_info)),
            f"codegen={_source_fingerprint()}",
        ]
    )


def cache_key(funcs: Sequence[tuple[str, PrimFunc]], info: jit.TargetInfo) -> str:
    """The hex SHA-256 identifying a build of ``funcs`` for ``info``."""
    digest = hashlib.sha256()
    target = f"{info.triple}|{info.cpu}|{info.features}|{','.join(info.fastmath)}"
    digest.update(f"{_versions()}\n{target}\n".encode())
    for name, func in funcs:
        text = func.script().encode()
        # Length-prefixed so that no two different kernel lists hash the same text.
        digest.update(f"{len(name)}:{name}:{len(text)}:".encode())
        digest.update(text)
    return digest.hexdigest()


def expected_signatures(funcs: Sequence[tuple[str, PrimFunc]]) -> tuple[KernelSignature, ...]:
    """The signatures a build of ``funcs`` produces, without compiling anything (the symbols
    are chosen as :func:`relaxvm_llvm.codegen.compile_prim_funcs` chooses them).

    Raises
    ------
    LLVMBuildError
        A kernel's signature cannot be derived (the build would fail the same way).
    """
    funcs = list(funcs)
    symbols = assign_symbols([name for name, _ in funcs])
    return tuple(
        signature_of(func, name, symbol)[0]
        for (name, func), symbol in zip(funcs, symbols, strict=True)
    )


def encode_entry(key: str, module: bytes, llvm_ir: str) -> bytes:
    raw_key = key.encode("ascii")
    text = zlib.compress(llvm_ir.encode("utf-8"), 1)
    prefix = _PREFIX.pack(_MAGIC, CACHE_FORMAT, len(raw_key), len(module), len(text))
    body = b"".join((prefix, raw_key, module, text))
    return body + security.sign(body, purpose=TAG_PURPOSE)


def decode_entry(data: bytes, key: str) -> CompiledObject:
    """Parse an entry; raises ValueError (or the serializer's errors) when it is bad, and
    KeyFileError when the user's key is unavailable."""
    from .serialize import loads

    magic, version, key_size, module_size, text_size = _PREFIX.unpack_from(data)
    if magic != _MAGIC or version != CACHE_FORMAT:
        raise ValueError("not a cache entry of this format")
    body = data[:-_TAG]
    if len(data) < _PREFIX.size + _TAG or not security.verify(
        body, data[-_TAG:], purpose=TAG_PURPOSE
    ):
        # Written by someone else, under another key, or damaged: never served.
        raise ValueError("the entry's tag does not verify under the user's key")
    start = _PREFIX.size
    if start + key_size + module_size + text_size != len(body):
        raise ValueError("truncated or padded entry")
    if body[start : start + key_size] != key.encode("ascii"):
        raise ValueError("the entry belongs to another key")
    start += key_size
    compiled = loads(body[start : start + module_size])
    llvm_ir = zlib.decompress(body[start + module_size :]).decode("utf-8")
    return CompiledObject(compiled.objects, compiled.signatures, compiled.info, llvm_ir)


def check_request(compiled: CompiledObject, funcs: Sequence[tuple[str, PrimFunc]]) -> None:
    """Raise ValueError unless ``compiled`` holds exactly the kernels ``funcs`` compile to."""
    names = [name for name, _ in funcs]
    if [s.name for s in compiled.signatures] != names:
        raise ValueError("the entry holds other kernels than the ones asked for")
    if compiled.signatures != expected_signatures(funcs):
        raise ValueError("the entry's kernel signatures differ from the request's")
