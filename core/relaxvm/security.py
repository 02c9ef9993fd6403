"""The user's key: what makes native code in a file or cache entry trustworthy.

A file is data. Native code found in one (an exported executable's object code, a compile
cache entry) runs only when an HMAC-SHA256 tag made with a key the *user* holds verifies over
it; anything else is rebuilt from data or refused. See ``docs/security.md``.

The key comes from, in order:

1. ``RELAXVM_KEY``: at least 32 hexadecimal digits (16 bytes), for CI and shared setups;
2. the key file ``$XDG_CONFIG_HOME/relaxvm/key`` (default ``~/.config/relaxvm/key``), created
   with 32 random bytes and mode 0600 on first use. A key file that another user owns, that
   group or others may read or write, or that is a symlink, is refused: whoever can read it
   can sign code this user will run.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from .errors import RelaxVMError

__all__ = [
    "KEY_ENV",
    "TAG_SIZE",
    "TRUST_ENV",
    "KeyFileError",
    "key_path",
    "object_code_trusted",
    "sign",
    "trusting_object_code",
    "user_key",
    "verify",
]

KEY_ENV = "RELAXVM_KEY"
#: Set to 1 to run the object code of every file loaded, signed or not: what ``dlopen`` of a
#: ``.so`` does. Only for files from a source as trusted as your own compiler.
TRUST_ENV = "RELAXVM_TRUST_OBJECT_CODE"
#: Bytes in a tag (HMAC-SHA256).
TAG_SIZE = 32
_KEY_BYTES = 32
_MIN_ENV_KEY_BYTES = 16

_lock = threading.Lock()
_trusting: ContextVar[bool] = ContextVar("relaxvm_trusting_object_code", default=False)
_cached: tuple[str, bytes] | None = None


class KeyFileError(RelaxVMError, PermissionError):
    """The user's key cannot be read or created safely (the message says why and where)."""


def key_path() -> Path:
    """Where the key file lives (whether or not it exists yet)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "relaxvm" / "key"


def _from_env(text: str) -> bytes:
    try:
        key = bytes.fromhex(text.strip())
    except ValueError:
        raise KeyFileError(
            f"{KEY_ENV} must be hexadecimal digits (at least {2 * _MIN_ENV_KEY_BYTES}); "
            "e.g. python -c 'import secrets; print(secrets.token_hex(32))'"
        ) from None
    if len(key) < _MIN_ENV_KEY_BYTES:
        raise KeyFileError(
            f"{KEY_ENV} is {len(key)} bytes; a key needs at least {_MIN_ENV_KEY_BYTES} "
            f"({2 * _MIN_ENV_KEY_BYTES} hexadecimal digits)"
        )
    return key


def _check_key_file(path: Path, info: os.stat_result) -> None:
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode):
        raise KeyFileError(f"relaxvm key {path}: not a regular file (symlinks are refused)")
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise KeyFileError(
            f"relaxvm key {path}: owned by uid {info.st_uid}, not by this user; remove it or "
            f"set {KEY_ENV}"
        )
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise KeyFileError(
            f"relaxvm key {path}: mode {stat.S_IMODE(info.st_mode):o} lets other users read or "
            f"write it; run chmod 600 {path} (or delete it: a new key is made, and files signed "
            "with the old one are rebuilt from their kernels' TIR)"
        )


def _from_file(path: Path) -> bytes:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return _create(path)
    _check_key_file(path, info)
    key = path.read_bytes()
    if len(key) < _MIN_ENV_KEY_BYTES:
        raise KeyFileError(f"relaxvm key {path}: {len(key)} bytes is too short; delete it")
    return key


def _create(path: Path) -> bytes:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = secrets.token_bytes(_KEY_BYTES)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:  # another process made it first: use theirs
        return _from_file(path)
    with os.fdopen(fd, "wb") as handle:
        handle.write(key)
    return key


def user_key() -> bytes:
    """The user's key (see the module docstring), created on first use.

    Raises
    ------
    KeyFileError
        ``RELAXVM_KEY`` is malformed, or the key file is unsafe or unreadable.
    """
    global _cached
    env = os.environ.get(KEY_ENV)
    source = f"env:{env}" if env else f"file:{key_path()}"
    with _lock:
        if _cached is not None and _cached[0] == source:
            return _cached[1]
        key = _from_env(env) if env else _from_file(key_path())
        _cached = (source, key)
        return key


def sign(data: bytes, *, purpose: bytes) -> bytes:
    """The tag of ``data`` under the user's key, for one ``purpose`` (say ``b"llvm-export"``),
    so that a tag made for one kind of data never verifies another."""
    return hmac.new(user_key(), purpose + b"\x00" + data, hashlib.sha256).digest()


def verify(data: bytes, tag: bytes, *, purpose: bytes) -> bool:
    """Whether ``tag`` is :func:`sign`'s tag of ``data`` for ``purpose`` (constant time)."""
    if len(tag) != TAG_SIZE:
        return False
    return hmac.compare_digest(sign(data, purpose=purpose), tag)


@contextmanager
def trusting_object_code() -> Iterator[None]:
    """Within the block (this thread or task only), loads run the object code of the files
    they read even when its tag does not verify, like ``dlopen`` of a ``.so``.

    ``relaxvm.load_module(path, trust=True)`` uses it; a target kind's ``load`` asks
    :func:`object_code_trusted`. Never use it for files from someone you would not let run a
    program as you.
    """
    token = _trusting.set(True)
    try:
        yield
    finally:
        _trusting.reset(token)


def object_code_trusted() -> bool:
    """Whether a load may run object code whose tag does not verify: inside
    :func:`trusting_object_code`, or with ``RELAXVM_TRUST_OBJECT_CODE=1``."""
    if _trusting.get():
        return True
    return os.environ.get(TRUST_ENV, "").strip().lower() in ("1", "true", "yes")
