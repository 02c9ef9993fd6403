"""A directory of cache entries that only this user can have written.

The rules of the LLVM kernel cache (``relaxvm_llvm.cache``), for caches kept by core (the
whole-module cache, :mod:`relaxvm.backend.module_cache`): the directory must be a real
directory (not a symlink) owned by this user and not writable by group or others, else a
:class:`CacheTrustWarning` is issued and the process caches in a private temporary
directory instead; each entry must be a regular file with the same owner and mode, else it
is dropped; entries are opened relative to the checked directory's descriptor without
following symlinks, written to a temporary file and renamed (readers see the old entry, none
or the complete new one, whatever other processes write), and the least recently used are
evicted past a size bound. A directory that cannot be created or written only turns the
cache off. ``RELAXVM_CACHE_DIR``, ``RELAXVM_CACHE`` and ``RELAXVM_CACHE_MAX_MB`` mean what
they mean for the kernel cache.
"""

from __future__ import annotations

import atexit
import errno
import os
import secrets
import shutil
import stat
import tempfile
import threading
import warnings
from contextvars import ContextVar
from pathlib import Path

__all__ = [
    "CacheStore",
    "CacheTrustWarning",
    "cache_root",
    "default_store",
    "for_cache_entry",
    "is_private_directory",
    "lru_entries",
    "owner_problem",
    "private_directory",
]

#: True while a cache of core writes or reads an executable for its own entries (the
#: whole-module cache): a target kind's ``serialize`` may then skip work meant for exported
#: files, and its ``load`` should refuse (``ExecutableFormatError``) kernels it would have to
#: rebuild rather than link, so that such an entry is dropped and the module compiled again.
for_cache_entry: ContextVar[bool] = ContextVar("relaxvm_for_cache_entry", default=False)

_OFF = ("0", "off", "false", "no")
_lock = threading.Lock()


class CacheTrustWarning(RuntimeWarning):
    """A compile cache refused a directory or entry that someone else could have written (a
    symlink, another owner, group or world write access), or could not authenticate
    entries; compiling goes on without it. The message says what and how to fix it."""


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
# Entries are opened relative to a descriptor of the checked directory (POSIX only).
_SAFE_OPEN = bool(_DIRECTORY and _NOFOLLOW) and os.open in os.supports_dir_fd
_SUFFIX = ".rvmm"
_DEFAULT_MAX_MB = 256
_private: dict[Path, Path] = {}


def cache_root() -> Path:
    """``RELAXVM_CACHE_DIR``, else ``$XDG_CACHE_HOME/relaxvm`` or ``~/.cache/relaxvm``: the
    directory the LLVM kernel cache uses too."""
    explicit = os.environ.get("RELAXVM_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "relaxvm"


def _max_bytes() -> int:
    try:
        value = float(os.environ.get("RELAXVM_CACHE_MAX_MB") or _DEFAULT_MAX_MB)
    except ValueError:
        value = _DEFAULT_MAX_MB  # the kernel cache warns about it
    return int(max(value, 0) * (1 << 20))


def default_store(name: str) -> CacheStore | None:
    """The store in subdirectory ``name`` of :func:`cache_root`, or None when
    ``RELAXVM_CACHE`` turns caching off."""
    if os.environ.get("RELAXVM_CACHE", "1").strip().lower() in _OFF or not _SAFE_OPEN:
        return None
    return CacheStore(cache_root() / name, _max_bytes())


def owner_problem(info: os.stat_result) -> str | None:
    """Why a file or directory with this status could hold someone else's bytes (another
    owner, group or world write access), or None; the rule of every relaxvm cache."""
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return f"is owned by uid {info.st_uid}, not by this user (uid {os.getuid()})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"is writable by group or others (mode {stat.S_IMODE(info.st_mode):o})"
    return None


def private_directory(refused: Path) -> Path:
    """Where this process caches instead of the refused directory ``refused`` (same last
    component): made by :func:`tempfile.mkdtemp` (mode 0700, a name nobody could prepare in
    advance), deleted when the process exits. Later compiles of this process hit it; other
    processes compile once each until the configured directory is fixed."""
    with _lock:
        found = _private.get(refused)
        if found is None or not found.parent.is_dir():
            root = Path(tempfile.mkdtemp(prefix="relaxvm-cache-"))
            atexit.register(shutil.rmtree, root, True)
            found = _private[refused] = root / refused.name
        return found


def is_private_directory(directory: Path) -> bool:
    """Whether ``directory`` is one :func:`private_directory` made (already a fallback)."""
    with _lock:
        return directory in _private.values()


def _refuse(message: str) -> None:
    warnings.warn(f"relaxvm module cache: {message}", CacheTrustWarning, stacklevel=5)


class CacheStore:
    """A directory of byte entries, one file per key, this user's alone.

    The rules are the LLVM kernel cache's (``relaxvm_llvm.cache``): the directory must be a
    real directory owned by this user and not writable by group or others (else a
    :class:`CacheTrustWarning`, and the process uses a private temporary directory), and so
    must each entry file (else it is dropped); entries are opened relative to the checked
    directory without following symlinks, written to a temporary file and renamed, and the
    least recently used are evicted past ``max_bytes``.
    """

    def __init__(self, directory: str | os.PathLike[str], max_bytes: int) -> None:
        self.directory = Path(directory)
        self.max_bytes = int(max_bytes)

    def _open(self, create: bool) -> int | None:
        fd, problem = self._open_checked(create)
        if problem is None or is_private_directory(self.directory):
            return fd
        private = private_directory(self.directory)
        _refuse(
            f"{self.directory} {problem}; not using it: this process caches in the private "
            f"directory {private} instead. Make it a directory only you can write, or set "
            "RELAXVM_CACHE_DIR to one"
        )
        self.directory = private
        return self._open_checked(create)[0]

    def _open_checked(self, create: bool) -> tuple[int | None, str | None]:
        if create:
            try:
                self.directory.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                self.directory.mkdir(mode=0o700, exist_ok=True)
            except OSError:
                return None, None  # unwritable: no cache, the compile goes on
        try:
            fd = os.open(self.directory, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC)
        except OSError as err:
            if err.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(self.directory):
                return None, "is a symlink"
            return None, None
        problem = owner_problem(os.fstat(fd))
        if problem is not None:
            os.close(fd)
            return None, problem
        return fd, None

    def read(self, key: str) -> bytes | None:
        """The bytes of the trusted entry ``key``, or None (missing, refused, unreadable)."""
        directory = self._open(create=False)
        if directory is None:
            return None
        name = key + _SUFFIX
        try:
            flags = os.O_RDONLY | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0)
            fd = os.open(name, flags, dir_fd=directory)
        except OSError as err:
            if err.errno == errno.ELOOP:
                _refuse(f"entry {self.directory / name} is a symlink; ignored and replaced")
                self._unlink(directory, name)
            os.close(directory)
            return None
        try:
            with os.fdopen(fd, "rb") as stream:
                info = os.fstat(fd)
                problem = None if stat.S_ISREG(info.st_mode) else "is not a regular file"
                problem = problem or owner_problem(info)
                if problem is not None:
                    _refuse(f"entry {self.directory / name} {problem}; ignored and replaced")
                    self._unlink(directory, name)
                    return None
                if info.st_size > self.max_bytes:  # never written by write(): not ours
                    self._unlink(directory, name)
                    return None
                data = stream.read()
                try:
                    os.utime(fd)  # recently used, for eviction
                except (OSError, NotImplementedError):
                    pass
                return data
        except OSError:
            return None
        finally:
            os.close(directory)

    def write(self, key: str, *chunks: bytes) -> bool:
        """Store the concatenation of ``chunks`` as ``key`` atomically (written one after the
        other: no copy of a large payload); False when it cannot be written."""
        if sum(map(len, chunks)) > self.max_bytes:
            return False
        directory = self._open(create=True)
        if directory is None:
            return False
        temp = f".{key}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
            with os.fdopen(os.open(temp, flags, 0o600, dir_fd=directory), "wb") as stream:
                for chunk in chunks:
                    stream.write(chunk)
            # Readers see the old entry, none or the whole new one; a symlink or foreign file
            # in the entry's place is replaced, not followed.
            os.replace(temp, key + _SUFFIX, src_dir_fd=directory, dst_dir_fd=directory)
        except OSError:
            self._unlink(directory, temp)
            return False
        finally:
            os.close(directory)
        self.evict()
        return True

    def discard(self, key: str) -> None:
        """Delete the entry ``key`` if present."""
        directory = self._open(create=False)
        if directory is not None:
            self._unlink(directory, key + _SUFFIX)
            os.close(directory)

    @staticmethod
    def _unlink(directory: int, name: str) -> None:
        try:
            os.unlink(name, dir_fd=directory)
        except OSError:
            pass

    def entries(self) -> list[tuple[float, int, Path]]:
        """``(mtime, size, path)`` of every entry, least recently used first."""
        return lru_entries(self.directory, _SUFFIX)

    def evict(self) -> None:
        """Delete least recently used entries until the total fits ``max_bytes``."""
        entries = self.entries()
        total = sum(size for _, size, _ in entries)
        for _, size, path in entries:
            if total <= self.max_bytes:
                break
            try:
                path.unlink()
            except OSError:
                pass
            total -= size


def lru_entries(directory: Path, suffix: str) -> list[tuple[float, int, Path]]:
    """``(mtime, size, path)`` of the files of ``directory`` named ``*suffix``, least recently
    used first (symlinks are not followed; an unreadable directory has none). Shared by every
    relaxvm cache for its LRU eviction."""
    found = []
    try:
        with os.scandir(directory) as it:
            for entry in it:
                if not entry.name.endswith(suffix):
                    continue
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue  # removed by another process meanwhile
                found.append((info.st_mtime, info.st_size, Path(entry.path)))
    except OSError:
        return []
    found.sort()
    return found
