"""TVM's ``tvm.contrib.popen_pool``: run functions in separate, fresh processes.

TVM starts ``python -m tvm.exec.popen_worker`` and talks to it over two pipes; relaxvm starts
its worker with :mod:`multiprocessing`'s ``spawn`` context (a fresh interpreter that inherits
nothing of the parent's state, which is why TVM uses Popen rather than fork) and talks over a
:class:`multiprocessing.connection.Connection`. Work is serialized with ``cloudpickle`` when it
is installed, so closures and lambdas work as in TVM; without it, plain :mod:`pickle` is used,
and the function must be importable by name (a module-level function).

A timeout is measured inside the worker around the call, as in TVM: when it expires the worker
reports it and the parent kills the process and raises :class:`TimeoutError`; a worker that
dies raises :class:`ChildProcessError`. Both restart the process lazily on the next ``send``.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import pickle
import threading
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from enum import IntEnum
from typing import Any, NamedTuple

from ..errors import VMValueError

__all__ = ["MapResult", "PopenPoolExecutor", "PopenWorker", "StatusKind"]


class StatusKind(IntEnum):
    """The state of a task's result."""

    RUNNING = 0
    COMPLETE = 1
    EXCEPTION = 2
    TIMEOUT = 3


class MapResult(NamedTuple):
    """One result of :meth:`PopenPoolExecutor.map_with_error_catching`.

    Attributes
    ----------
    status : StatusKind
        COMPLETE, EXCEPTION or TIMEOUT.
    value : Any
        The return value, or the exception.
    """

    status: StatusKind
    value: Any


def _dumps(obj: Any) -> bytes:
    try:
        import cloudpickle
    except ImportError:
        return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return bytes(cloudpickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))


def _run_with_timeout(
    fn: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any], timeout: float | None
) -> tuple[StatusKind, Any]:
    outcome: list[tuple[StatusKind, Any]] = []

    def target() -> None:
        try:
            outcome.append((StatusKind.COMPLETE, fn(*args, **kwargs)))
        except BaseException as exc:  # every failure goes back to the parent
            outcome.append((StatusKind.EXCEPTION, exc))

    if timeout is None:
        target()
    else:
        # A daemon thread: the call cannot be interrupted, but the parent kills this process
        # once it hears TIMEOUT, which ends the thread too.
        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        thread.join(timeout)
        if thread.is_alive():
            return StatusKind.TIMEOUT, None
    return outcome[0]


def _encode_result(status: StatusKind, value: Any) -> bytes:
    try:
        return _dumps((status, value))
    except Exception:  # an unpicklable result or exception still reports
        if status == StatusKind.EXCEPTION:
            text = "".join(traceback.format_exception(value))
            error: BaseException = RuntimeError(f"the worker raised an unpicklable error:\n{text}")
        else:
            error = TypeError(f"the worker's result cannot be pickled: {type(value).__name__}")
        return _dumps((StatusKind.EXCEPTION, error))


def _worker_main(conn: Any, initializer: bytes | None) -> None:
    """The worker process: run the initializer, then one task per message until EOF."""
    if initializer is not None:
        init_fn, init_args = pickle.loads(initializer)
        if init_fn is not None:
            init_fn(*init_args)
    while True:
        try:
            message = conn.recv_bytes()
        except (EOFError, OSError):
            return
        try:
            fn, args, kwargs, timeout = pickle.loads(message)
        except Exception as exc:  # e.g. a function this process cannot import
            conn.send_bytes(_encode_result(StatusKind.EXCEPTION, exc))
            continue
        status, value = _run_with_timeout(fn, args, kwargs, timeout)
        conn.send_bytes(_encode_result(status, value))
        if status == StatusKind.TIMEOUT:
            os._exit(0)  # the stuck thread cannot be stopped; the parent starts a new process


class PopenWorker:
    """One worker process, started on the first :meth:`send` (TVM's ``PopenWorker``).

    Parameters
    ----------
    initializer : callable, optional
        Run once in each new process before its first task.
    initargs : sequence
        ``initializer``'s arguments.
    maximum_uses : int, optional
        Restart the process after this many tasks (fresh state for the next one).
    """

    def __init__(
        self,
        initializer: Callable[..., Any] | None = None,
        initargs: Sequence[Any] = (),
        maximum_uses: int | None = None,
    ) -> None:
        if maximum_uses is not None and maximum_uses < 1:
            raise VMValueError(f"maximum_uses must be a positive int or None, got {maximum_uses}")
        self._initializer = initializer
        self._initargs = tuple(initargs)
        self._maximum_uses = maximum_uses
        self._uses = 0
        self._proc: Any = None
        self._conn: Any = None

    def _start(self) -> None:
        if self._proc is not None:
            return
        context = multiprocessing.get_context("spawn")
        parent_conn, child_conn = context.Pipe(duplex=True)
        init = _dumps((self._initializer, self._initargs)) if self._initializer else None
        proc = context.Process(target=_worker_main, args=(child_conn, init), daemon=True)
        proc.start()
        child_conn.close()  # the parent keeps only its own end, so EOF means the worker died
        self._proc, self._conn, self._uses = proc, parent_conn, 0

    def kill(self) -> None:
        """Stop the process now (the next :meth:`send` starts a new one)."""
        conn, proc = self._conn, self._proc
        self._conn = self._proc = None
        if conn is not None:
            conn.close()
        if proc is not None:
            if proc.is_alive():
                proc.kill()
            proc.join(5)
            proc.close()

    def join(self, timeout: float | None = None) -> None:
        """Wait at most ``timeout`` seconds for the process to end."""
        if self._proc is not None:
            self._proc.join(timeout)

    def is_alive(self) -> bool:
        """Whether the worker process is running."""
        return self._proc is not None and self._proc.is_alive()

    def send(
        self,
        fn: Callable[..., Any],
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> None:
        """Start ``fn(*args, **kwargs)`` in the worker; call :meth:`recv` for its result.

        Parameters
        ----------
        fn : callable
            The function (importable by name unless ``cloudpickle`` is installed).
        args : sequence
            Positional arguments.
        kwargs : mapping, optional
            Keyword arguments.
        timeout : float, optional
            Seconds the call may run in the worker.

        Raises
        ------
        pickle.PicklingError, AttributeError, TypeError
            The task cannot be serialized (a local function without ``cloudpickle``).
        """
        payload = _dumps((fn, tuple(args), dict(kwargs or {}), timeout))
        if self._maximum_uses is not None and self._uses >= self._maximum_uses:
            self.kill()
        self._start()
        self._uses += 1
        try:
            self._conn.send_bytes(payload)
        except OSError:
            pass  # the worker is gone: recv() reports it as ChildProcessError

    def recv(self) -> Any:
        """The result of the last :meth:`send`.

        Raises
        ------
        ChildProcessError
            The worker process ended abnormally (or nothing was sent).
        TimeoutError
            The call ran longer than its timeout.
        Exception
            Whatever the function raised.
        """
        if self._conn is None:
            raise ChildProcessError("PopenWorker.recv: no task was sent to a running worker")
        try:
            status, value = pickle.loads(self._conn.recv_bytes())
        except (EOFError, OSError) as exc:
            self.kill()
            raise ChildProcessError("the worker process terminated") from exc
        if status == StatusKind.COMPLETE:
            return value
        if status == StatusKind.EXCEPTION:
            raise value
        self.kill()
        raise TimeoutError(f"the task ran longer than its timeout in worker {self!r}")

    def __del__(self) -> None:
        try:
            self.kill()
        except Exception:  # at interpreter exit anything may be gone
            pass

    def __repr__(self) -> str:
        pid = self._proc.pid if self._proc is not None else None
        return f"<PopenWorker pid={pid}>"


class PopenPoolExecutor:
    """A pool of :class:`PopenWorker` processes (TVM's ``PopenPoolExecutor``).

    Parameters
    ----------
    max_workers : int, optional
        Number of worker processes (default ``os.cpu_count()``).
    timeout : float, optional
        Seconds each task may run.
    initializer : callable, optional
        Run once in each new process.
    initargs : sequence
        ``initializer``'s arguments.
    maximum_process_uses : int, optional
        Restart a process after this many tasks.
    """

    def __init__(
        self,
        max_workers: int | None = None,
        timeout: float | None = None,
        initializer: Callable[..., Any] | None = None,
        initargs: Sequence[Any] = (),
        maximum_process_uses: int | None = None,
    ) -> None:
        workers = max_workers if max_workers is not None else (os.cpu_count() or 1)
        # Each thread of this pool drives one worker process (blocking on its pipe).
        self._threadpool = concurrent.futures.ThreadPoolExecutor(max_workers=workers)
        self._timeout = timeout
        self._initializer = initializer
        self._initargs = tuple(initargs)
        self._maximum_uses = maximum_process_uses
        self._workers: dict[int, PopenWorker] = {}
        self._lock = threading.Lock()

    def _worker_run(
        self, fn: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any] | None
    ) -> Any:
        with self._lock:
            worker = self._workers.get(threading.get_ident())
            if worker is None:
                worker = PopenWorker(self._initializer, self._initargs, self._maximum_uses)
                self._workers[threading.get_ident()] = worker
        worker.send(fn, args, kwargs, self._timeout)
        return worker.recv()

    def _worker_run_catching(self, fn: Callable[..., Any], arg: Any) -> MapResult:
        try:
            return MapResult(StatusKind.COMPLETE, self._worker_run(fn, (arg,), None))
        except TimeoutError as exc:
            return MapResult(StatusKind.TIMEOUT, exc)
        except Exception as exc:  # returned to the caller, as TVM does
            return MapResult(StatusKind.EXCEPTION, exc)

    def submit(
        self, fn: Callable[..., Any], *args: Any, **kwargs: Any
    ) -> concurrent.futures.Future:
        """Run ``fn(*args, **kwargs)`` in a worker process.

        Returns
        -------
        concurrent.futures.Future
            Its result, or the exception (``TimeoutError``, ``ChildProcessError``, the
            function's own).
        """
        return self._threadpool.submit(self._worker_run, fn, args, kwargs)

    def map_with_error_catching(
        self, fn: Callable[..., Any], iterator: Iterable[Any]
    ) -> Iterator[MapResult]:
        """``map(fn, iterator)`` in the workers, each failure returned instead of raised.

        Returns
        -------
        iterator of MapResult
            In input order.
        """
        return self._threadpool.map(lambda arg: self._worker_run_catching(fn, arg), iterator)

    def shutdown(self) -> None:
        """Wait for running tasks, then stop every worker process."""
        self._threadpool.shutdown(wait=True)
        with self._lock:
            workers = list(self._workers.values())
            self._workers.clear()
        for worker in workers:
            worker.kill()

    def __enter__(self) -> PopenPoolExecutor:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.shutdown()

    def __del__(self) -> None:
        try:
            with self._lock:
                workers = list(self._workers.values())
            for worker in workers:
                worker.kill()
            self._threadpool.shutdown(wait=False)
        except Exception:  # at interpreter exit anything may be gone
            pass
