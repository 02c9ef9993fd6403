"""The on-disk compile cache of the LLVM target.

A build of the same kernels for the same target reuses the object code of an earlier build
instead of running LLVM again. An entry is keyed by the SHA-256 of

* the canonical printed text (``PrimFunc.script()``) and name of every kernel, in order;
* the target: triple, CPU, features, fast-math flags;
* the versions of LLVM, llvmlite and relaxvm, the export format, :data:`CACHE_FORMAT` and a
  fingerprint of this package's code generator sources (so editing the code generator in an
  editable install never serves stale code).

An entry holds the bytes of :func:`relaxvm_llvm.serialize.dumps` (object code + signatures,
data only, validated again on every read) and the optimized LLVM IR, compressed, followed by
a tag: HMAC-SHA256 under the user's key (:mod:`relaxvm.security`, purpose
:data:`TAG_PURPOSE`) of everything before it, key included.

Trust. An entry is native code this process will run, so it is served only when

* the cache directory is a real directory (not a symlink) owned by this user and not
  writable by group or others, and the entry is a regular file (not a symlink) owned by this
  user and not writable by group or others; otherwise a :class:`CacheTrustWarning` is issued
  and the process caches in a private temporary directory instead (or the entry is dropped
  and replaced);
* its tag verifies under the user's key (an entry written by anyone else, or under an older
  key, is stale: dropped and replaced);
* it is for what was asked: the key inside it, and the names and signatures of its kernels,
  match the request.

Environment variables (read at every build):

``RELAXVM_CACHE``
    ``0`` (or ``off``/``false``/``no``) disables the cache.
``RELAXVM_CACHE_DIR``
    The directory (default ``$XDG_CACHE_HOME/relaxvm`` or ``~/.cache/relaxvm``); entries
    live in its ``llvm`` subdirectory, created with mode 0700.
``RELAXVM_CACHE_MAX_MB``
    Size bound in MiB (default 256); least recently used entries are evicted past it.

The cache never makes a build fail: unreadable, truncated, corrupt, stale or foreign entries
are deleted and rebuilt, a directory that cannot be trusted is replaced by a private one for
the process, and one that cannot be written only disables the cache.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
import struct
import threading
import warnings
import zlib
from collections.abc import Sequence
from pathlib import Path

from relaxvm import security
from relaxvm.backend.cache_store import (  # one set of directory rules for every cache
    CacheTrustWarning,
    cache_root,
    is_private_directory,
    lru_entries,
    owner_problem,
    private_directory,
)
from relaxvm.errors import ExecutableFormatError
from relaxvm.ir.tir import PrimFunc

from .cache_entry import (
    CACHE_FORMAT,
    MIN_ENTRY_BYTES,
    TAG_PURPOSE,
    cache_key,
    check_request,
    decode_entry,
    encode_entry,
    expected_signatures,
)
from .codegen import CompiledObject
from .errors import LLVMBuildError

__all__ = [
    "CACHE_FORMAT",
    "TAG_PURPOSE",
    "CacheTrustWarning",
    "CompileCache",
    "cache_key",
    "default_cache",
    "expected_signatures",
    "private_directory",
    "reset_stats",
    "stats",
]

DEFAULT_MAX_MB = 256
_SUFFIX = ".rvmc"
_OFF = ("0", "off", "false", "no")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
# Entries are opened relative to a descriptor of the checked directory (POSIX only).
_SAFE_OPEN = bool(_DIRECTORY and _NOFOLLOW) and os.open in os.supports_dir_fd

_stats_lock = threading.Lock()
_stats = {"hits": 0, "misses": 0, "stores": 0, "evictions": 0, "errors": 0, "refused": 0}


def stats() -> dict[str, int]:
    """Counters of this process: ``hits``, ``misses``, ``stores``, ``evictions``, ``errors``
    (corrupt, stale or foreign entries dropped, failed writes) and ``refused`` (untrusted
    directories and entries, with a :class:`CacheTrustWarning`)."""
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


def _refuse(message: str) -> None:
    _count("refused")
    # stacklevel 4: build() -> get()/put() -> check -> here; points at the caller of build.
    warnings.warn(f"relaxvm compile cache: {message}", CacheTrustWarning, stacklevel=4)


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
    return CompileCache(cache_root() / "llvm", _max_bytes())


#: Where each cache rule lives: relaxvm.backend.cache_store, shared with the module cache.
#: (Module attributes, so tests can patch the owner check of this cache alone.)
_owner_problem = owner_problem


class CompileCache:
    """A directory of compiled kernel modules, one file per key.

    Parameters
    ----------
    directory : path-like
        Where entries live (created with mode 0700 on the first store).
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

    def _open_directory(self, create: bool) -> int | None:
        """A descriptor of the directory once it is known to be this user's alone, or None
        (missing or unusable).

        Entries are then opened relative to the descriptor, so swapping the directory for
        another after the check changes nothing. A directory that could hold someone else's
        entries is refused with a :class:`CacheTrustWarning`, and this cache moves to a
        private directory of this process (:func:`private_directory`) instead.
        """
        fd, problem = self._open_checked(create)
        if problem is None or is_private_directory(self.directory):
            return fd
        private = private_directory(self.directory)
        _refuse(
            f"{self.directory} {problem}; not using it: this process caches its kernels in "
            f"the private directory {private} instead. Make it a directory only you can "
            "write, or set RELAXVM_CACHE_DIR to one"
        )
        self.directory = private
        return self._open_checked(create)[0]

    def _open_checked(self, create: bool) -> tuple[int | None, str | None]:
        """The directory's descriptor (or None), and why it is refused (or None)."""
        if not _SAFE_OPEN:
            return None, None  # no way to open entries relative to a checked directory here
        if create:
            try:
                self.directory.parent.mkdir(parents=True, exist_ok=True)
                self.directory.mkdir(mode=0o700)
            except FileExistsError:
                pass
            except OSError:
                _count("errors")
                return None, None
        try:
            fd = os.open(self.directory, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC)
        except OSError as err:
            if err.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(self.directory):
                return None, "is a symlink"
            if create:
                _count("errors")
            return None, None
        problem = _owner_problem(os.fstat(fd))
        if problem is not None:
            os.close(fd)
            if "writable" in problem:
                problem += f"; run chmod 700 {self.directory} if it is yours"
            return None, problem
        return fd, None

    def get(
        self, key: str, funcs: Sequence[tuple[str, PrimFunc]] | None = None
    ) -> CompiledObject | None:
        """The entry of ``key``, or None.

        None for a missing entry; for an untrusted directory or entry (with a
        :class:`CacheTrustWarning`); and for an entry that is corrupt, stale, not tagged with
        the user's key, or, when ``funcs`` (the request) is given, not for exactly those
        kernels with the signatures they compile to. Bad entries are deleted, so the next
        store replaces them.
        """
        directory = self._open_directory(create=False)
        if directory is None:
            _count("misses")
            return None
        try:
            try:
                data = self._read(directory, key)
            except OSError:  # unreadable (I/O error, removed meanwhile): rebuild
                data = None
            if data is None:
                _count("misses")
                return None
            try:
                compiled = decode_entry(data, key)
                if funcs is not None:
                    check_request(compiled, funcs)
            except security.KeyFileError as err:
                _refuse(f"cannot authenticate entries ({err}); kernels are compiled without it")
                _count("misses")
                return None
            except (ExecutableFormatError, LLVMBuildError, ValueError, zlib.error, struct.error):
                _count("errors")
                _count("misses")
                _unlink(directory, key)
                return None
        finally:
            os.close(directory)
        _count("hits")
        return compiled

    def _read(self, directory: int, key: str) -> bytes | None:
        """The bytes of a trusted entry file, or None (missing, refused or unreadable)."""
        name = f"{key}{_SUFFIX}"
        try:
            # O_NONBLOCK: a FIFO in an entry's place must not hang the build.
            flags = os.O_RDONLY | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0)
            fd = os.open(name, flags, dir_fd=directory)
        except FileNotFoundError:
            return None
        except OSError as err:
            if err.errno == errno.ELOOP:
                _refuse(f"entry {self.directory / name} is a symlink; ignored and replaced")
                _unlink(directory, key)
            return None
        with os.fdopen(fd, "rb") as stream:
            info = os.fstat(fd)
            problem = "is not a regular file" if not stat.S_ISREG(info.st_mode) else None
            problem = problem or _owner_problem(info)
            if problem is not None:
                _refuse(f"entry {self.directory / name} {problem}; ignored and replaced")
                _unlink(directory, key)
                return None
            if info.st_size > max(self.max_bytes, MIN_ENTRY_BYTES):
                _count("errors")  # never stored by put(): not ours
                _unlink(directory, key)
                return None
            data = stream.read()
            try:
                os.utime(fd)  # mark as recently used for eviction
            except (OSError, NotImplementedError):
                pass
        return data

    def put(self, key: str, compiled: CompiledObject) -> bool:
        """Store ``compiled`` under ``key`` atomically; False when it could not be written
        (or the directory is refused, or no key can sign it)."""
        from .serialize import dumps

        try:
            security.user_key()
        except security.KeyFileError as err:
            _refuse(f"cannot sign entries ({err}); kernels are compiled without it")
            return False
        data = encode_entry(key, dumps(compiled), compiled.llvm_ir)
        if len(data) > self.max_bytes:  # also: a bound of 0 stores nothing
            return False
        directory = self._open_directory(create=True)
        if directory is None:
            return False
        temp = f".{key}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
            with os.fdopen(os.open(temp, flags, 0o600, dir_fd=directory), "wb") as stream:
                stream.write(data)
            # Readers see the old entry, no entry or the complete new one, never a partial;
            # a symlink or foreign file in the entry's place is replaced, not followed.
            os.replace(temp, f"{key}{_SUFFIX}", src_dir_fd=directory, dst_dir_fd=directory)
        except OSError:
            _count("errors")
            try:
                os.unlink(temp, dir_fd=directory)
            except OSError:
                pass
            return False
        finally:
            os.close(directory)
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
        return lru_entries(self.directory, _SUFFIX)

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


def _unlink(directory: int, key: str) -> None:
    try:
        os.unlink(f"{key}{_SUFFIX}", dir_fd=directory)
    except OSError:
        pass
