"""The on-disk compile cache of the LLVM target.

A build of the same kernels for the same target reuses the object code of an earlier build
instead of running LLVM again. An entry is keyed by the SHA-256 of

* the canonical printed text (``PrimFunc.script()``) and name of every kernel, in order;
* the target: triple, CPU, features, fast-math flags;
* the versions of LLVM, llvmlite and relaxvm, the export format, :data:`CACHE_FORMAT` and a
  fingerprint of this package's code generator sources (so editing the code generator in an
  editable install never serves stale code).

An entry holds the bytes of :func:`relaxvm_llvm.serialize.dumps` (object code + signatures,
data only, validated again on every read) and the optimized LLVM IR, compressed.

Environment variables (read at every build):

``RELAXVM_CACHE``
    ``0`` (or ``off``/``false``/``no``) disables the cache.
``RELAXVM_CACHE_DIR``
    The directory (default ``$XDG_CACHE_HOME/relaxvm`` or ``~/.cache/relaxvm``).
``RELAXVM_CACHE_MAX_MB``
    Size bound in MiB (default 256); least recently used entries are evicted past it.

The cache never makes a build fail: unreadable, truncated or corrupt entries are deleted and
rebuilt, and a directory that cannot be written only disables storing.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import struct
import threading
import warnings
import zlib
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from relaxvm.errors import ExecutableFormatError
from relaxvm.ir.tir import PrimFunc

from . import jit
from .codegen import CompiledObject

__all__ = [
    "CACHE_FORMAT",
    "CompileCache",
    "cache_key",
    "default_cache",
    "reset_stats",
    "stats",
]

#: Bump when the entry layout or the meaning of a key changes.
CACHE_FORMAT = 1
DEFAULT_MAX_MB = 256
_MAGIC = b"RVMCACHE"
_PREFIX = struct.Struct("<8sIIQQ")  # magic, format, key length, module length, IR length
_SUFFIX = ".rvmc"
_OFF = ("0", "off", "false", "no")

_stats_lock = threading.Lock()
_stats = {"hits": 0, "misses": 0, "stores": 0, "evictions": 0, "errors": 0}


def stats() -> dict[str, int]:
    """Counters of this process: ``hits``, ``misses``, ``stores``, ``evictions``, ``errors``
    (corrupt entries dropped, failed writes)."""
    with _stats_lock:
        return dict(_stats)


def reset_stats() -> None:
    """Zero the counters of :func:`stats`."""
    with _stats_lock:
        for name in _stats:
            _stats[name] = 0


def _count(name: str) -> None:
    with _stats_lock:
        _stats[name] += 1


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


def _default_directory() -> Path:
    explicit = os.environ.get("RELAXVM_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "relaxvm"


def _max_bytes() -> int:
    raw = os.environ.get("RELAXVM_CACHE_MAX_MB")
    if raw is None or raw.strip() == "":
        return DEFAULT_MAX_MB << 20
    try:
        value = float(raw)
        if value < 0:
            raise ValueError
    except ValueError:
        warnings.warn(
            f"RELAXVM_CACHE_MAX_MB={raw!r} is not a non-negative number; using {DEFAULT_MAX_MB}",
            RuntimeWarning,
            stacklevel=3,
        )
        return DEFAULT_MAX_MB << 20
    return int(value * (1 << 20))


def default_cache() -> CompileCache | None:
    """The cache the environment asks for, or None when ``RELAXVM_CACHE`` turns it off."""
    if os.environ.get("RELAXVM_CACHE", "1").strip().lower() in _OFF:
        return None
    return CompileCache(_default_directory() / "llvm", _max_bytes())


class CompileCache:
    """A directory of compiled kernel modules, one file per key.

    Parameters
    ----------
    directory : path-like
        Where entries live (created on the first store).
    max_bytes : int
        Size bound; after a store, least recently used entries (by modification time, which
        a hit refreshes) are deleted until the total fits.
    """

    def __init__(self, directory: str | os.PathLike[str], max_bytes: int) -> None:
        self.directory = Path(directory)
        self.max_bytes = int(max_bytes)

    def path(self, key: str) -> Path:
        """The file of ``key``."""
        return self.directory / f"{key}{_SUFFIX}"

    def get(self, key: str) -> CompiledObject | None:
        """The entry of ``key``, or None (a missing or corrupt entry; corrupt ones are
        deleted)."""
        path = self.path(key)
        try:
            data = path.read_bytes()
        except OSError:
            _count("misses")
            return None
        try:
            compiled = _decode(data, key)
        except (ExecutableFormatError, ValueError, zlib.error, struct.error):
            _count("errors")
            _count("misses")
            self.discard(key)
            return None
        try:
            os.utime(path)  # mark as recently used for eviction
        except OSError:
            pass
        _count("hits")
        return compiled

    def put(self, key: str, compiled: CompiledObject) -> bool:
        """Store ``compiled`` under ``key`` atomically; False when it could not be written."""
        from .serialize import dumps

        data = _encode(key, dumps(compiled), compiled.llvm_ir)
        if len(data) > self.max_bytes:  # also: a bound of 0 stores nothing
            return False
        temp = self.directory / f".{key}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            with open(temp, "wb") as stream:
                stream.write(data)
            # Readers see the old entry, no entry or the complete new one, never a partial.
            os.replace(temp, self.path(key))
        except OSError:
            _count("errors")
            try:
                temp.unlink()
            except OSError:
                pass
            return False
        _count("stores")
        self.evict()
        return True

    def discard(self, key: str) -> None:
        """Delete the entry of ``key`` if present."""
        try:
            self.path(key).unlink()
        except OSError:
            pass

    def entries(self) -> list[tuple[float, int, Path]]:
        """``(mtime, size, path)`` of every entry, least recently used first."""
        found = []
        try:
            with os.scandir(self.directory) as it:
                for entry in it:
                    if not entry.name.endswith(_SUFFIX):
                        continue
                    try:
                        st = entry.stat()
                    except OSError:
                        continue  # removed by another process meanwhile
                    found.append((st.st_mtime, st.st_size, Path(entry.path)))
        except OSError:
            return []
        found.sort()
        return found

    def size(self) -> int:
        """Total bytes of the entries."""
        return sum(size for _, size, _ in self.entries())

    def evict(self) -> int:
        """Delete least recently used entries until the total fits; the number deleted."""
        entries = self.entries()
        total = sum(size for _, size, _ in entries)
        removed = 0
        for _, size, path in entries:
            if total <= self.max_bytes:
                break
            try:
                path.unlink()
                removed += 1
                _count("evictions")
            except OSError:
                pass
            total -= size
        return removed

    def clear(self) -> None:
        """Delete every entry."""
        for _, _, path in self.entries():
            try:
                path.unlink()
            except OSError:
                pass


def _encode(key: str, module: bytes, llvm_ir: str) -> bytes:
    raw_key = key.encode("ascii")
    text = zlib.compress(llvm_ir.encode("utf-8"), 1)
    prefix = _PREFIX.pack(_MAGIC, CACHE_FORMAT, len(raw_key), len(module), len(text))
    return prefix + raw_key + module + text


def _decode(data: bytes, key: str) -> CompiledObject:
    """Parse an entry; raises ValueError (or the serializer's errors) when it is bad."""
    from .serialize import loads

    magic, version, key_size, module_size, text_size = _PREFIX.unpack_from(data)
    if magic != _MAGIC or version != CACHE_FORMAT:
        raise ValueError("not a cache entry of this format")
    start = _PREFIX.size
    if start + key_size + module_size + text_size != len(data):
        raise ValueError("truncated or padded entry")
    if data[start : start + key_size] != key.encode("ascii"):
        raise ValueError("the entry belongs to another key")
    start += key_size
    compiled = loads(data[start : start + module_size])
    llvm_ir = zlib.decompress(data[start + module_size :]).decode("utf-8")
    return CompiledObject(compiled.object_code, compiled.signatures, compiled.info, llvm_ir)
