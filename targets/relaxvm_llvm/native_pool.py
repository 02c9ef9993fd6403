"""A native thread pool for parallel loops, written in LLVM IR and JIT-compiled once.

The Python pool of :mod:`.parallel` costs a GIL hand-over and an OS wake-up per chunk (tens of
microseconds). This pool never touches Python: generated kernels call its launcher directly,
workers are ``pthread`` threads that call the outlined range functions, and waiting uses a
short spin followed by a Linux ``futex`` sleep, so an idle pool costs no CPU.

Protocol (every shared word accessed atomically; the spin-then-sleep handshakes are the
classic store-flag / re-check pairs, sequentially consistent, so no wake-up is lost):

* a launch is one shared task (``fn``, ``closure``, ``extent``) cut into ``GRAIN`` chunks per
  thread; every participating thread, the launcher included, claims chunks from an atomic
  counter until none is left, so a thread whose core is taken by another process does less;
* worker ``k`` (1 ≤ k < ``MAX_WORKERS``) owns a 32-bit sequence number ``seq[k]`` and a
  ``sleeping[k]`` flag. It waits for ``seq[k]`` to change, claims chunks, then decrements
  ``pending``; the last one wakes the launcher if it sleeps;
* the launcher takes the ``busy`` lock without waiting (when another launch holds it, e.g.
  from another Python thread, it runs the loop serially itself, so nothing can deadlock),
  starts missing workers, publishes the task, bumps ``seq`` of the workers it needs, claims
  chunks itself, waits for ``pending == 0`` and releases ``busy``;
* a failed ``pthread_create`` only means fewer helpers: the launch still completes.

Only Linux on x86-64 and AArch64 (the futex syscall numbers are per architecture); elsewhere
:func:`build_native_pool` returns None and :mod:`.parallel` keeps its Python pool.
"""

from __future__ import annotations

import ctypes
import platform
import sys
from dataclasses import dataclass
from typing import Any

import llvmlite.binding as llvm
import llvmlite.ir as ir

__all__ = ["MAX_WORKERS", "NativePool", "build_native_pool"]

#: Slots (worker k uses slot k; slot 0 is the launching thread).
MAX_WORKERS = 64
#: Waiting: ``SPIN`` checks with a ``pause`` between them (a microsecond or two), then
#: ``YIELD`` checks with ``sched_yield`` between them (so a thread sharing the core with the
#: one it waits for lets it run), then a futex sleep.
SPIN = 64
YIELD = 64
#: Chunks per thread of a launch: finer than one per thread, so that when another process
#: takes a core, the other threads pick up its share.
GRAIN = 4

_FUTEX_WAIT_PRIVATE = 128
_FUTEX_WAKE_PRIVATE = 129
_SYS_FUTEX = {"x86_64": 202, "amd64": 202, "aarch64": 98, "arm64": 98}

I1 = ir.IntType(1)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
PTR = ir.IntType(8).as_pointer()
RANGE_FN = ir.FunctionType(ir.VoidType(), [I64, I64, PTR])


@dataclass
class NativePool:
    """The compiled pool: addresses of its entry points and the engine that owns them."""

    launch_address: int
    reset: Any  # ctypes function: () -> None, after fork in the child
    workers: Any  # ctypes function: () -> i64, threads started so far
    engine: Any


def _c(value: int, ty: ir.IntType = I64) -> ir.Constant:
    return ir.Constant(ty, value)


class _Builder:
    def __init__(self, python_flag: str, python_launch: str, num_threads: str, futex: int):
        self.module = ir.Module(name="relaxvm_llvm_pool")
        self.module.triple = llvm.get_process_triple()
        self.futex = futex
        m = self.module

        def glob(name: str, ty: ir.Type, external: bool = False) -> ir.GlobalVariable:
            var = ir.GlobalVariable(m, ty, name)
            if external:
                var.linkage = "external"
            else:
                var.linkage = "internal"
                var.initializer = ir.Constant(ty, None)
            return var

        slots = ir.ArrayType
        self.busy = glob("pool_busy", I32)
        self.pending = glob("pool_pending", I32)
        self.launcher_sleeping = glob("pool_launcher_sleeping", I32)
        self.nworkers = glob("pool_nworkers", I64)
        self.seq = glob("pool_seq", slots(I32, MAX_WORKERS))
        self.sleeping = glob("pool_sleeping", slots(I32, MAX_WORKERS))
        # The current launch: one task shared by all, split into task_chunks chunks that the
        # threads claim one at a time from next_chunk.
        self.task_fn = glob("pool_task_fn", PTR)
        self.task_closure = glob("pool_task_closure", PTR)
        self.task_extent = glob("pool_task_extent", I64)
        self.task_chunks = glob("pool_task_chunks", I64)
        self.next_chunk = glob("pool_next_chunk", I64)
        self.run_chunks = ir.Function(m, ir.FunctionType(ir.VoidType(), []), "pool_run_chunks")
        self.run_chunks.linkage = "internal"
        self.use_python = glob(python_flag, I64, external=True)
        self.num_threads = glob(num_threads, I64, external=True)
        self.py_launch = ir.Function(m, ir.FunctionType(I32, [PTR, PTR, I64]), python_launch)
        self.syscall = ir.Function(m, ir.FunctionType(I64, [I64], var_arg=True), "syscall")
        thread_fn = ir.FunctionType(PTR, [PTR])
        self.pthread_create = ir.Function(
            m,
            ir.FunctionType(I32, [I64.as_pointer(), PTR, thread_fn.as_pointer(), PTR]),
            "pthread_create",
        )
        self.pthread_detach = ir.Function(m, ir.FunctionType(I32, [I64]), "pthread_detach")
        self.sched_yield = ir.Function(m, ir.FunctionType(I32, []), "sched_yield")
        self.worker = ir.Function(m, thread_fn, "relaxvm_llvm_pool_worker")
        self.worker.linkage = "internal"
        machine = platform.machine().lower()
        self.pause: ir.Function | None = None
        if machine in ("x86_64", "amd64"):
            self.pause = ir.Function(m, ir.FunctionType(ir.VoidType(), []), "llvm.x86.sse2.pause")

    # ---- helpers -----------------------------------------------------------------------
    @staticmethod
    def slot(b: ir.IRBuilder, array: ir.GlobalVariable, k: ir.Value) -> ir.Value:
        return b.gep(array, [_c(0, I32), k], inbounds=True)

    @staticmethod
    def load(b: ir.IRBuilder, ptr: ir.Value, order: str = "seq_cst") -> ir.Value:
        return b.load_atomic(ptr, order, ptr.type.pointee.width // 8)

    @staticmethod
    def store(b: ir.IRBuilder, value: ir.Value, ptr: ir.Value, order: str = "seq_cst") -> None:
        b.store_atomic(value, ptr, order, value.type.width // 8)

    def futex_call(self, b: ir.IRBuilder, ptr: ir.Value, op: int, value: ir.Value) -> None:
        # Every variadic argument as a full i64 register (syscall() reads longs).
        if value.type != I64:
            value = b.zext(value, I64)
        address = b.ptrtoint(ptr, I64)
        b.call(self.syscall, [_c(self.futex), address, _c(op), value, _c(0), _c(0), _c(0)])

    def spin_wait(
        self, b: ir.IRBuilder, fn: ir.Function, done: Any, word: ir.Value, flag: ir.Value, tag: str
    ) -> None:
        """Spin until ``done(b)`` (an i1), then sleep on ``word`` with ``flag`` raised.

        ``done`` is re-evaluated after raising the flag; ``word`` is re-read by the kernel
        before sleeping, so a change between the check and the sleep is never missed.
        """
        entry = b.block
        spin = fn.append_basic_block(f"{tag}_spin")
        spin_more = fn.append_basic_block(f"{tag}_spin_more")
        sleep = fn.append_basic_block(f"{tag}_sleep")
        out = fn.append_basic_block(f"{tag}_out")
        b.branch(spin)
        b.position_at_end(spin)
        count = b.phi(I64)
        count.add_incoming(_c(0), entry)
        b.cbranch(done(b), out, spin_more)
        b.position_at_end(spin_more)
        with b.if_else(b.icmp_signed("<", count, _c(SPIN))) as (spinning, yielding):
            with spinning:
                if self.pause is not None:
                    b.call(self.pause, [])
            with yielding:
                b.call(self.sched_yield, [])
        following = b.add(count, _c(1))
        count.add_incoming(following, b.block)
        b.cbranch(b.icmp_signed("<", following, _c(SPIN + YIELD)), spin, sleep)
        b.position_at_end(sleep)
        self.store(b, _c(1, I32), flag)
        observed = self.load(b, word)
        with b.if_then(b.not_(done(b))):
            self.futex_call(b, word, _FUTEX_WAIT_PRIVATE, observed)
        self.store(b, _c(0, I32), flag)
        sleep_end = b.block
        count.add_incoming(_c(0), sleep_end)
        b.branch(spin)
        b.position_at_end(out)

    # ---- the worker --------------------------------------------------------------------
    def build_worker(self) -> None:
        fn = self.worker
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        k = b.ptrtoint(fn.args[0], I64)
        seq_ptr = self.slot(b, self.seq, k)
        flag_ptr = self.slot(b, self.sleeping, k)
        seen_slot = b.alloca(I32)
        b.store(_c(0, I32), seen_slot)
        loop = fn.append_basic_block("loop")
        b.branch(loop)
        b.position_at_end(loop)
        seen = b.load(seen_slot)
        self.spin_wait(
            b,
            fn,
            lambda bb: bb.icmp_unsigned("!=", self.load(bb, seq_ptr, "acquire"), seen),
            seq_ptr,
            flag_ptr,
            "task",
        )
        b.store(self.load(b, seq_ptr, "acquire"), seen_slot)
        b.call(self.run_chunks, [])
        old = b.atomic_rmw("sub", self.pending, _c(1, I32), "seq_cst")
        last = b.icmp_unsigned("==", old, _c(1, I32))
        with b.if_then(last):
            sleeping = self.load(b, self.launcher_sleeping)
            with b.if_then(b.icmp_unsigned("!=", sleeping, _c(0, I32))):
                self.futex_call(b, self.pending, _FUTEX_WAKE_PRIVATE, _c(1, I32))
        b.branch(loop)

    # ---- claiming chunks -----------------------------------------------------------------
    def build_run_chunks(self) -> None:
        """Run chunks of the current task until none is left (launcher and workers alike):
        a thread whose core is taken by another process simply claims fewer chunks."""
        fn = self.run_chunks
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        target = b.bitcast(b.load(self.task_fn), RANGE_FN.as_pointer())
        closure = b.load(self.task_closure)
        extent = b.load(self.task_extent)
        total = b.load(self.task_chunks)
        quotient = b.sdiv(extent, total)
        remainder = b.srem(extent, total)

        def bound(kk: ir.Value) -> ir.Value:
            extra = b.select(b.icmp_signed("<", kk, remainder), kk, remainder)
            return b.add(b.mul(kk, quotient), extra)

        loop = fn.append_basic_block("claim")
        work = fn.append_basic_block("work")
        done = fn.append_basic_block("done")
        b.branch(loop)
        b.position_at_end(loop)
        chunk = b.atomic_rmw("add", self.next_chunk, _c(1), "monotonic")
        b.cbranch(b.icmp_signed("<", chunk, total), work, done)
        b.position_at_end(work)
        b.call(target, [bound(chunk), bound(b.add(chunk, _c(1))), closure])
        b.branch(loop)
        b.position_at_end(done)
        b.ret_void()

    # ---- the launcher ------------------------------------------------------------------
    def build_launch(self) -> None:
        m = self.module
        fn = ir.Function(m, ir.FunctionType(I32, [PTR, PTR, I64]), "relaxvm_llvm_pool_launch")
        target_raw, closure, extent = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        target = b.bitcast(target_raw, RANGE_FN.as_pointer())
        with b.if_then(b.icmp_signed("<=", extent, _c(0))):
            b.ret(_c(0, I32))
        with b.if_then(b.icmp_unsigned("!=", b.load(self.use_python), _c(0))):
            b.ret(b.call(self.py_launch, [target_raw, closure, extent]))
        threads = b.load(self.num_threads)
        tid = b.alloca(I64)
        swap = b.cmpxchg(self.busy, _c(0, I32), _c(1, I32), "acquire", "monotonic")
        with b.if_then(b.not_(b.extract_value(swap, 1))):
            b.call(target, [_c(0), extent, closure])  # a launch is running: run serially
            b.ret(_c(0, I32))
        # Start workers up to threads - 1 (capped by the slots).
        want = b.select(b.icmp_signed("<", threads, _c(MAX_WORKERS)), threads, _c(MAX_WORKERS))
        want = b.sub(want, _c(1))
        start = fn.append_basic_block("start_workers")
        create = fn.append_basic_block("create")
        started = fn.append_basic_block("started")
        b.branch(start)
        b.position_at_end(start)
        have = b.load(self.nworkers)
        b.cbranch(b.icmp_signed("<", have, want), create, started)
        b.position_at_end(create)
        worker = b.bitcast(self.worker, self.pthread_create.args[2].type)
        index = b.add(have, _c(1))
        status = b.call(
            self.pthread_create, [tid, ir.Constant(PTR, None), worker, b.inttoptr(index, PTR)]
        )
        ok = b.icmp_signed("==", status, _c(0, I32))
        with b.if_then(ok):
            b.call(self.pthread_detach, [b.load(tid)])
            b.store(index, self.nworkers)
        b.cbranch(ok, start, started)  # a failure means fewer chunks, not an error
        b.position_at_end(started)

        def smaller(x: ir.Value, y: ir.Value) -> ir.Value:
            return b.select(b.icmp_signed("<", x, y), x, y)

        # GRAIN chunks per thread (never more than iterations), claimed dynamically.
        total = smaller(extent, b.mul(threads, _c(GRAIN)))
        helpers = smaller(
            smaller(b.load(self.nworkers), b.sub(threads, _c(1))), b.sub(total, _c(1))
        )
        b.store(target_raw, self.task_fn)
        b.store(closure, self.task_closure)
        b.store(extent, self.task_extent)
        b.store(total, self.task_chunks)
        b.store(_c(0), self.next_chunk)
        self.store(b, b.trunc(helpers, I32), self.pending)
        self.store(b, _c(0, I32), self.launcher_sleeping)
        head = fn.append_basic_block("publish")
        body = fn.append_basic_block("publish_body")
        run = fn.append_basic_block("run_first")
        before = b.block
        b.branch(head)
        b.position_at_end(head)
        k = b.phi(I64)
        k.add_incoming(_c(1), before)
        b.cbranch(b.icmp_signed("<=", k, helpers), body, run)
        b.position_at_end(body)
        seq_ptr = self.slot(b, self.seq, k)
        b.atomic_rmw("add", seq_ptr, _c(1, I32), "seq_cst")
        flag = self.load(b, self.slot(b, self.sleeping, k))
        with b.if_then(b.icmp_unsigned("!=", flag, _c(0, I32))):
            self.futex_call(b, seq_ptr, _FUTEX_WAKE_PRIVATE, _c(1, I32))
        k.add_incoming(b.add(k, _c(1)), b.block)
        b.branch(head)
        b.position_at_end(run)
        b.call(self.run_chunks, [])
        self.spin_wait(
            b,
            fn,
            lambda bb: bb.icmp_unsigned("==", self.load(bb, self.pending, "acquire"), _c(0, I32)),
            self.pending,
            self.launcher_sleeping,
            "join",
        )
        self.store(b, _c(0, I32), self.busy, "release")
        b.ret(_c(0, I32))

    def build_helpers(self) -> None:
        m = self.module
        reset = ir.Function(m, ir.FunctionType(ir.VoidType(), []), "relaxvm_llvm_pool_reset")
        b = ir.IRBuilder(reset.append_basic_block("entry"))
        for var in (self.busy, self.pending, self.launcher_sleeping, self.nworkers):
            b.store(ir.Constant(var.type.pointee, None), var)
        for var in (self.seq, self.sleeping):
            b.store(ir.Constant(var.type.pointee, None), var)
        b.ret_void()
        count = ir.Function(m, ir.FunctionType(I64, []), "relaxvm_llvm_pool_workers")
        b = ir.IRBuilder(count.append_basic_block("entry"))
        b.ret(b.load(self.nworkers))


def build_native_pool(python_flag: str, python_launch: str, num_threads: str) -> NativePool | None:
    """Compile the pool, or None where it is not supported (not Linux, unknown CPU).

    The three names are process symbols registered beforehand with ``llvm.add_symbol``: an
    ``int64`` flag (nonzero: send launches to the Python launcher), the Python launcher and
    the ``int64`` thread count.
    """
    futex = _SYS_FUTEX.get(platform.machine().lower())
    if not sys.platform.startswith("linux") or futex is None:
        return None
    from .jit import LLVM_LOCK, _ensure_initialized

    _ensure_initialized()
    gen = _Builder(python_flag, python_launch, num_threads, futex)
    gen.build_run_chunks()
    gen.build_worker()
    gen.build_launch()
    gen.build_helpers()
    with LLVM_LOCK:
        parsed = llvm.parse_assembly(str(gen.module))
        parsed.verify()
        machine = llvm.Target.from_triple(llvm.get_process_triple()).create_target_machine(opt=2)
        engine = llvm.create_mcjit_compiler(parsed, machine)
        engine.finalize_object()
        launch = engine.get_function_address("relaxvm_llvm_pool_launch")
        reset = engine.get_function_address("relaxvm_llvm_pool_reset")
        workers = engine.get_function_address("relaxvm_llvm_pool_workers")
    return NativePool(
        launch_address=launch,
        reset=ctypes.CFUNCTYPE(None)(reset),
        workers=ctypes.CFUNCTYPE(ctypes.c_int64)(workers),
        engine=engine,
    )
