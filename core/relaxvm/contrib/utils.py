"""TVM's ``tvm.contrib.utils``: temporary directories, file locks, ``which``.

:func:`tempdir` behaves as TVM's: the directory is removed by :meth:`TempDirectory.remove`, when
the object is garbage-collected, or at interpreter exit, unless it was created with
``keep_for_debug`` (or inside ``TempDirectory.set_keep_for_debug()``), in which case it lives
under ``<system temp>/relaxvm-debug-mode-tempdirs/<timestamp>/NNNNN`` and is never removed.
TVM reads no environment variable for the location and neither does this module: the parent is
Python's :func:`tempfile.gettempdir`, which honours ``TMPDIR``.
"""

from __future__ import annotations

import atexit
import contextlib
import datetime
import os
import pathlib
import shutil
import tempfile
import threading
from collections.abc import Iterator
from types import TracebackType
from typing import IO, Any, ClassVar

from ..errors import VMTypeError, VMValueError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows has no fcntl; locks become no-ops as in TVM
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "DirectoryCreatedPastAtExit",
    "FileLock",
    "TempDirectory",
    "filelock",
    "is_source_path",
    "tempdir",
    "which",
]


class DirectoryCreatedPastAtExit(Exception):
    """A :class:`TempDirectory` was created after the exit hook removed all of them."""


class TempDirectory:
    """A temporary directory, removed when this object goes away (TVM's ``TempDirectory``).

    Parameters
    ----------
    custom_path : str or PathLike, optional
        Create exactly this directory (it must not exist yet) instead of a fresh one under the
        system temp directory. It is removed like any other unless kept.
    keep_for_debug : bool, optional
        Keep the directory after the program ends. ``None`` follows the class-wide setting
        (:meth:`set_keep_for_debug`).
    """

    #: When True, new directories are kept, in a predictable tree (see the module docstring).
    _KEEP_FOR_DEBUG: ClassVar[bool] = False
    _NUM_CREATED: ClassVar[int] = 0
    _LOCK: ClassVar[threading.Lock] = threading.Lock()
    _DEBUG_PARENT_DIR: ClassVar[str | None] = None
    #: Directories to remove at exit; ``None`` once the exit hook has run.
    TEMPDIRS: ClassVar[set[str] | None] = set()

    temp_dir: str | None

    def __init__(
        self, custom_path: str | os.PathLike[str] | None = None, keep_for_debug: bool | None = None
    ) -> None:
        # Set first, so that __del__ of a half-built object finds the attribute.
        self.temp_dir = None
        if TempDirectory.TEMPDIRS is None:
            raise DirectoryCreatedPastAtExit(
                "TempDirectory created after the interpreter's exit hook removed temp directories"
            )
        keep = TempDirectory._KEEP_FOR_DEBUG if keep_for_debug is None else bool(keep_for_debug)
        self._keep = keep
        if custom_path:
            os.mkdir(custom_path)
            path = os.fspath(custom_path)
        elif keep:
            path = os.path.join(self._debug_parent_dir(), f"{self._next_number():05d}")
            os.mkdir(path)
        else:
            path = tempfile.mkdtemp()
        self.temp_dir = path
        if not keep:
            with TempDirectory._LOCK:
                if TempDirectory.TEMPDIRS is not None:
                    TempDirectory.TEMPDIRS.add(path)

    @classmethod
    def _next_number(cls) -> int:
        with cls._LOCK:
            number = TempDirectory._NUM_CREATED
            TempDirectory._NUM_CREATED += 1
        return number

    @classmethod
    def _debug_parent_dir(cls) -> str:
        with cls._LOCK:
            if TempDirectory._DEBUG_PARENT_DIR is None:
                root = os.path.join(tempfile.gettempdir(), "relaxvm-debug-mode-tempdirs")
                os.makedirs(root, exist_ok=True)
                stamp = datetime.datetime.now().strftime("%Y-%m-%dT%H-%M-%S___")
                TempDirectory._DEBUG_PARENT_DIR = tempfile.mkdtemp(prefix=stamp, dir=root)
            return TempDirectory._DEBUG_PARENT_DIR

    @classmethod
    def remove_tempdirs(cls) -> None:
        """Remove every directory not yet removed (the exit hook; later creation then fails)."""
        with cls._LOCK:
            paths = TempDirectory.TEMPDIRS
            TempDirectory.TEMPDIRS = None
        for path in paths or ():
            shutil.rmtree(path, ignore_errors=True)

    @classmethod
    @contextlib.contextmanager
    def set_keep_for_debug(cls, set_to: bool = True) -> Iterator[None]:
        """Keep directories created inside the ``with`` block past program exit.

        Parameters
        ----------
        set_to : bool
            The class-wide setting inside the block.
        """
        old = TempDirectory._KEEP_FOR_DEBUG
        try:
            TempDirectory._KEEP_FOR_DEBUG = set_to
            yield
        finally:
            TempDirectory._KEEP_FOR_DEBUG = old

    @property
    def keep_for_debug(self) -> bool:
        """Whether the directory survives :meth:`remove`, collection and exit."""
        return self._keep

    @property
    def path(self) -> pathlib.Path:
        """The directory as a :class:`pathlib.Path`.

        Raises
        ------
        ValueError
            The directory was removed.
        """
        return pathlib.Path(self._require())

    def _require(self) -> str:
        if self.temp_dir is None:
            raise VMValueError("this TempDirectory was removed")
        return self.temp_dir

    def remove(self) -> None:
        """Delete the directory and its contents (kept directories stay on disk)."""
        path = self.temp_dir
        if path is None:
            return
        if not self._keep:
            shutil.rmtree(path, ignore_errors=True)
            with TempDirectory._LOCK:
                if TempDirectory.TEMPDIRS is not None:
                    TempDirectory.TEMPDIRS.discard(path)
        self.temp_dir = None

    def relpath(self, name: str) -> str:
        """The path of ``name`` inside the directory.

        Parameters
        ----------
        name : str
            A file name (not created).

        Returns
        -------
        str
        """
        return os.path.join(self._require(), name)

    def listdir(self) -> list[str]:
        """The names of the directory's entries.

        Returns
        -------
        list of str
        """
        return os.listdir(self._require())

    def __truediv__(self, other: str | os.PathLike[str]) -> pathlib.Path:
        if not isinstance(other, (str, pathlib.PurePath)):
            raise VMTypeError(f"TempDirectory / operand must be a str or Path, got {other!r}")
        return self.path / other

    def __fspath__(self) -> str:
        return self._require()

    def __enter__(self) -> TempDirectory:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.remove()

    def __del__(self) -> None:
        # After the exit hook everything is gone already (and module globals may be too).
        if TempDirectory.TEMPDIRS is None:
            return
        self.remove()

    def __repr__(self) -> str:
        state = "removed" if self.temp_dir is None else repr(self.temp_dir)
        return f"<TempDirectory {state}{' (kept)' if self._keep else ''}>"


atexit.register(TempDirectory.remove_tempdirs)


def tempdir(
    custom_path: str | os.PathLike[str] | None = None, keep_for_debug: bool | None = None
) -> TempDirectory:
    """Create a temporary directory that is deleted with the returned object.

    Parameters
    ----------
    custom_path : str or PathLike, optional
        The exact directory to create (it must not exist).
    keep_for_debug : bool, optional
        Keep the directory after the program ends; ``None`` follows
        :meth:`TempDirectory.set_keep_for_debug`.

    Returns
    -------
    TempDirectory
        Also a context manager (the directory is removed on exit) and a path-like object.
    """
    return TempDirectory(custom_path, keep_for_debug)


class FileLock:
    """An exclusive ``lockf`` lock on ``path``, held until :meth:`release`.

    Parameters
    ----------
    path : str or PathLike
        The lock file (created if missing).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.lock_file: IO[str] | None = open(path, "w")  # noqa: SIM115 - held until release()
        if fcntl is not None:
            fcntl.lockf(self.lock_file, fcntl.LOCK_EX)

    def release(self) -> None:
        """Release the lock (a second call does nothing)."""
        if self.lock_file is not None:
            if fcntl is not None:
                fcntl.lockf(self.lock_file, fcntl.LOCK_UN)
            self.lock_file.close()
            self.lock_file = None

    def __enter__(self) -> FileLock:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.release()


def filelock(path: str | os.PathLike[str]) -> FileLock:
    """Lock ``path`` exclusively (blocks while another process holds it).

    Parameters
    ----------
    path : str or PathLike
        The lock file.

    Returns
    -------
    FileLock
    """
    return FileLock(path)


def is_source_path(path: str) -> bool:
    """Whether ``path`` looks like a source file path rather than source text.

    Parameters
    ----------
    path : str
        A string that is either a path or source code.

    Returns
    -------
    bool
        True when the file exists, or the string is one line ending in an extension.
    """
    if os.path.exists(path):
        return True
    if "\n" in path:
        return False
    parts = path.rsplit(".", 1)
    return len(parts) == 2 and parts[1].strip() == parts[1]


def which(exec_name: str) -> str | None:
    """The full path of an executable on ``PATH`` (or ``/bin``), or None.

    Parameters
    ----------
    exec_name : str
        The program name.

    Returns
    -------
    str or None
    """
    found = shutil.which(exec_name)
    if found is None:
        candidate = os.path.join("/bin", exec_name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            found = candidate
    return found
