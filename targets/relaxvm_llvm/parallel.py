"""The parallel runtime: a persistent thread pool that runs outlined parallel loop bodies.

Generated code calls ``relaxvm_llvm_parallel_launch(fn, closure, extent)`` (registered with
``llvm.add_symbol``) only when more than one thread is configured and the loop's estimated
work reaches the cutoff; otherwise it runs the loop itself. The launcher splits
``[0, extent)`` into one contiguous chunk per thread, hands all but the first to the pool's
workers and runs the first on the calling thread.

Two pools implement the launcher:

* ``"native"`` (the default on Linux x86-64/AArch64): :mod:`.native_pool`, pthread workers
  written in LLVM IR that spin briefly, then sleep on a futex. A launch never enters Python
  (a few microseconds instead of tens);
* ``"python"``: daemon Python threads fed through queues; each chunk is a ctypes call of
  the range function, which releases the GIL. The native launcher forwards to it when this
  backend is selected, so the choice can change at any time.

``RELAXVM_PARALLEL_BACKEND`` (``native`` or ``python``) or :func:`set_parallel_backend`
chooses. Rules of the Python pool:

* the callback never lets an exception escape into native code: it stores the exception
  (thread-local) and returns -1, and the kernel returns that code to its Python wrapper,
  which re-raises;
* one launch at a time: a second launch while the pool is busy (another Python thread, or a
  re-entrant call) runs its loop serially instead of waiting, so nothing can deadlock;
* after ``fork()`` the child starts with a fresh pool.

Both pools never wait for a busy pool (a concurrent launch runs serially) and restart from
scratch in a forked child.

**Adaptive parallelism** (on by default): a parallel launch must never be slower than running
the loop on the calling thread, whatever else runs on the machine. A helper that waits for a
core (numpy's OpenBLAS threads spin for about 0.1 s after every BLAS call; another busy
process; a second VM in another Python thread) would hold the launch up for a whole scheduler
time slice. So each launch first reads how many threads are runnable on the machine
(``/proc/loadavg``; about a microsecond) and wakes no more helpers than there are idle CPUs;
with none idle, the calling thread runs the loop alone. The native pool also never waits for
a helper that has not claimed work yet, and after a launch that did wait on a helper which lost
its core mid-chunk, runs launches serially for a growing back-off (see :mod:`.native_pool`;
:func:`parallel_stalls` counts them). Where ``/proc/loadavg``
cannot be read, every core counts as idle.

Environment: ``RELAXVM_NUM_THREADS`` (threads per parallel loop, default: the CPUs this process
may run on), ``RELAXVM_PARALLEL_CUTOFF`` (work units below which loops run serially),
``RELAXVM_PARALLEL_BACKEND`` and ``RELAXVM_PARALLEL_ADAPTIVE`` (``0`` turns the idle-CPU check
off: helpers are always woken).
"""

from __future__ import annotations

import ctypes
import os
import queue
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import llvmlite.binding as llvm

from .codegen_parallel import LAUNCH_SYMBOL, NUM_THREADS_SYMBOL, PARALLEL_CUTOFF_SYMBOL

__all__ = [
    "BACKENDS",
    "DEFAULT_PARALLEL_CUTOFF",
    "always_parallel",
    "get_num_threads",
    "get_parallel_adaptive",
    "get_parallel_backend",
    "get_parallel_cutoff",
    "idle_cpus",
    "native_workers",
    "parallel_stalls",
    "pool_stats",
    "set_num_threads",
    "set_parallel_adaptive",
    "set_parallel_backend",
    "set_parallel_cutoff",
    "take_last_error",
]

#: Default work estimate (element operations) below which a parallel loop runs serially. A
#: native launch costs a few microseconds, never waits for a helper that has not started, and
#: wakes helpers only for idle CPUs, so loops from about a quarter of a million element
#: operations (an add of 256K floats: ~60-150 us on one core) gain: measured 1.6-1.7x on two
#: idle cores, and within a few percent of serial while numpy's BLAS threads spin.
DEFAULT_PARALLEL_CUTOFF = 1 << 18
BACKENDS = ("native", "python")
#: Process symbols of the native pool's link to the Python one.
PYTHON_FLAG_SYMBOL = "relaxvm_llvm_parallel_use_python"
PYTHON_LAUNCH_SYMBOL = "relaxvm_llvm_parallel_python_launch"
ADAPTIVE_SYMBOL = "relaxvm_llvm_parallel_adaptive"
ONLINE_CPUS_SYMBOL = "relaxvm_llvm_online_cpus"

LAUNCH_TYPE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
RANGE_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)

# Read by generated code through llvm.add_symbol: they must live as long as the process.
_num_threads = ctypes.c_int64(1)
_cutoff = ctypes.c_int64(DEFAULT_PARALLEL_CUTOFF)
_use_python = ctypes.c_int64(0)
_adaptive = ctypes.c_int64(1)
_online_cpus = ctypes.c_int64(1)
_native: Any = None  # native_pool.NativePool, when built
_range_fns: dict[int, Any] = {}
_local = threading.local()
_state_lock = threading.Lock()
_symbols_ready = False
_pool: _Pool | None = None


def _default_threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


_LOADAVG = "/proc/loadavg"
_loadavg_fd: int | None = None  # opened on first use; -1 when it cannot be read


def _python_idle_cpus() -> int:
    """The Python pool's reading of idle CPUs (the native pool has its own, in LLVM IR)."""
    global _loadavg_fd
    unknown = 1 << 30
    if _loadavg_fd is None:
        try:
            _loadavg_fd = os.open(_LOADAVG, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            _loadavg_fd = -1
    if _loadavg_fd < 0:
        return unknown
    try:
        running = int(os.pread(_loadavg_fd, 64, 0).split()[3].split(b"/")[0])
    except (OSError, ValueError, IndexError):
        return unknown
    # The Python pool's workers block on queues: only the caller is runnable among ours.
    return max(0, int(_online_cpus.value) - 1 - max(0, running - 1))


def _env_int(name: str, default: int, minimum: int) -> int:
    text = os.environ.get(name)
    if text is None or not text.strip():
        return default
    try:
        value = int(text)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        warnings.warn(
            f"{name}={text!r} is not an integer >= {minimum}; using {default}",
            RuntimeWarning,
            stacklevel=3,
        )
        return default
    return value


class _Pool:
    """``size - 1`` daemon workers; the launching thread does the first chunk itself."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.busy = threading.Lock()
        self.done: queue.SimpleQueue[BaseException | None] = queue.SimpleQueue()
        self.queues: list[queue.SimpleQueue[Any]] = []
        for k in range(size - 1):
            tasks: queue.SimpleQueue[Any] = queue.SimpleQueue()
            worker = threading.Thread(
                target=self._work, args=(tasks,), name=f"relaxvm-llvm-{k + 1}", daemon=True
            )
            worker.start()
            self.queues.append(tasks)

    def _work(self, tasks: queue.SimpleQueue[Any]) -> None:
        while True:
            task = tasks.get()
            if task is None:
                return
            fn, begin, end, closure = task
            try:
                fn(begin, end, closure)
            except BaseException as err:  # reported to the launcher, never lost
                self.done.put(err)
            else:
                self.done.put(None)

    def run(self, fn: Any, closure: int, extent: int) -> None:
        if extent <= 0:
            return
        if not self.busy.acquire(blocking=False):
            fn(0, extent, closure)  # pool in use: run serially rather than wait
            return
        try:
            chunks = min(self.size, extent)
            if _adaptive.value and chunks > 1:
                chunks = min(chunks, 1 + _python_idle_cpus())
            bounds = [extent * k // chunks for k in range(chunks + 1)]
            for k in range(1, chunks):
                self.queues[k - 1].put((fn, bounds[k], bounds[k + 1], closure))
            error: BaseException | None = None
            try:
                fn(bounds[0], bounds[1], closure)
            except BaseException as err:
                error = err
            for _ in range(chunks - 1):
                result = self.done.get()
                if result is not None and error is None:
                    error = result
            if error is not None:
                raise error
        finally:
            self.busy.release()

    def stop(self) -> None:
        for tasks in self.queues:
            tasks.put(None)


def _get_pool() -> _Pool:
    global _pool
    pool = _pool
    if pool is None or pool.size != _num_threads.value:
        with _state_lock:
            if _pool is None or _pool.size != _num_threads.value:
                if _pool is not None:
                    _pool.stop()
                _pool = _Pool(max(1, int(_num_threads.value)))
            pool = _pool
    return pool


def _launch(fn_address: int, closure: int, extent: int) -> int:
    try:
        fn = _range_fns.get(fn_address)
        if fn is None:
            fn = _range_fns.setdefault(fn_address, RANGE_TYPE(fn_address))
        _get_pool().run(fn, closure or 0, int(extent))
        return 0
    except BaseException as err:  # must not propagate into native code
        _local.error = err
        return -1


_launch_callback = LAUNCH_TYPE(_launch)


def take_last_error() -> BaseException | None:
    """The exception a parallel launch on this thread stored, cleared on reading."""
    error = getattr(_local, "error", None)
    _local.error = None
    return error


def ensure_symbols() -> None:
    """Register the runtime symbols generated code refers to (idempotent)."""
    global _symbols_ready, _native
    if _symbols_ready:
        return
    from .jit import LLVM_LOCK

    # Lock order LLVM_LOCK, then _state_lock: the native pool is compiled under LLVM_LOCK, and a
    # thread that already holds it (a build that loads its object) may call this.
    with LLVM_LOCK, _state_lock:
        if _symbols_ready:
            return
        _num_threads.value = _env_int("RELAXVM_NUM_THREADS", _default_threads(), 1)
        _cutoff.value = _env_int("RELAXVM_PARALLEL_CUTOFF", DEFAULT_PARALLEL_CUTOFF, 0)
        _adaptive.value = _env_int("RELAXVM_PARALLEL_ADAPTIVE", 1, 0)
        _online_cpus.value = max(1, os.cpu_count() or 1)
        python_address = ctypes.cast(_launch_callback, ctypes.c_void_p).value
        llvm.add_symbol(ADAPTIVE_SYMBOL, ctypes.addressof(_adaptive))
        llvm.add_symbol(ONLINE_CPUS_SYMBOL, ctypes.addressof(_online_cpus))
        llvm.add_symbol(NUM_THREADS_SYMBOL, ctypes.addressof(_num_threads))
        llvm.add_symbol(PARALLEL_CUTOFF_SYMBOL, ctypes.addressof(_cutoff))
        llvm.add_symbol(PYTHON_FLAG_SYMBOL, ctypes.addressof(_use_python))
        llvm.add_symbol(PYTHON_LAUNCH_SYMBOL, python_address)
        wanted = os.environ.get("RELAXVM_PARALLEL_BACKEND", "native").strip().lower() or "native"
        if wanted not in BACKENDS:
            warnings.warn(
                f"RELAXVM_PARALLEL_BACKEND={wanted!r} is not one of {BACKENDS}; using 'native'",
                RuntimeWarning,
                stacklevel=2,
            )
            wanted = "native"
        try:
            from .native_pool import PoolSymbols, build_native_pool

            _native = build_native_pool(
                PoolSymbols(
                    python_flag=PYTHON_FLAG_SYMBOL,
                    python_launch=PYTHON_LAUNCH_SYMBOL,
                    num_threads=NUM_THREADS_SYMBOL,
                    adaptive=ADAPTIVE_SYMBOL,
                    online_cpus=ONLINE_CPUS_SYMBOL,
                )
            )
        except Exception as err:  # an LLVM problem must not take parallel loops away
            warnings.warn(
                f"relaxvm_llvm: the native thread pool failed to build ({err}); "
                "using the Python pool",
                RuntimeWarning,
                stacklevel=2,
            )
            _native = None
        if _native is not None:
            # Never free the pool's machine code: its idle workers sleep inside it until the
            # process ends (interpreter shutdown would otherwise dispose of the engine).
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(_native))
        if _native is None:
            llvm.add_symbol(LAUNCH_SYMBOL, python_address)
        else:
            llvm.add_symbol(LAUNCH_SYMBOL, _native.launch_address)
        _use_python.value = 1 if _native is None or wanted == "python" else 0
        _symbols_ready = True


def get_num_threads() -> int:
    """Threads used per parallel loop (``RELAXVM_NUM_THREADS``, default: usable CPUs)."""
    ensure_symbols()
    return int(_num_threads.value)


def set_num_threads(count: int) -> None:
    """Use ``count`` threads per parallel loop from now on (1 disables parallelism).

    Raises
    ------
    ValueError
        ``count`` is not a positive int.
    """
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"set_num_threads: count must be a positive int, got {count!r}")
    ensure_symbols()
    _num_threads.value = count


def get_parallel_cutoff() -> int:
    """The estimated work (element operations) below which parallel loops run serially."""
    ensure_symbols()
    return int(_cutoff.value)


def set_parallel_cutoff(work: int) -> None:
    """Set the serial cutoff (0: always dispatch parallel loops to the pool).

    Raises
    ------
    ValueError
        ``work`` is not a non-negative int.
    """
    if isinstance(work, bool) or not isinstance(work, int) or work < 0:
        raise ValueError(f"set_parallel_cutoff: work must be an int >= 0, got {work!r}")
    ensure_symbols()
    _cutoff.value = work


def get_parallel_backend() -> str:
    """The pool parallel loops run on: ``"native"`` or ``"python"``."""
    ensure_symbols()
    return "python" if _use_python.value else "native"


def set_parallel_backend(name: str) -> None:
    """Run parallel loops on the ``"native"`` or the ``"python"`` pool from now on.

    Raises
    ------
    ValueError
        ``name`` is not a backend, or ``"native"`` is not available on this platform.
    """
    if name not in BACKENDS:
        raise ValueError(f"set_parallel_backend: name must be one of {BACKENDS}, got {name!r}")
    ensure_symbols()
    if name == "native" and _native is None:
        raise ValueError("set_parallel_backend: the native pool is not available here")
    _use_python.value = 1 if name == "python" else 0


def get_parallel_adaptive() -> bool:
    """Whether launches wake helpers only for idle CPUs (``RELAXVM_PARALLEL_ADAPTIVE``)."""
    ensure_symbols()
    return bool(_adaptive.value)


def set_parallel_adaptive(enabled: bool) -> None:
    """Turn the idle-CPU check of parallel launches on (the default) or off.

    Off, every launch wakes ``get_num_threads() - 1`` helpers even when the other cores are
    busy, and may then wait a scheduler time slice for one of them (tests that must exercise
    the pool use this; programs should not need to).

    Raises
    ------
    TypeError
        ``enabled`` is not a bool.
    """
    if not isinstance(enabled, bool):
        raise TypeError(f"set_parallel_adaptive: enabled must be a bool, got {enabled!r}")
    ensure_symbols()
    _adaptive.value = 1 if enabled else 0


@contextmanager
def always_parallel(threads: int = 2) -> Iterator[None]:
    """Within the block, every parallel loop runs on the pool: at least ``threads`` threads,
    no serial cutoff, helpers woken even when the other cores are busy (for tests that must
    exercise the parallel code paths whatever the machine's load). Restores the settings on
    exit."""
    saved = (get_num_threads(), get_parallel_cutoff(), get_parallel_adaptive())
    set_num_threads(max(threads, saved[0]))
    set_parallel_cutoff(0)
    set_parallel_adaptive(False)
    try:
        yield
    finally:
        set_num_threads(saved[0])
        set_parallel_cutoff(saved[1])
        set_parallel_adaptive(saved[2])


def idle_cpus() -> int:
    """CPUs with nothing runnable on them right now besides the calling thread, as the next
    adaptive launch would see it (a large number when ``/proc/loadavg`` cannot be read)."""
    ensure_symbols()
    if _native is not None and not _use_python.value:
        return int(_native.idle_cpus())
    return _python_idle_cpus()


def parallel_stalls() -> int:
    """Launches of the native pool in which a helper lost its core mid-chunk (each one
    starts a serial back-off; 0 without a native pool)."""
    return pool_stats()["stalls"]


def pool_stats() -> dict[str, int]:
    """What the native pool's launches did since the process started: ``launches``,
    ``parallel`` (helpers woken), ``serial_pool_busy`` (another launch held the pool),
    ``serial_no_idle_cpu``, ``serial_backoff`` (after a stall), ``serial_small`` (no helper
    to give: one thread or one iteration), ``stalls``, and the ``chunks`` of parallel
    launches, ``helper_chunks`` of them run by helpers. All zero without a native pool."""
    from .native_pool import STAT_NAMES

    ensure_symbols()
    if _native is None:
        return dict.fromkeys(STAT_NAMES, 0)
    return {name: int(_native.stat(k)) for k, name in enumerate(STAT_NAMES)}


def native_workers() -> int:
    """Threads the native pool has started so far (0 without a native pool)."""
    ensure_symbols()
    return 0 if _native is None else int(_native.workers())


def _after_fork() -> None:
    global _pool
    _pool = None  # the workers did not survive the fork
    if _native is not None:
        _native.reset()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
