"""TVM's ``tvm.rpc``, in-process only: :class:`LocalSession` (``docs/contrib.md``).

TVM's RPC runs a compiled module on another machine: ``rpc.connect(host, port)`` returns a
session to a ``tvm_rpc`` server, files are uploaded into the server's temp directory, and
modules and devices of that session proxy every call over a socket. relaxvm has no RPC
transport (no server, tracker, proxy or wire protocol). What it does provide is TVM's
``rpc.LocalSession()``: the same session API backed by this process, which code written
against a remote session runs with unchanged, and which TVM uses itself for local testing.

``connect``, ``connect_tracker``, ``Server``, ``Tracker``, ``Proxy``, ``PopenSession`` and
``TrackerSession`` exist so that TVM code imports, and raise :class:`RPCNotSupportedError` when
called.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from .errors import FunctionNotFoundError, RPCNotSupportedError, VMValueError
from .registry import get_global_func
from .runtime import Device
from .runtime import device as _device

__all__ = [
    "LocalSession",
    "PopenSession",
    "Proxy",
    "RPCNotSupportedError",
    "RPCSession",
    "Server",
    "Tracker",
    "TrackerSession",
    "connect",
    "connect_tracker",
]


def _no_transport(name: str) -> NoReturn:
    raise RPCNotSupportedError(
        f"relaxvm.rpc.{name}: relaxvm has no RPC transport (no server, tracker or proxy); "
        "run the module in this process instead, or use relaxvm.rpc.LocalSession(), which "
        "offers the session API (upload, load_module, cpu...) backed by this process"
    )


class RPCSession:
    """The session API of TVM's ``RPCSession``; relaxvm's only session is :class:`LocalSession`.

    Raises
    ------
    RPCNotSupportedError
        When constructed directly (a remote session needs a transport).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _no_transport("RPCSession")


class LocalSession(RPCSession):
    """A session backed by this process, with its own temporary work directory.

    Files uploaded go into that directory (removed with the session, as
    :func:`relaxvm.contrib.utils.tempdir` directories are); modules load through
    :func:`relaxvm.load_module`; devices are this process's devices; functions come from the
    global registry.
    """

    def __init__(self) -> None:
        # Not RPCSession.__init__: that one refuses (it stands for a remote session).
        from .contrib.utils import tempdir

        self._temp = tempdir()

    @property
    def temp(self) -> Any:
        """The session's work directory, a :class:`relaxvm.contrib.utils.TempDirectory`."""
        return self._temp

    def workpath(self, path: str) -> str:
        """The absolute path of ``path`` inside the work directory.

        Parameters
        ----------
        path : str
            A relative path; it may not leave the work directory.

        Returns
        -------
        str

        Raises
        ------
        ValueError
            ``path`` is absolute or climbs out of the work directory.
        """
        root = Path(self._temp.path).resolve()
        if os.path.isabs(path):
            raise VMValueError(f"LocalSession: {path!r} must be relative to the session directory")
        full = (root / path).resolve()
        if full != root and root not in full.parents:
            raise VMValueError(f"LocalSession: {path!r} leaves the session directory")
        return str(full)

    def upload(
        self, data: str | os.PathLike[str] | bytes | bytearray, target: str | None = None
    ) -> None:
        """Copy a local file, or bytes, into the work directory.

        Parameters
        ----------
        data : str, PathLike, bytes or bytearray
            A file to copy, or the content itself.
        target : str, optional
            The name in the work directory; default the file's base name (required for bytes).

        Raises
        ------
        ValueError
            Bytes without ``target``, or a ``target`` outside the work directory.
        """
        if isinstance(data, (bytes, bytearray)):
            if not target:
                raise VMValueError("LocalSession.upload: target must be given when data is bytes")
            blob = bytes(data)
        else:
            blob = Path(data).read_bytes()
            target = target or os.path.basename(os.fspath(data))
        destination = Path(self.workpath(target))
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes(blob)

    def download(self, path: str) -> bytearray:
        """The content of ``path`` in the work directory.

        Raises
        ------
        FileNotFoundError
            No such file.
        """
        return bytearray(Path(self.workpath(path)).read_bytes())

    def remove(self, path: str) -> None:
        """Delete ``path`` (a file, or a directory with its content) from the work directory.

        Raises
        ------
        FileNotFoundError
            No such file.
        """
        full = Path(self.workpath(path))
        if full == Path(self._temp.path).resolve():
            raise VMValueError("LocalSession.remove: cannot remove the session directory itself")
        if full.is_dir():
            import shutil

            shutil.rmtree(full)
        else:
            full.unlink()

    def listdir(self, path: str = ".") -> str:
        """The names in a directory of the work area, in TVM's format: each followed by ``,``.

        Parameters
        ----------
        path : str
            A directory relative to the work directory.

        Returns
        -------
        str
            ``"a.rvm,b.bin,"`` (sorted), ``""`` when empty.
        """
        return "".join(f"{name}," for name in sorted(os.listdir(self.workpath(path))))

    def load_module(self, path: str) -> Any:
        """Load an uploaded executable (:func:`relaxvm.load_module` of its work-directory path).

        Returns
        -------
        Executable
        """
        from . import load_module

        return load_module(self.workpath(path))

    def get_function(self, name: str) -> Callable[..., Any]:
        """The global function ``name`` (TVM looks it up in the session's registry).

        Raises
        ------
        FunctionNotFoundError
            Nobody registered ``name``.
        """
        func = get_global_func(name, allow_missing=True)
        if func is None:
            raise FunctionNotFoundError(f"LocalSession.get_function: no global function {name!r}")
        return func

    def device(self, dev_type: str | int, dev_id: int = 0) -> Device:
        """This process's device (``"cpu"``, ``"cuda"``, ``"llvm"``... or a DLPack type code)."""
        return _device(dev_type, dev_id)

    def cpu(self, dev_id: int = 0) -> Device:
        """The CPU device."""
        return _device("cpu", dev_id)

    def cuda(self, dev_id: int = 0) -> Device:
        """CUDA device ``dev_id``."""
        return _device("cuda", dev_id)

    def __repr__(self) -> str:
        return f"<LocalSession {self._temp.temp_dir!r}>"


def connect(
    url: str, port: int, key: str = "", session_timeout: float = 0, **kwargs: Any
) -> NoReturn:
    """TVM connects to an RPC server here.

    Raises
    ------
    RPCNotSupportedError
        Always: relaxvm has no RPC transport (use :class:`LocalSession`).
    """
    _no_transport("connect")


def connect_tracker(url: str, port: int) -> NoReturn:
    """TVM connects to an RPC tracker here.

    Raises
    ------
    RPCNotSupportedError
        Always: relaxvm has no RPC transport.
    """
    _no_transport("connect_tracker")


class _NoTransport:
    """A TVM RPC class that needs a transport; constructing one raises."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _no_transport(type(self).__name__)


class Server(_NoTransport):
    """TVM's RPC server. Raises :class:`RPCNotSupportedError` when constructed."""


class Tracker(_NoTransport):
    """TVM's RPC tracker. Raises :class:`RPCNotSupportedError` when constructed."""


class Proxy(_NoTransport):
    """TVM's RPC proxy. Raises :class:`RPCNotSupportedError` when constructed."""


class PopenSession(_NoTransport):
    """TVM's session to a ``minrpc`` subprocess. Raises :class:`RPCNotSupportedError`."""


class TrackerSession(_NoTransport):
    """TVM's tracker client. Raises :class:`RPCNotSupportedError` when constructed."""
