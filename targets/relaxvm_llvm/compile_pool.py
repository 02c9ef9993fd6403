"""Large kernel builds spread LLVM's work over worker processes.

A build of at least :data:`MIN_KERNELS` kernels compiles each kernel as a module of its own:
the calling thread generates the kernels' IR one after another (Python, under the GIL) while
a thread of this process and up to :func:`worker_count` worker processes
(:mod:`relaxvm_llvm.compile_worker`) optimize and emit the ones already generated. The
result is one object file per kernel, linked into one engine. Processes, not threads:
llvmlite runs one LLVM call at a time per process.

Workers are started on first need, kept for later builds, and exit on their own after
:data:`~relaxvm_llvm.compile_worker.IDLE_SECONDS` idle or when this process ends (their
input closes). ``RELAXVM_COMPILE_WORKERS=N`` sets how many (``0``: everything in this process;
default: one per usable CPU beyond the first, at most :data:`MAX_WORKERS`). A worker that
cannot start is not retried in this process, and its share is compiled here; a worker that
dies while compiling a kernel (LLVM aborting on some input) fails the build with an
:class:`~relaxvm_llvm.errors.LLVMBuildError` naming the kernel, where the same abort in this
process would have ended it.
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import IO

from . import jit
from .compile_worker import MAX_MESSAGE, READY, REPLY, REQUEST, compile_ir
from .errors import LLVMBuildError

__all__ = ["MAX_WORKERS", "MIN_KERNELS", "CompiledKernel", "compile_kernels", "worker_count"]

#: Builds with fewer kernels compile in this process, as one module.
MIN_KERNELS = 4
MAX_WORKERS = 7
WORKERS_ENV = "RELAXVM_COMPILE_WORKERS"


def worker_count() -> int:
    """How many worker processes a large build uses (``RELAXVM_COMPILE_WORKERS``)."""
    raw = os.environ.get(WORKERS_ENV, "").strip()
    if raw:
        try:
            return max(0, min(int(raw), 64))
        except ValueError:
            warnings.warn(
                f"{WORKERS_ENV}={raw!r} is not an integer; using the default",
                RuntimeWarning,
                stacklevel=2,
            )
    if os.name != "posix" or _disabled:
        return 0
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(0, min(cpus - 1, MAX_WORKERS))


@dataclass(frozen=True)
class CompiledKernel:
    """One kernel's object code and optimized IR text."""

    object_code: bytes
    llvm_ir: str


def worker_command() -> list[str]:
    """The command line of a worker process."""
    return [sys.executable, "-m", "relaxvm_llvm.compile_worker"]


class _WorkerGone(Exception):
    """The worker process ended (``started``: after it had said it was ready)."""

    def __init__(self, started: bool, detail: str) -> None:
        super().__init__(detail)
        self.started = started


class _Worker:
    """One ``python -m relaxvm_llvm.compile_worker`` process and its pipes."""

    def __init__(self) -> None:
        # stderr goes to a file: a pipe nobody reads while waiting for a reply could fill
        # with LLVM's warnings and block the worker for good.
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed with the worker
        self.proc = subprocess.Popen(
            worker_command(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )
        self.ready = False
        # A forked copy of this process must not talk to its parent's workers.
        self.owner = os.getpid()

    def alive(self) -> bool:
        return self.owner == os.getpid() and self.proc.poll() is None

    def compile(self, header: bytes, text: bytes) -> CompiledKernel:
        """Compile one module; raises RuntimeError for LLVM's rejection, _WorkerGone when the
        process ends."""
        stdin, stdout = self.proc.stdin, self.proc.stdout
        if stdin is None or stdout is None:
            raise _WorkerGone(False, "no pipes")
        if not self.ready:
            if _read_exact(stdout, len(READY)) != READY:
                raise _WorkerGone(False, self._death())
            self.ready = True
        try:
            stdin.write(REQUEST.pack(len(header), len(text)) + header + text)
            stdin.flush()
        except OSError:
            raise _WorkerGone(True, self._death()) from None
        reply = _read_exact(stdout, REPLY.size)
        if reply is None:
            raise _WorkerGone(True, self._death())
        status, size_a, size_b = REPLY.unpack(reply)
        if size_a > MAX_MESSAGE or size_b > MAX_MESSAGE:
            raise _WorkerGone(True, "malformed reply")
        body = _read_exact(stdout, size_a + size_b)
        if body is None:
            raise _WorkerGone(True, self._death())
        if status != 0:
            raise RuntimeError(body[:size_a].decode("utf-8", "replace"))
        return CompiledKernel(body[:size_a], body[size_a:].decode("utf-8"))

    def _death(self) -> str:
        """What the ended process left: its exit status and the end of its stderr."""
        try:
            self.proc.wait(timeout=5)
            self.stderr.seek(0)
            err = self.stderr.read()
        except (subprocess.TimeoutExpired, OSError, ValueError):
            self.close()
            return "the worker stopped answering"
        tail = err.decode("utf-8", "replace").strip()[-500:]
        return f"exit status {self.proc.returncode}" + (f": {tail}" if tail else "")

    def close(self) -> None:
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self.stderr.close()


def _read_exact(stream: IO[bytes], size: int) -> bytes | None:
    data = stream.read(size)
    return data if data is not None and len(data) == size else None


_idle: list[_Worker] = []
_idle_lock = threading.Lock()
#: Set once a worker failed to start: this process compiles everything itself from then on.
_disabled = False
_exit_hook = False


def _take_workers(count: int) -> list[_Worker]:
    """``count`` workers: idle ones still alive first, then fresh ones (starting)."""
    global _exit_hook
    taken: list[_Worker] = []
    with _idle_lock:
        while _idle and len(taken) < count:
            worker = _idle.pop()
            if worker.alive():
                taken.append(worker)
            elif worker.owner == os.getpid():
                worker.close()
        if not _exit_hook:
            atexit.register(shutdown)
            _exit_hook = True
    while len(taken) < count:
        try:
            taken.append(_Worker())
        except OSError as err:
            _give_up(f"it could not be started: {err}")
            break
    return taken


def _return_workers(workers: Iterable[_Worker]) -> None:
    with _idle_lock:
        _idle.extend(w for w in workers if w.alive())


def _give_up(reason: str) -> None:
    global _disabled
    if not _disabled:
        _disabled = True
        warnings.warn(
            f"relaxvm: a compile worker process failed ({reason}); large builds compile in "
            f"this process from now on (set {WORKERS_ENV}=0 to silence this)",
            RuntimeWarning,
            stacklevel=2,
        )


def compile_kernels(
    texts: Iterable[tuple[str, str]],
    total: int,
    info: jit.TargetInfo,
    workers: int,
    progress: Callable[[int], None],
) -> list[CompiledKernel]:
    """Compile ``(name, IR text)`` pairs as they are produced, in this process and in up to
    ``workers`` worker processes; the results in input order.

    ``texts`` is consumed on the calling thread (it generates the IR); ``progress(done)`` is
    called on the calling thread as kernels finish.

    Raises
    ------
    LLVMBuildError
        LLVM rejects a kernel's IR, or a worker died compiling it (naming the kernel).
    """
    tm = jit.target_machine(info.triple, info.cpu, info.features)
    header = json.dumps({"triple": info.triple, "cpu": info.cpu, "features": info.features})
    header_bytes = header.encode("utf-8")
    jobs: queue.Queue[tuple[int, str, str] | None] = queue.Queue()
    results: list[CompiledKernel | None] = [None] * total
    errors: dict[int, str] = {}
    finished = threading.Condition()
    done = [0]

    def record(index: int, result: CompiledKernel | None, error: str | None) -> None:
        with finished:
            if error is not None:
                errors[index] = error
            results[index] = result
            done[0] += 1
            finished.notify_all()

    def local() -> None:
        while (job := jobs.get()) is not None:
            index, name, text = job
            try:
                obj, ir_text = compile_ir(text, tm)
                record(index, CompiledKernel(obj, ir_text), None)
            except RuntimeError as err:
                record(index, None, f"LLVM rejected the IR of kernel {name!r}: {err}")
            except Exception as err:  # a bug, not LLVM's verdict: still names the kernel
                record(
                    index, None, f"compiling kernel {name!r} failed: {type(err).__name__}: {err}"
                )
        jobs.put(None)  # the end marker stays for the other consumers

    def remote(worker: _Worker) -> None:
        while (job := jobs.get()) is not None:
            index, name, text = job
            try:
                result = worker.compile(header_bytes, text.encode("utf-8"))
            except RuntimeError as err:
                record(index, None, f"LLVM rejected the IR of kernel {name!r}: {err}")
                continue
            except _WorkerGone as gone:
                if not gone.started:
                    _give_up(str(gone))
                    jobs.put(job)  # this process compiles it instead
                else:
                    record(
                        index, None, f"the compile worker died compiling kernel {name!r} ({gone})"
                    )
                worker.close()
                return
            except Exception:
                # Anything else leaves the pipes mid-message: this worker is done for, and
                # this process compiles the kernel.
                worker.close()
                jobs.put(job)
                return
            record(index, result, None)
        jobs.put(None)

    pool = _take_workers(workers)
    threads = [threading.Thread(target=local, name="relaxvm-llvm-compile", daemon=True)]
    threads += [
        threading.Thread(target=remote, args=(w,), name="relaxvm-llvm-worker", daemon=True)
        for w in pool
    ]
    for thread in threads:
        thread.start()
    count = 0
    try:
        for name, text in texts:
            jobs.put((count, name, text))
            count += 1
            progress(done[0])
    finally:
        jobs.put(None)
        while any(t.is_alive() for t in threads):
            with finished:
                finished.wait(timeout=0.5)
            progress(done[0])
        for thread in threads:
            thread.join()
        _return_workers(pool)
    # A job a worker handed back after this process's thread had finished.
    leftover = []
    while True:
        try:
            job = jobs.get_nowait()
        except queue.Empty:
            break
        if job is not None:
            leftover.append(job)
    if leftover:
        for job in leftover:
            jobs.put(job)
        jobs.put(None)
        local()
    for index in sorted(errors):
        raise LLVMBuildError(f"llvm target: {errors[index]}")
    compiled = [r for r in results[:count] if r is not None]
    if len(compiled) != count:
        raise LLVMBuildError(f"llvm target: {count - len(compiled)} kernel(s) were not compiled")
    return compiled


def shutdown() -> None:
    """Close the idle workers (they would exit on their own once idle or orphaned)."""
    with _idle_lock:
        workers = list(_idle)
        _idle.clear()
    for worker in workers:
        worker.close()
