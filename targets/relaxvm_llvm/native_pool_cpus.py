"""The native pool's reading of the machine's CPUs, as LLVM IR (see :mod:`.native_pool`).

Two questions the pool asks the operating system, kept apart from the pool's protocol:

* :func:`build_idle_cpus`: how many CPUs have nothing runnable on them besides the launching
  thread (``/proc/loadavg``'s count of runnable threads, less the pool's own awake helpers),
  which the launcher wakes helpers for;
* :func:`off_launcher_cpu`: whether a helper that spins on the launching thread's CPU can move
  off it (by dropping that CPU from its own affinity), or should sleep instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import llvmlite.ir as ir

from .native_pool import AFFINITY_WORDS, I32, I64, MAX_WORKERS, PTR, _c

if TYPE_CHECKING:
    from .native_pool import _Builder

__all__ = ["build_idle_cpus", "off_launcher_cpu"]

_O_RDONLY = 0
_O_CLOEXEC = 0o2000000  # the same on x86-64 and AArch64


def off_launcher_cpu(
    gen: _Builder, b: ir.IRBuilder, allowed: ir.Value, scratch: ir.Value, excluded: ir.Value
) -> ir.Value:
    """Whether this helper may keep spinning: an i1, true unless it shares the last
    launcher's CPU and cannot leave it.

    A helper that spins (or is woken) on the launcher's CPU only takes turns with it, and
    a scheduler may leave the two there while another CPU idles (seen on virtual
    machines, where the futex wake-up placed the helper beside its waker and preempted
    it). Such a helper drops the launcher's CPU from its own affinity (``allowed``, the
    CPUs it started with, less that one), which moves it at once; where that fails it
    sleeps instead.
    """
    here = b.call(gen.sched_getcpu, [])
    launcher = gen.load(b, gen.launcher_cpu, "monotonic")
    beside = b.icmp_signed("==", here, launcher)
    result = gen.entry_alloca(b, ir.IntType(1))
    b.store(ir.Constant(ir.IntType(1), 1), result)
    with b.if_then(beside):
        in_mask = b.and_(
            b.icmp_signed(">=", launcher, _c(0, I32)),
            b.icmp_signed("<", launcher, _c(AFFINITY_WORDS * 64, I32)),
        )
        fresh = b.icmp_signed("!=", launcher, b.load(excluded))
        b.store(ir.Constant(ir.IntType(1), 0), result)
        with b.if_then(b.and_(in_mask, fresh)):
            for word in range(AFFINITY_WORDS):
                source = b.gep(allowed, [_c(0, I32), _c(word, I32)])
                b.store(b.load(source), b.gep(scratch, [_c(0, I32), _c(word, I32)]))
            cpu = b.zext(launcher, I64)
            word_ptr = b.gep(scratch, [_c(0, I32), b.lshr(cpu, _c(6))])
            bit = b.shl(_c(1), b.and_(cpu, _c(63)))
            b.store(b.and_(b.load(word_ptr), b.xor(bit, _c(-1))), word_ptr)
            status = b.call(
                gen.sched_setaffinity,
                [_c(0, I32), _c(AFFINITY_WORDS * 8), b.bitcast(scratch, PTR)],
            )
            moved = b.icmp_signed("==", status, _c(0, I32))
            with b.if_then(moved):
                b.store(launcher, excluded)
            b.store(moved, result)
    return b.load(result)


def build_idle_cpus(gen: _Builder) -> None:
    """CPUs with nothing runnable on them besides the caller, from ``/proc/loadavg``.

    The fourth field is ``running/total``: the threads runnable on the whole machine right
    now (the caller and this pool's awake workers included). Returns ``MAX_WORKERS`` when
    the file cannot be read, so the pool then behaves as if every core were free.
    """
    fn = gen.idle_cpus
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    unknown = _c(MAX_WORKERS)
    size = 64
    buf = b.alloca(ir.ArrayType(ir.IntType(8), size))
    fd = b.load(gen.load_fd)
    with b.if_then(b.icmp_signed("==", fd, _c(-2, I32))):
        path = b.bitcast(gen.load_path, PTR)
        opened = b.call(gen.open, [path, _c(_O_RDONLY | _O_CLOEXEC, I32)])
        opened = b.select(b.icmp_signed("<", opened, _c(0, I32)), _c(-1, I32), opened)
        b.store(opened, gen.load_fd)
    fd = b.load(gen.load_fd)
    with b.if_then(b.icmp_signed("<", fd, _c(0, I32))):
        b.ret(unknown)
    data = b.bitcast(buf, PTR)
    got = b.call(gen.pread, [fd, data, _c(size), _c(0)])
    with b.if_then(b.icmp_signed("<=", got, _c(0))):
        b.ret(unknown)
    # Skip three fields (three spaces), then read the digits of "running".
    entry = b.block
    scan = fn.append_basic_block("scan")
    scan_next = fn.append_basic_block("scan_next")
    digits = fn.append_basic_block("digits")
    digit_next = fn.append_basic_block("digit_next")
    finish = fn.append_basic_block("finish")
    b.branch(scan)
    b.position_at_end(scan)
    pos = b.phi(I64)
    spaces = b.phi(I64)
    pos.add_incoming(_c(0), entry)
    spaces.add_incoming(_c(0), entry)
    more = b.and_(b.icmp_signed("<", pos, got), b.icmp_signed("<", spaces, _c(3)))
    b.cbranch(more, scan_next, digits)
    b.position_at_end(scan_next)
    char = b.load(b.gep(data, [pos]))
    is_space = b.icmp_unsigned("==", char, _c(ord(" "), ir.IntType(8)))
    spaces.add_incoming(b.add(spaces, b.zext(is_space, I64)), scan_next)
    pos.add_incoming(b.add(pos, _c(1)), scan_next)
    b.branch(scan)
    b.position_at_end(digits)
    at = b.phi(I64)
    value = b.phi(I64)
    at.add_incoming(pos, scan)
    value.add_incoming(_c(0), scan)
    in_range = b.icmp_signed("<", at, got)
    safe = b.select(in_range, at, _c(0))
    char = b.load(b.gep(data, [safe]))
    digit = b.sub(b.zext(char, I64), _c(ord("0")))
    is_digit = b.and_(in_range, b.icmp_unsigned("<", digit, _c(10)))
    b.cbranch(is_digit, digit_next, finish)
    b.position_at_end(digit_next)
    at.add_incoming(b.add(at, _c(1)), digit_next)
    value.add_incoming(b.add(b.mul(value, _c(10)), digit), digit_next)
    b.branch(digits)
    b.position_at_end(finish)
    with b.if_then(b.icmp_signed("<=", value, _c(0))):
        b.ret(unknown)  # not the format we know
    # This pool's workers that are not asleep (a flag the launcher clears when it wakes
    # one, so a helper that is waking up, runnable but not yet running, counts as ours).
    count_entry = b.block
    count_loop = fn.append_basic_block("count_awake")
    count_done = fn.append_basic_block("counted")
    workers = b.load(gen.nworkers)
    b.cbranch(b.icmp_signed(">=", workers, _c(1)), count_loop, count_done)
    b.position_at_end(count_loop)
    k = b.phi(I64)
    tally = b.phi(I64)
    k.add_incoming(_c(1), count_entry)
    tally.add_incoming(_c(0), count_entry)
    flag = gen.load(b, gen.slot(b, gen.sleeping, k), "monotonic")
    following = b.add(tally, b.zext(b.icmp_unsigned("==", flag, _c(0, I32)), I64))
    k.add_incoming(b.add(k, _c(1)), count_loop)
    tally.add_incoming(following, count_loop)
    b.cbranch(b.icmp_signed("<", k, workers), count_loop, count_done)
    b.position_at_end(count_done)
    awake = b.phi(I64)
    awake.add_incoming(_c(0), count_entry)
    awake.add_incoming(following, count_loop)
    # Runnable threads that are neither the caller nor this pool's own awake workers.
    others = b.sub(b.sub(value, _c(1)), awake)
    others = b.select(b.icmp_signed("<", others, _c(0)), _c(0), others)
    idle = b.sub(b.sub(b.load(gen.online_cpus), _c(1)), others)
    b.ret(b.select(b.icmp_signed("<", idle, _c(0)), _c(0), idle))
