"""The ``topk`` kernel for a small ``k``: one scan of the line keeping the best ``k`` so far.

The best ``k`` elements seen so far sit sorted in a ``local`` array (with their indices). Each
element of the line is compared with the current ``k``-th best and, in the common case that
it does not beat it, rejected at once: a line of ``n`` costs about ``n`` comparisons, against
``n log n`` for sorting it. An element that does beat it is inserted by a branch-free network
over the ``k`` slots (slot ``i`` keeps its element, takes the new one, or takes its left
neighbour's), so the array stays sorted. An element only enters ahead of the ones strictly
after it, so equal keys keep the lowest indices first: exactly the first ``k`` of the stable
sort, as the sorting kernel gives. NaN is the greatest value (:func:`before_rule`).

The worst case (every element enters: a line sorted the wrong way) costs ``k`` steps per
element, so :data:`SELECT_MAX_K` bounds ``k``; larger ones sort the line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from relaxvm.ir import PrimExpr, Var
from relaxvm.ir import op as sop
from relaxvm.ir.tir import Allocate, Buffer, BufferStore, IfThenElse, Stmt, seq
from relaxvm.runtime.dtype import DataType

from .sort_tir import I64, Segment, before_rule, i64, let, loop

__all__ = ["SELECT_MAX_K", "select_line"]

#: Largest ``k`` that ``topk`` selects by insertion instead of sorting the line.
SELECT_MAX_K = 32


def _lets(names: list[str], values: Sequence[PrimExpr], body: Callable[[list[Var]], Stmt]) -> Stmt:
    """``body(vars)`` with each ``names[i] = values[i]`` bound once."""
    bound: list[Var] = []

    def nest(index: int) -> Stmt:
        if index == len(values):
            return body(bound)

        def inner(var: Var) -> Stmt:
            bound.append(var)
            return nest(index + 1)

        return let(names[index], values[index], inner)

    return nest(0)


def select_line(
    read: Callable[[PrimExpr], PrimExpr],
    n: PrimExpr,
    dtype: DataType,
    largest: bool,
    k: int,
    finish: Callable[[list[Segment]], Stmt],
) -> Stmt:
    """The first ``k`` (``1 <= k <= SELECT_MAX_K``) of the stable sort of one line
    (descending when ``largest``): ``finish`` gets them as one segment of ``min(n, k)``."""
    before = before_rule(dtype, largest)
    best = Buffer("best", [k], dtype, scope="local")
    best_index = Buffer("best_index", [k], I64, scope="local")

    def insert(j: Var, x: Var) -> Stmt:
        def network(old: list[Var]) -> Stmt:
            values, indices = old[:k], old[k:]
            # after[i]: the new element goes at slot i or before it. Slots from j on are
            # still empty (the first k elements fill them), and everything goes before them.
            after = [sop.logical_or(sop.less_equal(j, i), before(x, values[i])) for i in range(k)]

            def stores(flags: list[Var]) -> Stmt:
                out: list[Stmt] = []
                for i in range(k):
                    keep_value = sop.select(flags[i], x, values[i])
                    keep_index = sop.select(flags[i], j, indices[i])
                    if i:
                        keep_value = sop.select(flags[i - 1], values[i - 1], keep_value)
                        keep_index = sop.select(flags[i - 1], indices[i - 1], keep_index)
                    out.append(BufferStore(best, keep_value, [i64(i)]))
                    out.append(BufferStore(best_index, keep_index, [i64(i)]))
                return seq(*out)

            return _lets([f"at{i}" for i in range(k)], after, stores)

        olds = [best[i64(i)] for i in range(k)] + [best_index[i64(i)] for i in range(k)]
        names = [f"v{i}" for i in range(k)] + [f"ix{i}" for i in range(k)]
        return _lets(names, olds, network)

    def scan(j: Var) -> Stmt:
        def body(x: Var) -> Stmt:
            # The k-th best is only compared once there are k (the branch is rarely taken).
            enters = sop.logical_or(sop.less(j, k), before(x, best[i64(k - 1)]))
            return IfThenElse(enters, insert(j, x))

        return let("x", read(j), body)

    # Zeros first: the empty slots are read (and ignored) by the first insertions.
    clear = [
        seq(
            BufferStore(best, sop.const(0, dtype), [i64(i)]),
            BufferStore(best_index, i64(0), [i64(i)]),
        )
        for i in range(k)
    ]
    result = Segment(i64(0), sop.min_expr(n, i64(k)), lambda t: best[t], lambda t: best_index[t])
    body = seq(*clear, loop("j", n, scan), finish([result]))
    return Allocate(best, Allocate(best_index, body))
