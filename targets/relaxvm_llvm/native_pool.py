"""A native thread pool for parallel loops, written in LLVM IR and JIT-compiled once.

The Python pool of :mod:`.parallel` costs a GIL hand-over and an OS wake-up per chunk (tens of
microseconds). This pool never touches Python: generated kernels call its launcher directly,
workers are ``pthread`` threads that call the outlined range functions, and waiting uses a
short spin followed by a Linux ``futex`` sleep, so an idle pool costs no CPU.

Protocol (every shared word accessed atomically; the spin-then-sleep handshakes are the
classic store-flag / re-check pairs, sequentially consistent, so no wake-up is lost):

* a launch is one shared task (``fn``, ``closure``, ``extent``) cut into ``GRAIN`` chunks per
  participating thread. The chunks are claimed through one 64-bit word, ``claim`` =
  ``epoch << 32 | chunks << 16 | next``: a thread claims chunk ``next`` with a compare-and-swap
  of the word it read, so a thread that read a finished launch's word can never claim a chunk of
  the next one (the epoch differs) and needs no acknowledgement;
* the launcher waits for ``finished == chunks``, the chunks *completed*, not for its helpers to
  report: a helper that is woken but finds no core (another process, numpy's spinning BLAS
  threads) before the launcher has claimed every chunk costs nothing, because the launcher does
  its share. Only a chunk that a helper claimed and then lost its core in the middle of is
  waited for;
* before waking anyone, the launcher reads how many threads are runnable on the machine
  (``/proc/loadavg``'s fourth field, a snapshot the kernel keeps) and wakes at most as many
  helpers as there are idle CPUs, so a launch made while the cores are busy (numpy's BLAS
  threads spinning after a call, another process, a second VM in another Python thread) runs
  on the calling thread and loses nothing (``adaptive``, on by default);
* a helper times each chunk it runs, in wall time and in its own CPU time: a difference of
  more than ``STALL_NS`` means it lost its core in the middle of the chunk (contention that
  began after the idle check), which the launcher may have waited for. That is a *stall*;
  the launcher then runs launches serially for a back-off period that doubles with each
  further stall (2 ms up to 0.2 s) and halves with each clean launch, so such a loss cannot
  repeat launch after launch;
* an idle helper yields for ``HELPER_SPIN_NS`` before it sleeps, and one that finds itself on
  the last launcher's CPU drops that CPU from its own affinity (the CPUs it started with, less
  that one), so that helper and launcher do not take turns on one CPU while another idles;
* worker ``k`` (1 <= k < ``MAX_WORKERS``) owns a 32-bit sequence number ``seq[k]`` and a
  ``sleeping[k]`` flag. It waits for ``seq[k]`` to change, claims chunks until none is left,
  and waits again. The workers whose ``sleeping`` flag is clear are runnable (spinning,
  working, or woken by the launcher, which clears the flag), so the load reading counts them
  as the pool's own;
* the launcher takes the ``busy`` lock without waiting (when another launch holds it, e.g.
  from another Python thread, it runs the loop serially itself, so nothing can deadlock),
  starts missing workers, publishes the task, bumps ``seq`` of the helpers it wants, claims
  chunks itself, waits for the claimed ones to finish and releases ``busy``;
* a failed ``pthread_create`` only means fewer helpers: the launch still completes.

The launcher is in :mod:`.native_pool_launch`; the reading of the machine's CPUs (idle CPUs,
a helper's move off the launcher's CPU) is in :mod:`.native_pool_cpus`.

Only Linux on x86-64 and AArch64 (the futex syscall numbers are per architecture); elsewhere
:func:`build_native_pool` returns None and :mod:`.parallel` keeps its Python pool.
"""

from __future__ import annotations

import ctypes
import platform
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import llvmlite.binding as llvm
import llvmlite.ir as ir
from llvmlite import __version__ as ir_version

__all__ = ["MAX_WORKERS", "STAT_NAMES", "NativePool", "PoolSymbols", "build_native_pool"]

#: Slots (worker k uses slot k; slot 0 is the launching thread).
MAX_WORKERS = 64
#: Waiting: ``SPIN`` checks with a ``pause`` between them (a microsecond or two), then
#: ``YIELD`` checks with ``sched_yield`` between them (so a thread sharing the core with the
#: one it waits for lets it run), then a futex sleep.
SPIN = 64
YIELD = 64
#: How long an idle helper keeps yielding (instead of ``YIELD`` rounds) before it sleeps in
#: the kernel. Waking a sleeping thread on a halted virtual CPU takes from tens to hundreds
#: of microseconds, so launches that follow each other (the layers of a model) would find
#: their helpers asleep and finish before they arrive; a yielding helper gives its core to
#: any other runnable thread at once.
HELPER_SPIN_NS = 300_000
#: Chunks per thread of a launch: finer than one per thread, so that when another process
#: takes a core, the other threads pick up its share.
GRAIN = 4

#: Stall detection: a helper whose chunk took ``STALL_NS`` more wall time than CPU time lost
#: its core in the middle of it to another thread for a scheduler time slice (1-4 ms; a page
#: fault or a slow memory access counts as CPU time). Shorter gaps are left alone: on a
#: virtual machine the host takes a vCPU away for a few hundred microseconds now and then,
#: from either thread alike (measured here: a 200 us threshold fired on ~2% of launches of a
#: quiet machine and cost the MLP a tenth of its speed-up). The launch then counts as stalled and launches run
#: serially for a back-off that starts at ``BACKOFF_MIN_NS``, doubles with each further stall
#: (at most ``BACKOFF_MAX_NS``) and halves with each launch without one.
STALL_NS = 1_000_000
BACKOFF_MIN_NS = 2_000_000
BACKOFF_MAX_NS = 200_000_000
#: Launch counters (``parallel.pool_stats()``): every launch, those that woke helpers, those
#: run serially because another launch held the pool, because no other CPU was idle, because
#: of a stall back-off, or with no helper to give (threads or iterations), the stalls, and
#: the chunks run (all, and by helpers).
STAT_NAMES = (
    "launches",
    "parallel",
    "serial_pool_busy",
    "serial_no_idle_cpu",
    "serial_backoff",
    "serial_small",
    "stalls",
    "chunks",
    "helper_chunks",
)
_CLOCK_MONOTONIC = 1
_CLOCK_THREAD_CPUTIME_ID = 3
#: 64-bit words of the CPU masks a helper uses (``cpu_set_t``: 1024 CPUs).
AFFINITY_WORDS = 16
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
    idle_cpus: Any  # ctypes function: () -> i64, CPUs idle besides the caller's (see below)
    stat: Any  # ctypes function: (index in STAT_NAMES) -> i64, a launch counter
    engine: Any


@dataclass(frozen=True)
class PoolSymbols:
    """Names of the process symbols the pool's code refers to (registered beforehand with
    ``llvm.add_symbol`` by :mod:`.parallel`, which owns the values)."""

    python_flag: str  # int64: nonzero sends launches to the Python launcher
    python_launch: str  # the Python launcher, a C callback
    num_threads: str  # int64: threads per parallel loop
    adaptive: str  # int64: nonzero wakes helpers only for idle CPUs
    online_cpus: str  # int64: CPUs online on the machine (what /proc/loadavg counts over)


def _c(value: int, ty: ir.IntType = I64) -> ir.Constant:
    return ir.Constant(ty, value)


class _Builder:
    def __init__(self, names: PoolSymbols, futex: int):
        self.module = ir.Module(name="relaxvm_llvm_pool")
        self.module.triple = llvm.get_process_triple()
        self.futex = futex
        m = self.module

        def glob(name: str, ty: ir.Type, external: bool = False, init: int = 0) -> Any:
            var = ir.GlobalVariable(m, ty, name)
            if external:
                var.linkage = "external"
            else:
                var.linkage = "internal"
                var.initializer = ir.Constant(ty, init if isinstance(ty, ir.IntType) else None)
            return var

        slots = ir.ArrayType
        self.busy = glob("pool_busy", I32)
        self.launcher_sleeping = glob("pool_launcher_sleeping", I32)
        self.launcher_cpu = glob("pool_launcher_cpu", I32, init=-1)
        self.nworkers = glob("pool_nworkers", I64)
        self.seq = glob("pool_seq", slots(I32, MAX_WORKERS))
        self.sleeping = glob("pool_sleeping", slots(I32, MAX_WORKERS))
        # The current launch: one task shared by all, cut into chunks that the threads claim
        # one at a time through ``claim`` (epoch << 32 | chunks << 16 | next); ``finished``
        # counts completed chunks (and is the word the launcher sleeps on).
        self.task_fn = glob("pool_task_fn", PTR)
        self.task_closure = glob("pool_task_closure", PTR)
        self.task_extent = glob("pool_task_extent", I64)
        self.claim = glob("pool_claim", I64)
        self.finished = glob("pool_finished", I32)
        # Stall back-off (launcher only, under ``busy``): after a launch waited far longer for
        # a helper's chunk than its own chunks took (the helper lost its core mid-chunk),
        # launches run serially until ``serial_until`` (monotonic ns); ``backoff`` doubles
        # with each stall and halves with each clean launch.
        self.serial_until = glob("pool_serial_until", I64)
        self.backoff = glob("pool_backoff", I64)
        self.helper_stalled = glob("pool_helper_stalled", I32)
        # What launches did (see STAT_NAMES), for parallel.pool_stats().
        self.stats = glob("pool_stats", ir.ArrayType(I64, len(STAT_NAMES)))
        # /proc/loadavg, opened on first use (-2: not tried yet, -1: unavailable).
        self.load_fd = glob("pool_load_fd", I32, init=-2)
        path = bytearray(b"/proc/loadavg\0")
        self.load_path = ir.GlobalVariable(m, ir.ArrayType(ir.IntType(8), len(path)), "pool_path")
        self.load_path.linkage = "internal"
        self.load_path.global_constant = True
        self.load_path.initializer = ir.Constant(ir.ArrayType(ir.IntType(8), len(path)), path)
        # run_chunks(measure): the argument is nonzero in helpers, which time their chunks.
        self.run_chunks = ir.Function(m, ir.FunctionType(ir.VoidType(), [I64]), "pool_run_chunks")
        self.run_chunks.linkage = "internal"
        self.idle_cpus = ir.Function(m, ir.FunctionType(I64, []), "pool_idle_cpus")
        self.idle_cpus.linkage = "internal"
        self.use_python = glob(names.python_flag, I64, external=True)
        self.num_threads = glob(names.num_threads, I64, external=True)
        self.adaptive = glob(names.adaptive, I64, external=True)
        self.online_cpus = glob(names.online_cpus, I64, external=True)
        self.py_launch = ir.Function(m, ir.FunctionType(I32, [PTR, PTR, I64]), names.python_launch)
        self.syscall = ir.Function(m, ir.FunctionType(I64, [I64], var_arg=True), "syscall")
        self.open = ir.Function(m, ir.FunctionType(I32, [PTR, I32], var_arg=True), "open")
        self.pread = ir.Function(m, ir.FunctionType(I64, [I32, PTR, I64, I64]), "pread")
        self.clock_gettime = ir.Function(
            m, ir.FunctionType(I32, [I32, I64.as_pointer()]), "clock_gettime"
        )
        thread_fn = ir.FunctionType(PTR, [PTR])
        self.pthread_create = ir.Function(
            m,
            ir.FunctionType(I32, [I64.as_pointer(), PTR, thread_fn.as_pointer(), PTR]),
            "pthread_create",
        )
        self.pthread_detach = ir.Function(m, ir.FunctionType(I32, [I64]), "pthread_detach")
        self.sched_yield = ir.Function(m, ir.FunctionType(I32, []), "sched_yield")
        self.sched_getcpu = ir.Function(m, ir.FunctionType(I32, []), "sched_getcpu")
        affinity = ir.FunctionType(I32, [I32, I64, PTR])
        self.sched_getaffinity = ir.Function(m, affinity, "sched_getaffinity")
        self.sched_setaffinity = ir.Function(m, affinity, "sched_setaffinity")
        self.worker = ir.Function(m, thread_fn, "relaxvm_llvm_pool_worker")
        self.worker.linkage = "internal"
        machine = platform.machine().lower()
        self.pause: ir.Function | None = None
        if machine in ("x86_64", "amd64"):
            self.pause = ir.Function(m, ir.FunctionType(ir.VoidType(), []), "llvm.x86.sse2.pause")

    # ---- helpers -----------------------------------------------------------------------
    @staticmethod
    def entry_alloca(b: ir.IRBuilder, ty: ir.Type) -> ir.Value:
        """A stack slot allocated once, in the entry block of ``b``'s function: an alloca in
        a loop (a worker's wait) would grow the stack on every pass until it overflows."""
        entry = b.function.entry_basic_block
        at_entry = ir.IRBuilder(entry)
        if entry.instructions:
            at_entry.position_before(entry.instructions[0])
        return at_entry.alloca(ty)

    @staticmethod
    def slot(b: ir.IRBuilder, array: ir.GlobalVariable, k: ir.Value) -> ir.Value:
        return b.gep(array, [_c(0, I32), k], inbounds=True)

    @staticmethod
    def load(b: ir.IRBuilder, ptr: ir.Value, order: str = "seq_cst") -> ir.Value:
        return b.load_atomic(ptr, order, ptr.type.pointee.width // 8)

    @staticmethod
    def store(b: ir.IRBuilder, value: ir.Value, ptr: ir.Value, order: str = "seq_cst") -> None:
        b.store_atomic(value, ptr, order, value.type.width // 8)

    def count(self, b: ir.IRBuilder, stat: str | ir.Value) -> None:
        index = _c(STAT_NAMES.index(stat)) if isinstance(stat, str) else stat
        b.atomic_rmw("add", self.slot(b, self.stats, index), _c(1), "monotonic")

    def futex_call(self, b: ir.IRBuilder, ptr: ir.Value, op: int, value: ir.Value) -> None:
        # Every variadic argument as a full i64 register (syscall() reads longs).
        if value.type != I64:
            value = b.zext(value, I64)
        address = b.ptrtoint(ptr, I64)
        b.call(self.syscall, [_c(self.futex), address, _c(op), value, _c(0), _c(0), _c(0)])

    def spin_wait(
        self,
        b: ir.IRBuilder,
        fn: ir.Function,
        done: Any,
        word: ir.Value,
        flag: ir.Value,
        tag: str,
        yield_ns: int = 0,
        may_spin: Any = None,
    ) -> None:
        """Spin until ``done(b)`` (an i1), then sleep on ``word`` with ``flag`` raised.

        ``done`` is re-evaluated after raising the flag; ``word`` is re-read by the kernel
        before sleeping, so a change between the check and the sleep is never missed.
        The spin is ``SPIN`` pauses, then ``sched_yield`` for ``YIELD`` rounds, or for
        ``yield_ns`` nanoseconds when that is given, as long as ``may_spin(b)`` (an i1, when
        given) holds.
        """
        entry = b.block
        spin = fn.append_basic_block(f"{tag}_spin")
        spin_more = fn.append_basic_block(f"{tag}_spin_more")
        sleep = fn.append_basic_block(f"{tag}_sleep")
        out = fn.append_basic_block(f"{tag}_out")
        clock = self.entry_alloca(b, ir.ArrayType(I64, 2))
        slot = b.bitcast(clock, I64.as_pointer())
        began = self.entry_alloca(b, I64)
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
                if yield_ns:
                    b.store(self.now(b, slot), began)
            with yielding:
                b.call(self.sched_yield, [])
        following = b.add(count, _c(1))
        if yield_ns:
            # Keep yielding until yield_ns have passed since the pauses ended.
            in_pauses = b.icmp_signed("<", following, _c(SPIN + 1))
            elapsed = b.sub(self.now(b, slot), b.load(began))
            keep = b.or_(in_pauses, b.icmp_signed("<", elapsed, _c(yield_ns)))
            if may_spin is not None:
                keep = b.and_(keep, may_spin(b))
        else:
            keep = b.icmp_signed("<", following, _c(SPIN + YIELD))
        count.add_incoming(following, b.block)  # after any blocks may_spin added
        b.cbranch(keep, spin, sleep)
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
    def off_launcher_cpu(
        self, b: ir.IRBuilder, allowed: ir.Value, scratch: ir.Value, excluded: ir.Value
    ) -> ir.Value:
        from .native_pool_cpus import off_launcher_cpu

        return off_launcher_cpu(self, b, allowed, scratch, excluded)

    def build_worker(self) -> None:
        fn = self.worker
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        k = b.ptrtoint(fn.args[0], I64)
        seq_ptr = self.slot(b, self.seq, k)
        flag_ptr = self.slot(b, self.sleeping, k)
        seen_slot = b.alloca(I32)
        b.store(_c(0, I32), seen_slot)
        mask_type = ir.ArrayType(I64, AFFINITY_WORDS)
        allowed = b.alloca(mask_type)
        scratch = b.alloca(mask_type)
        excluded = b.alloca(I32)
        b.store(_c(-1, I32), excluded)
        b.store(ir.Constant(mask_type, None), allowed)
        got = b.call(
            self.sched_getaffinity,
            [_c(0, I32), _c(AFFINITY_WORDS * 8), b.bitcast(allowed, PTR)],
        )
        known = b.icmp_signed("==", got, _c(0, I32))  # glibc: 0 on success
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
            yield_ns=HELPER_SPIN_NS,
            may_spin=lambda bb: bb.and_(
                known, self.off_launcher_cpu(bb, allowed, scratch, excluded)
            ),
        )
        b.store(self.load(b, seq_ptr, "acquire"), seen_slot)
        b.call(self.run_chunks, [_c(1)])
        b.branch(loop)

    # ---- claiming chunks -----------------------------------------------------------------
    def build_run_chunks(self) -> None:
        """Run chunks of the current launch until none is left (launcher and workers alike):
        a thread whose core is taken by another process simply claims fewer chunks."""
        fn = self.run_chunks
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        measure = b.icmp_unsigned("!=", fn.args[0], _c(0))
        loop = fn.append_basic_block("claim")
        attempt = fn.append_basic_block("attempt")
        work = fn.append_basic_block("work")
        done = fn.append_basic_block("done")
        clock = b.alloca(ir.ArrayType(I64, 2))
        slot = b.bitcast(clock, I64.as_pointer())
        wall_start = b.alloca(I64)
        cpu_start = b.alloca(I64)
        b.branch(loop)
        b.position_at_end(loop)
        word = self.load(b, self.claim, "acquire")
        index = b.and_(word, _c(0xFFFF))
        total = b.and_(b.lshr(word, _c(16)), _c(0xFFFF))
        b.cbranch(b.icmp_unsigned("<", index, total), attempt, done)
        b.position_at_end(attempt)
        swap = b.cmpxchg(self.claim, word, b.add(word, _c(1)), "acq_rel", "acquire")
        b.cbranch(b.extract_value(swap, 1), work, loop)
        b.position_at_end(work)
        # The launch cannot end before this chunk is finished, so its task stays put.
        target = b.bitcast(b.load(self.task_fn), RANGE_FN.as_pointer())
        closure = b.load(self.task_closure)
        extent = b.load(self.task_extent)
        quotient = b.sdiv(extent, total)
        remainder = b.srem(extent, total)

        def bound(kk: ir.Value) -> ir.Value:
            extra = b.select(b.icmp_signed("<", kk, remainder), kk, remainder)
            return b.add(b.mul(kk, quotient), extra)

        self.count(b, "chunks")
        with b.if_then(measure):
            self.count(b, "helper_chunks")
            b.store(self.now(b, slot), wall_start)
            b.store(self.now(b, slot, _CLOCK_THREAD_CPUTIME_ID), cpu_start)
        b.call(target, [bound(index), bound(b.add(index, _c(1))), closure])
        with b.if_then(measure):
            # Wall time this thread was not running during the chunk: it lost its core.
            wall = b.sub(self.now(b, slot), b.load(wall_start))
            cpu = b.sub(self.now(b, slot, _CLOCK_THREAD_CPUTIME_ID), b.load(cpu_start))
            with b.if_then(b.icmp_signed(">", b.sub(wall, cpu), _c(STALL_NS))):
                self.store(b, _c(1, I32), self.helper_stalled, "monotonic")
        old = b.atomic_rmw("add", self.finished, _c(1, I32), "seq_cst")
        last = b.icmp_unsigned("==", b.add(old, _c(1, I32)), b.trunc(total, I32))
        with b.if_then(last):
            sleeping = self.load(b, self.launcher_sleeping)
            with b.if_then(b.icmp_unsigned("!=", sleeping, _c(0, I32))):
                self.futex_call(b, self.finished, _FUTEX_WAKE_PRIVATE, _c(1, I32))
        b.branch(loop)
        b.position_at_end(done)
        b.ret_void()

    def now(self, b: ir.IRBuilder, slot: ir.Value, clock: int = _CLOCK_MONOTONIC) -> ir.Value:
        """A clock in nanoseconds (``slot``: two i64, a ``struct timespec``)."""
        b.call(self.clock_gettime, [_c(clock, I32), slot])
        seconds = b.load(slot)
        nanos = b.load(b.gep(slot, [_c(1, I32)]))
        return b.add(b.mul(seconds, _c(1_000_000_000)), nanos)

    # ---- how many CPUs are idle ----------------------------------------------------------
    def build_idle_cpus(self) -> None:
        from .native_pool_cpus import build_idle_cpus

        build_idle_cpus(self)

    # ---- the launcher ------------------------------------------------------------------
    def build_launch(self) -> None:
        from .native_pool_launch import build_launch

        build_launch(self)

    def build_helpers(self) -> None:
        m = self.module
        reset = ir.Function(m, ir.FunctionType(ir.VoidType(), []), "relaxvm_llvm_pool_reset")
        b = ir.IRBuilder(reset.append_basic_block("entry"))
        for var in (
            self.busy,
            self.finished,
            self.launcher_sleeping,
            self.nworkers,
            self.serial_until,
            self.backoff,
            self.helper_stalled,
        ):
            b.store(ir.Constant(var.type.pointee, None), var)
        for var in (self.seq, self.sleeping):
            b.store(ir.Constant(var.type.pointee, None), var)
        b.store(_c(0), self.claim)
        b.ret_void()
        count = ir.Function(m, ir.FunctionType(I64, []), "relaxvm_llvm_pool_workers")
        b = ir.IRBuilder(count.append_basic_block("entry"))
        b.ret(b.load(self.nworkers))
        idle = ir.Function(m, ir.FunctionType(I64, []), "relaxvm_llvm_pool_idle_cpus")
        b = ir.IRBuilder(idle.append_basic_block("entry"))
        b.ret(b.call(self.idle_cpus, []))
        stats = ir.Function(m, ir.FunctionType(I64, [I64]), "relaxvm_llvm_pool_stat")
        b = ir.IRBuilder(stats.append_basic_block("entry"))
        b.ret(self.load(b, self.slot(b, self.stats, stats.args[0]), "monotonic"))


def build_native_pool(names: PoolSymbols) -> NativePool | None:
    """Compile the pool, or None where it is not supported (not Linux, unknown CPU).

    ``names`` are process symbols registered beforehand with ``llvm.add_symbol``.
    """
    futex = _SYS_FUTEX.get(platform.machine().lower())
    if not sys.platform.startswith("linux") or futex is None:
        return None
    from .jit import LLVM_LOCK, _ensure_initialized
    from .runtime_cache import cached_object

    _ensure_initialized()
    triple = llvm.get_process_triple()

    def machine() -> Any:  # a fresh one each time: an engine owns and deletes its machine
        target = llvm.Target.from_triple(triple)
        return target.create_target_machine(opt=2, reloc="pic", codemodel="default")

    def compile_object() -> bytes:
        gen = _Builder(names, futex)
        gen.build_run_chunks()
        gen.build_idle_cpus()
        gen.build_worker()
        gen.build_launch()
        gen.build_helpers()
        parsed = llvm.parse_assembly(str(gen.module))
        parsed.verify()
        return bytes(machine().emit_object(parsed))

    # The IR is a function of the generator's source and its inputs: hashing those (not the
    # generated text, which takes as long to print as to load) keys the cached object.
    here = Path(__file__)
    sources = [
        here.read_bytes(),
        here.with_name("native_pool_cpus.py").read_bytes(),
        here.with_name("native_pool_launch.py").read_bytes(),
    ]
    key = "\x00".join((repr(names), str(futex), ir_version, *(s.hex() for s in sources)))
    with LLVM_LOCK:
        # Compiled once per machine, not once per process (a warm model load's biggest cost).
        obj = cached_object("native-pool", key, triple, compile_object)
        backing = llvm.parse_assembly("")
        backing.triple = triple
        engine = llvm.create_mcjit_compiler(backing, machine())
        engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        engine.finalize_object()
        launch = engine.get_function_address("relaxvm_llvm_pool_launch")
        reset = engine.get_function_address("relaxvm_llvm_pool_reset")
        workers = engine.get_function_address("relaxvm_llvm_pool_workers")
        idle = engine.get_function_address("relaxvm_llvm_pool_idle_cpus")
        stat = engine.get_function_address("relaxvm_llvm_pool_stat")
    return NativePool(
        launch_address=launch,
        reset=ctypes.CFUNCTYPE(None)(reset),
        workers=ctypes.CFUNCTYPE(ctypes.c_int64)(workers),
        idle_cpus=ctypes.CFUNCTYPE(ctypes.c_int64)(idle),
        stat=ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(stat),
        engine=engine,
    )
