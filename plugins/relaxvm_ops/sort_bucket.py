"""The bucket sort of float lines without indices (``sort``), tried before the merge sort.

The merge sort of :mod:`.sort_kernels` costs ``log2(n / RUN)`` passes of dependent,
branch-free steps. Most lines of real numbers (normal, uniform, ...) spread evenly enough
over their range that one stable distribution pass does nearly all of it:

1. the range ``[lo, hi]`` of the line's numbers (after the NaN split, so there are none);
2. each number's bucket ``min(floor((x - lo) * B / (hi - lo)), B - 1)`` of :func:`bucket_count`
   (``B - 1 - bucket`` descending), in float64, stored, and their histogram: the map is
   non-decreasing in ``x`` (a subtraction and a product by a positive constant, each
   correctly rounded, then a floor), so a lower bucket never holds a later element;
3. bucket starts (an exclusive prefix sum), then a stable scatter of the numbers into the
   second half of the scratch by their stored buckets;
4. rounds of odd-even transposition over the whole line (neighbours exchanged on strict
   inversions only), as many as the largest bucket holds: neighbours in two buckets are
   never inverted, so each bucket is sorted on its own, ``c`` rounds sorting ``c``
   elements, and a round is one vectorized loop;
5. a check that the result is sorted.

Each step keeps equal keys in their original order (the scatter is in order, the exchanges
strict), so the sort stays stable (``-0.0`` and ``0.0`` land in one bucket and keep their
order). The path is taken only when the range and its inverse are finite (not empty) and no
bucket holds more than :data:`ROUNDS` elements (the rounds cost ``ROUNDS * n / 2`` exchanges
at most); any other line (a constant one, an infinity, a skewed spread) goes to the merge
sort, having paid a range and histogram pass.

Why the buckets are stored and the result checked: the target compiles the float arithmetic
with its fast-math flags, and two loops computing the same bucket need not agree (seen with
float16 on llvm: a histogram and a scatter that disagree lose elements). Stored, the
histogram and the scatter agree by construction; the check sends a line whose buckets came
out of order anyway to the merge sort, whose input (the first half) is untouched.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from relaxvm.ir import IntImm, PrimExpr, Var
from relaxvm.ir import op as sop
from relaxvm.ir.tir import Allocate, Buffer, BufferStore, IfThenElse, Stmt, seq

from .sort_tir import I64, Line, Scalars, bind, i64, let, loop

__all__ = ["BUCKET_MIN_LENGTH", "ROUNDS", "bucket_count", "bucket_sort"]

#: The most buckets per line (the counts stay in L2 next to the line).
_MOST_BUCKETS = 8192


def bucket_count(n: int) -> int:
    """Buckets for a line of ``n``: about two elements per bucket, a power of two from 128
    to 8192."""
    return min(_MOST_BUCKETS, max(128, 1 << max(n // 2 - 1, 1).bit_length()))


#: The shortest static line that tries the bucket sort.
BUCKET_MIN_LENGTH = 256
#: The most elements a bucket may hold (the rounds of odd-even transposition).
ROUNDS = 32

_F64 = "float64"
_B = "int32"


def bucket_sort(
    line: Line, descending: bool, exchange: Callable[[PrimExpr], Stmt]
) -> tuple[Stmt, PrimExpr, Stmt, Callable[[Stmt], Stmt]]:
    """``(prepare, taken, sort, scoped)``: ``prepare`` computes the histogram when the range
    allows; ``taken`` (a bool) says whether ``sort`` is to run; ``sort`` leaves the ``m``
    numbers sorted in the second half of ``keys`` (from ``n``); ``scoped(body)`` allocates
    the scratch around a body holding all three. ``exchange(low)`` swaps ``keys`` at ``low``
    and ``low + 1`` if strictly inverted (branch-free)."""
    n, m, keys = line.n, line.m, line.keys
    assert isinstance(n, IntImm), "the bucket sort needs a static line length"
    buckets = bucket_count(int(n.value))
    count = Buffer("bucket_count", [buckets], I64)
    # Each number's bucket, computed once: the histogram and the scatter must agree.
    of = Buffer("bucket_of", [n], _B)
    span = Scalars("span", _F64, ["lo", "hi"])
    sums = Scalars("sums", I64, ["total", "most", "taken"])

    def key(k: PrimExpr) -> PrimExpr:
        return sop.cast(keys[k], _F64)

    def bucket(x: PrimExpr, scale: PrimExpr) -> PrimExpr:
        # x >= lo, so the product is >= 0 and the cast (a truncation) is a floor; clamped on
        # both sides all the same, so no float result can index past the counts.
        raw = sop.cast(sop.mul(sop.sub(x, span["lo"]), scale), I64)
        up = sop.max_expr(sop.min_expr(raw, i64(buckets - 1)), i64(0))
        return sop.sub(i64(buckets - 1), up) if descending else up

    def ranges(k: Var) -> Stmt:
        return let(
            "x",
            key(k),
            lambda x: seq(
                # Plain selects: there is no NaN here, and min/max would test for it.
                span.set("lo", sop.select(sop.less(x, span["lo"]), x, span["lo"])),
                span.set("hi", sop.select(sop.greater(x, span["hi"]), x, span["hi"])),
            ),
        )

    def histogram(scale: PrimExpr) -> Stmt:
        def add(k: Var) -> Stmt:
            return let(
                "b",
                bucket(key(k), scale),
                lambda b: seq(
                    BufferStore(count, sop.add(count[b], 1), [b]),
                    BufferStore(of, sop.cast(b, _B), [k]),
                ),
            )

        def start(b: Var) -> Stmt:
            return let(
                "c",
                count[b],
                lambda c: seq(
                    BufferStore(count, sums["total"], [b]),
                    sums.add("total", c),
                    sums.set("most", sop.max_expr(sums["most"], c)),
                ),
            )

        return seq(
            loop("b", i64(buckets), lambda b: BufferStore(count, i64(0), [b])),
            loop("k", m, add),
            sums.set("total", i64(0)),
            sums.set("most", i64(0)),
            loop("b", i64(buckets), start),
            sums.set(
                "taken",
                sop.cast(sop.less_equal(sums["most"], ROUNDS), I64),
            ),
        )

    def scale_of() -> PrimExpr:
        return sop.true_div(sop.const(float(buckets), _F64), sop.sub(span["hi"], span["lo"]))

    def with_scale(body: Callable[[PrimExpr], Stmt]) -> Stmt:
        return let("scale", scale_of(), body)

    # A finite width and a finite scale (so not an empty width either, nor one so small its
    # inverse overflows): then every (x - lo) * scale is a finite number in [0, B (1 + eps)].
    infinity = sop.const(math.inf, _F64)
    finite = sop.logical_and(
        sop.less(sop.sub(span["hi"], span["lo"]), infinity), sop.less(scale_of(), infinity)
    )
    prepare = seq(
        sums.set("taken", i64(0)),
        IfThenElse(
            sop.greater(m, 1),
            seq(
                span.set("lo", key(i64(0))),
                span.set("hi", key(i64(0))),
                loop("k", m, ranges),
                IfThenElse(finite, with_scale(histogram)),
            ),
        ),
    )

    def scatter() -> Stmt:
        def place(k: Var) -> Stmt:
            return bind(
                [
                    ("x", lambda v: keys[k]),
                    ("b", lambda v: sop.cast(of[k], I64)),
                    ("at", lambda v: count[v["b"]]),
                ],
                lambda v: seq(
                    *line.store(sop.add(n, v["at"]), v["x"], None),
                    BufferStore(count, sop.add(v["at"], 1), [v["b"]]),
                ),
            )

        return loop("k", m, place)

    def transposition(r: Var) -> Stmt:
        # Round r of odd-even transposition over the whole scattered line: neighbours
        # (p, p + 1) with p of r's parity exchanged if strictly inverted. Neighbours of two
        # buckets are never inverted, so each bucket is sorted on its own, and c rounds sort
        # c elements; a round is one vectorized loop.
        parity = sop.floormod(r, 2)
        pairs = sop.floordiv(sop.sub(m, parity), 2)
        return loop("h", pairs, lambda h: exchange(sop.add(n, sop.add(sop.mul(h, 2), parity))))

    def check(k: Var) -> Stmt:
        at = sop.add(n, k)
        inverted = line.before(keys[sop.add(at, 1)], keys[at])
        return sums.add("taken", sop.neg(sop.cast(inverted, I64)))

    # The output is checked sorted, and any line that is not goes to the merge sort (its
    # input, the first half, is still there): the buckets come from float arithmetic that
    # the target may compile differently in two loops (fast-math), so only the check makes
    # the result not depend on it.
    sort = seq(
        scatter(),
        loop("r", sums["most"], transposition),
        loop("k", sop.sub(m, 1), check),
    )
    taken = sop.equal(sums["taken"], i64(1))

    def scoped(body: Stmt) -> Stmt:
        for buffer in (span.buffer, sums.buffer, count, of):
            body = Allocate(buffer, body)
        return body

    return prepare, taken, sort, scoped
