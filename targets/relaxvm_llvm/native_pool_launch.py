"""The native pool's launcher, as LLVM IR (see :mod:`.native_pool` for the protocol).

``relaxvm_llvm_pool_launch(fn, closure, extent)`` is what generated kernels call for a parallel
loop: it decides whether to run the loop serially (small extent, pool busy, no idle CPU, a
stall back-off, the Python pool selected) or to publish it as a task, wake helpers, claim
chunks itself and wait for the claimed chunks to finish. Kept apart from the pool's workers
and its shared state, which :class:`.native_pool._Builder` declares.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import llvmlite.ir as ir

from .native_pool import (
    _FUTEX_WAKE_PRIVATE,
    BACKOFF_MAX_NS,
    BACKOFF_MIN_NS,
    GRAIN,
    I32,
    I64,
    MAX_WORKERS,
    PTR,
    RANGE_FN,
    STAT_NAMES,
    _c,
)

if TYPE_CHECKING:
    from .native_pool import _Builder

__all__ = ["build_launch"]


def build_launch(gen: _Builder) -> None:
    """Add ``relaxvm_llvm_pool_launch`` to ``gen``'s module."""
    m = gen.module
    fn = ir.Function(m, ir.FunctionType(I32, [PTR, PTR, I64]), "relaxvm_llvm_pool_launch")
    target_raw, closure, extent = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    target = b.bitcast(target_raw, RANGE_FN.as_pointer())
    with b.if_then(b.icmp_signed("<=", extent, _c(0))):
        b.ret(_c(0, I32))
    with b.if_then(b.icmp_unsigned("!=", b.load(gen.use_python), _c(0))):
        b.ret(b.call(gen.py_launch, [target_raw, closure, extent]))
    threads = b.load(gen.num_threads)
    tid = gen.entry_alloca(b, I64)
    gen.count(b, "launches")
    swap = b.cmpxchg(gen.busy, _c(0, I32), _c(1, I32), "acquire", "monotonic")
    with b.if_then(b.not_(b.extract_value(swap, 1))):
        gen.count(b, "serial_pool_busy")
        b.call(target, [_c(0), extent, closure])  # a launch is running: run serially
        b.ret(_c(0, I32))

    def smaller(x: ir.Value, y: ir.Value) -> ir.Value:
        return b.select(b.icmp_signed("<", x, y), x, y)

    # Start workers up to threads - 1 (capped by the slots).
    want = b.sub(smaller(threads, _c(MAX_WORKERS)), _c(1))
    start = fn.append_basic_block("start_workers")
    create = fn.append_basic_block("create")
    started = fn.append_basic_block("started")
    b.branch(start)
    b.position_at_end(start)
    have = b.load(gen.nworkers)
    b.cbranch(b.icmp_signed("<", have, want), create, started)
    b.position_at_end(create)
    worker = b.bitcast(gen.worker, gen.pthread_create.args[2].type)
    index = b.add(have, _c(1))
    status = b.call(
        gen.pthread_create, [tid, ir.Constant(PTR, None), worker, b.inttoptr(index, PTR)]
    )
    ok = b.icmp_signed("==", status, _c(0, I32))
    with b.if_then(ok):
        b.call(gen.pthread_detach, [b.load(tid)])
        b.store(index, gen.nworkers)
    b.cbranch(ok, start, started)  # a failure means fewer helpers, not an error
    b.position_at_end(started)
    helpers = smaller(smaller(b.load(gen.nworkers), want), b.sub(extent, _c(1)))
    # Adaptive: wake no more helpers than there are idle CPUs right now, and none while
    # backing off after a stall.
    clock = gen.entry_alloca(b, ir.ArrayType(I64, 2))
    clock_slot = b.bitcast(clock, I64.as_pointer())
    adaptive = b.icmp_unsigned("!=", b.load(gen.adaptive), _c(0))
    measure = fn.append_basic_block("measure")
    gated = fn.append_basic_block("gated")
    ungated = b.block
    b.cbranch(b.and_(adaptive, b.icmp_signed(">", helpers, _c(0))), measure, gated)
    b.position_at_end(measure)
    backing_off = b.icmp_signed("<", gen.now(b, clock_slot), b.load(gen.serial_until))
    idle = b.select(backing_off, _c(0), b.call(gen.idle_cpus, []))
    limited = smaller(helpers, idle)
    reason = b.select(
        backing_off,
        _c(STAT_NAMES.index("serial_backoff")),
        _c(STAT_NAMES.index("serial_no_idle_cpu")),
    )
    b.branch(gated)
    b.position_at_end(gated)
    chosen = b.phi(I64)
    chosen.add_incoming(helpers, ungated)
    chosen.add_incoming(limited, measure)
    why = b.phi(I64)
    why.add_incoming(_c(STAT_NAMES.index("serial_small")), ungated)
    why.add_incoming(reason, measure)
    helpers = chosen
    with b.if_then(b.icmp_signed("<=", helpers, _c(0))):
        # Every other core is busy (or one iteration): the caller does it all.
        gen.count(b, why)
        b.call(target, [_c(0), extent, closure])
        gen.store(b, _c(0, I32), gen.busy, "release")
        b.ret(_c(0, I32))
    gen.count(b, "parallel")
    gen.store(b, b.call(gen.sched_getcpu, []), gen.launcher_cpu, "monotonic")
    # GRAIN chunks per participant (never more than iterations), claimed dynamically.
    total = smaller(extent, b.mul(b.add(helpers, _c(1)), _c(GRAIN)))
    b.store(target_raw, gen.task_fn)
    b.store(closure, gen.task_closure)
    b.store(extent, gen.task_extent)
    gen.store(b, _c(0, I32), gen.finished)
    gen.store(b, _c(0, I32), gen.launcher_sleeping)
    epoch = b.add(b.lshr(gen.load(b, gen.claim), _c(32)), _c(1))
    gen.store(b, b.or_(b.shl(epoch, _c(32)), b.shl(total, _c(16))), gen.claim)
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
    seq_ptr = gen.slot(b, gen.seq, k)
    b.atomic_rmw("add", seq_ptr, _c(1, I32), "seq_cst")
    flag_ptr = gen.slot(b, gen.sleeping, k)
    with b.if_then(b.icmp_unsigned("!=", gen.load(b, flag_ptr), _c(0, I32))):
        # Awake from now on for the idle count, though its CPU may take a while to run it.
        gen.store(b, _c(0, I32), flag_ptr)
        gen.futex_call(b, seq_ptr, _FUTEX_WAKE_PRIVATE, _c(1, I32))
    k.add_incoming(b.add(k, _c(1)), b.block)
    b.branch(head)
    b.position_at_end(run)
    b.call(gen.run_chunks, [_c(0)])
    chunks = b.trunc(total, I32)
    gen.spin_wait(
        b,
        fn,
        lambda bb: bb.icmp_unsigned("==", gen.load(bb, gen.finished, "acquire"), chunks),
        gen.finished,
        gen.launcher_sleeping,
        "join",
    )
    with b.if_then(adaptive):
        # A stall: a helper lost its core in the middle of a chunk of this launch (or of
        # an earlier one since the last check), which this launch may have waited for.
        stalled = b.icmp_unsigned(
            "!=", b.atomic_rmw("xchg", gen.helper_stalled, _c(0, I32), "monotonic"), _c(0, I32)
        )
        joined = gen.now(b, clock_slot)
        backoff = b.load(gen.backoff)
        with b.if_else(stalled) as (on_stall, clean):
            with on_stall:
                doubled = b.mul(backoff, _c(2))
                doubled = b.select(
                    b.icmp_signed("<", doubled, _c(BACKOFF_MIN_NS)), _c(BACKOFF_MIN_NS), doubled
                )
                doubled = b.select(
                    b.icmp_signed(">", doubled, _c(BACKOFF_MAX_NS)), _c(BACKOFF_MAX_NS), doubled
                )
                b.store(doubled, gen.backoff)
                b.store(b.add(joined, doubled), gen.serial_until)
                gen.count(b, "stalls")
            with clean:
                b.store(b.ashr(backoff, _c(1)), gen.backoff)
    gen.store(b, _c(0, I32), gen.busy, "release")
    b.ret(_c(0, I32))
