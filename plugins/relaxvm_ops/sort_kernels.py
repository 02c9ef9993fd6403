"""The line sort of the sorting kernels: a stable merge sort of one line, in TIR.

:func:`sort_line` sorts the ``n`` elements ``read(0) ... read(n - 1)`` of one line and hands
the result to the caller as :class:`~.sort_tir.Segment` s (stretches of the sorted output,
with the element and its original index at each position). The phases, each a loop nest:

1. **NaN split** (float dtypes only): the numbers are packed to the front of ``keys`` (with
   their indices in ``order``), the NaNs to the back in reverse. NaN sorts last ascending and
   first descending, always in its original order, so it never takes part in a comparison:
   every later comparison is a plain ``<`` (``>`` descending), one instruction instead of
   three.
2. **Runs**: every block of :data:`RUN` elements is loaded into a ``local`` array (registers:
   every index is a constant), sorted by an odd-even transposition network, which exchanges
   neighbours only and only on a strict inversion (stable), and stored back. LLVM vectorizes
   the loop over blocks (eight blocks per vector). The short last block is sorted in memory
   by the same neighbour exchanges.
3. **Merges** (:mod:`.sort_merge`): bottom-up passes merge neighbouring runs between the two
   halves of ``keys``/``order`` (ping-pong, passes in pairs, so the result ends in the first
   half) with branch-free steps, several independent chains per loop step.

For ``sort`` of a float line of static length at least
:data:`~.sort_bucket.BUCKET_MIN_LENGTH` (no indices), phases 2 and 3 are first tried as a
bucket sort (:mod:`.sort_bucket`) over the numbers the NaN split left; a line it does not
suit, or that it fails to sort, takes the merge sort.

The sort is stable: merges take the left run's element on ties, the runs' network swaps only
strict inversions, and the NaN split keeps NaNs in order. Indices are carried only when the
caller wants them (``order_dtype``; ``sort`` carries none). Cost per line: ``O(n)`` for each
phase plus ``ceil(log2(n / RUN))`` merge passes of ``O(n)``, none with a data-dependent branch
(the NaN split's branch is only taken by NaNs). Scratch: ``2n`` keys (and ``2n`` indices when
wanted); the target places it (the llvm target: on the stack when small and static, else
heap).
"""

from __future__ import annotations

from collections.abc import Callable

from relaxvm.ir import IntImm, PrimExpr, Var
from relaxvm.ir import op as sop
from relaxvm.ir.dtype import is_float_dtype
from relaxvm.ir.tir import (
    Allocate,
    Buffer,
    BufferStore,
    IfThenElse,
    Stmt,
    seq,
)
from relaxvm.runtime.dtype import DataType

from .sort_bucket import BUCKET_MIN_LENGTH, bucket_sort
from .sort_merge import RUN, merge_passes
from .sort_tir import I64, Expr, Line, Scalars, Segment, bind, i64, let, loop

__all__ = ["RUN", "sort_line"]


def _nan_split(line: Line, counts: Scalars) -> Stmt:
    """Numbers to the front of ``keys`` in order, NaNs to the back in reverse order."""
    n = line.n

    def body(k: Var) -> Stmt:
        def place(x: Var) -> Stmt:
            back = sop.sub(sop.sub(n, 1), counts["g"])
            return IfThenElse(
                sop.equal(x, x),
                seq(*line.store(counts["m"], x, k), counts.add("m", i64(1))),
                seq(*line.store(back, x, k), counts.add("g", i64(1))),
            )

        return let("x", line.read(k), place)

    return seq(counts.set("m", i64(0)), counts.set("g", i64(0)), loop("k", n, body))


def _exchange(
    line: Line, key: Callable[[PrimExpr], PrimExpr], index: Callable[[PrimExpr], PrimExpr] | None,
    store: Callable[[PrimExpr, PrimExpr, PrimExpr | None], list[Stmt]], low: PrimExpr,
) -> Stmt:  # fmt: skip
    """Swap neighbours ``low`` and ``low + 1`` if strictly inverted (so equal keys keep their
    order); branch-free."""
    high = sop.add(low, 1)

    def swap(v: dict[str, Var]) -> Stmt:
        a, b, inverted = v["a"], v["b"], v["inverted"]
        ia = ib = None
        if index is not None:
            ia, ib = sop.select(inverted, v["ib"], v["ia"]), sop.select(inverted, v["ia"], v["ib"])
        return seq(
            *store(low, sop.select(inverted, b, a), ia),
            *store(high, sop.select(inverted, a, b), ib),
        )

    steps: list[tuple[str, Callable[[dict[str, Var]], PrimExpr]]] = [
        ("a", lambda v: key(low)),
        ("b", lambda v: key(high)),
        ("inverted", lambda v: line.before(v["b"], v["a"])),
    ]
    if index is not None:
        steps += [("ia", lambda v: index(low)), ("ib", lambda v: index(high))]
    return bind(steps, swap)


def _run_network(line: Line, base: PrimExpr) -> Stmt:
    """Sort the ``RUN`` elements from ``base`` in registers, stored to ``keys``/``order``."""
    reg = Buffer("run", [RUN], line.dtype, scope="local")
    regi = None
    if line.order is not None:
        regi = Buffer("run_order", [RUN], line.order.dtype, scope="local")

    def key(e: PrimExpr) -> PrimExpr:
        return reg[e]

    def index(e: PrimExpr) -> PrimExpr:
        assert regi is not None
        return regi[e]

    def store(e: PrimExpr, value: PrimExpr, position: PrimExpr | None) -> list[Stmt]:
        stores: list[Stmt] = [BufferStore(reg, value, [e])]
        if regi is not None and position is not None:
            stores.append(BufferStore(regi, position, [e]))
        return stores

    loads: list[Stmt] = []
    stores: list[Stmt] = []
    for e in range(RUN):
        at = sop.add(base, e)
        loads += store(i64(e), line.key_at(at), line.index_at(at) if regi else None)
        stores += line.store(at, reg[i64(e)], regi[i64(e)] if regi else None)
    # Odd-even transposition: RUN rounds exchanging neighbours (0, 1), (2, 3) ... then
    # (1, 2), (3, 4) ...: an insertion sort's exchanges, but those of a round are independent
    # (the network is RUN deep, not 2 RUN). LLVM vectorizes the loop over runs around it.
    network = [
        _exchange(line, key, index if regi else None, store, i64(i))
        for r in range(RUN)
        for i in range(r % 2, RUN - 1, 2)
    ]
    body = Allocate(reg, seq(*loads, *network, *stores))
    return body if regi is None else Allocate(regi, body)


def _short_run(line: Line, base: PrimExpr, count: PrimExpr) -> Stmt:
    """Sort the ``count < RUN`` elements from ``base`` in memory: insertion by neighbour
    exchanges, element ``j`` sinking through the ``j`` before it (no early exit)."""

    def index(at: PrimExpr) -> PrimExpr:
        assert line.order is not None
        return line.order[at]

    def load(k: Var) -> Stmt:
        at = sop.add(base, k)
        return seq(*line.store(at, line.key_at(at), line.index_at(at) if line.order else None))

    def sink(j: Var) -> Stmt:
        def step(t: Var) -> Stmt:
            low = sop.sub(sop.add(base, j), sop.add(t, 1))
            return _exchange(
                line, lambda k: line.keys[k], index if line.order else None, line.store, low
            )

        return loop("t", j, step)

    copy = seq() if line.split else loop("k", count, load)
    return seq(copy, loop("j", count, sink))


def _runs(line: Line) -> Stmt:
    """Phase 2: every block of ``RUN`` numbers sorted; the last block may be short."""
    n, m = line.n, line.m
    if isinstance(n, IntImm) and n.value < RUN:
        return _short_run(line, i64(0), m)
    full = sop.floordiv(m, RUN)
    tail = sop.mul(full, RUN)
    return seq(
        loop("r", full, lambda r: _run_network(line, sop.mul(r, RUN))),
        _short_run(line, tail, sop.sub(m, tail)),
    )


def sort_line(
    read: Expr,
    n: PrimExpr,
    dtype: DataType,
    descending: bool,
    order_dtype: str | None,
    finish: Callable[[list[Segment]], Stmt],
) -> Stmt:
    """Sort one line stably: ``read(k)`` for ``k < n`` (int64 ``n``). ``finish(segments)``
    writes the result; indices are kept (as ``order_dtype``) only when given."""
    split = is_float_dtype(dtype)
    merges = not isinstance(n, IntImm) or int(n.value) > RUN
    size = sop.mul(n, 2) if merges else n
    keys = Buffer("keys", [size], dtype)
    order = None if order_dtype is None else Buffer("order", [size], order_dtype)
    counts = Scalars("counts", I64, ["m", "g"])
    heads = Scalars("heads", I64, [f"{h}{c}" for c in "01" for h in ("i", "j", "ib", "jb")])
    width = Scalars("width", I64, ["w"])
    strict = sop.greater if descending else sop.less
    line = Line(read, n, dtype, strict, keys, order, counts["m"] if split else n, split)

    def index(at: Callable[[PrimExpr], PrimExpr]) -> Expr:
        if order is None:
            return lambda t: i64(0)
        return lambda t: sop.cast(order[at(t)], I64)

    def nan_at(t: PrimExpr) -> PrimExpr:
        return sop.sub(sop.sub(n, 1), t)

    numbers = Segment(i64(0), line.m, lambda t: keys[t], index(lambda t: t))
    segments = [numbers]
    if split:
        nan_count = counts["g"]
        nans = Segment(i64(0), nan_count, lambda t: keys[nan_at(t)], index(nan_at))
        if descending:
            segments = [nans, Segment(nan_count, line.m, numbers.value, numbers.index)]
        else:
            segments = [numbers, Segment(line.m, nan_count, nans.value, nans.index)]
    merge_sort = seq(
        _runs(line), merge_passes(line, heads, width) if merges else seq(), finish(segments)
    )
    if split and order is None and isinstance(n, IntImm) and n.value >= BUCKET_MIN_LENGTH:
        # Floats without indices (``sort``): the bucket sort first, if the line suits it.
        def exchange(low: PrimExpr) -> Stmt:
            return _exchange(line, lambda k: keys[k], None, line.store, low)

        prepare, taken, bucket, scoped = bucket_sort(line, descending, exchange)
        # The same segments, the numbers read from the second half.
        first, second = segments
        if descending:
            second = Segment(
                second.start, second.count, lambda t: keys[sop.add(n, t)], second.index
            )
        else:
            first = Segment(first.start, first.count, lambda t: keys[sop.add(n, t)], first.index)
        spread = [first, second]
        # `bucket` clears `taken` when its result is not sorted: then the merge sort runs.
        merge_sort = scoped(
            seq(
                prepare,
                IfThenElse(taken, bucket),
                IfThenElse(taken, finish(spread), merge_sort),
            )
        )
    body = seq(_nan_split(line, counts) if split else seq(), merge_sort)
    for buffer in (width.buffer, heads.buffer, counts.buffer, *([order] if order else []), keys):
        body = Allocate(buffer, body)
    return body
