"""The index check shared by the ops that index with user data (``take``, gather, scatter).

A kernel that reads ``x[indices[i]]`` must never read outside ``x`` because of a value the
user passed. :func:`checked_index_loops` writes the loop nest of such a kernel so that the check
costs no extra pass over the indices:

* the outermost loop is split into :data:`CHECK_CHUNKS` parallel parts; each part keeps the
  largest "key" of the indices it has read (the wrapped index as an unsigned number: an
  unsigned max reduction that LLVM vectorizes, no branch per element) while it gathers
  with a *clamped* index (an index out of range reads element 0, never outside the buffer);
* after the parts, one comparison of the largest key against the limit decides whether
  anything was out of range; only then a serial pass finds the first bad index in
  order and stops the kernel with ``T.check_index``'s error (op, axis, index, valid range),
  exactly as a check per element would. The values written before that are never seen: the
  call raises.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from relaxvm.ir import IntImm, PrimExpr, Var, select
from relaxvm.ir import op as sop
from relaxvm.ir.tir import (
    Allocate,
    Buffer,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    Stmt,
    seq,
)
from relaxvm.ir.tir import intrin as T

from ._kernel import (
    product,
)

__all__ = [
    "CHECK_CHUNKS",
    "Loop",
    "checked_index_loops",
    "index_check_loops",
    "report_bad_index",
]

#: Parallel parts of a checked gather, each with the largest key of the indices it read.
CHECK_CHUNKS = 32
#: Index reads per part below which a nest of known size is split into fewer parts.
MIN_PART_READS = 16384

#: A loop of a nest: its variable and extent (the loop runs from 0).
Loop = tuple[Var, PrimExpr]


def _part_count(loops: Sequence[Loop]) -> int:
    """Parallel parts for a nest: :data:`CHECK_CHUNKS`, or fewer for a known small nest (each
    part ends with a horizontal reduction; a few thousand reads need no split)."""
    if not loops:
        return 1
    reads = product([extent for _, extent in loops])
    if not isinstance(reads, IntImm):
        return CHECK_CHUNKS
    return max(1, min(CHECK_CHUNKS, -(-int(reads.value) // MIN_PART_READS)))


def _nest(body: Stmt, loops: Sequence[Loop], kind: ForKind = ForKind.SERIAL) -> Stmt:
    for var, extent in reversed(loops):
        body = For(var, 0, extent, kind, body)
    return body


def _index_loops(indices: Buffer, last: int | None = None) -> list[Loop]:
    """Loops over every element of ``indices``, or over all but its last axis when ``last``
    (a fixed last coordinate) is given."""
    shape = list(indices.shape) if last is None else list(indices.shape)[:-1]
    return [(Var(f"c{dim}", "int64"), extent) for dim, extent in enumerate(shape)]


def _index_at(loops: Sequence[Loop], last: int | None) -> list[PrimExpr]:
    at: list[PrimExpr] = [var for var, _ in loops]
    return at if last is None else [*at, IntImm("int64", last)]


def checked_index_loops(
    indices: Buffer,
    index_at: Sequence[PrimExpr],
    extent: PrimExpr,
    axis: int,
    op: str,
    loops: Sequence[Loop],
    use: Callable[[Var], Stmt] | None,
    last: int | None = None,
) -> Stmt:
    """A loop nest that reads user indices, checks them and hands each one, wrapped, to ``use``.

    Parameters
    ----------
    indices : Buffer
        The user's index tensor (any integer dtype).
    index_at : sequence of PrimExpr
        Where the nest reads one index, in terms of ``loops``' variables.
    extent : PrimExpr
        The size of the indexed axis: valid indices are ``-extent .. extent-1`` (numpy's).
    axis, op : int, str
        Named by the error (``axis`` is :data:`FLAT_AXIS` for a flattened input; ``op`` one
        of ``INDEX_CHECK_OPS``).
    loops : sequence of (Var, PrimExpr)
        The loops around the read, outermost first; the first is split into parallel parts.
    use : callable or None
        Receives the int64 variable holding the wrapped index, always within ``[0, extent)``
        (0 stands in for a bad one, whose call then fails), and returns the statements using
        it. None makes a check only (:func:`index_check_loops`).

    Returns
    -------
    Stmt
        The nest, then the check of the range it saw. With ``extent == 0`` nothing is gathered
        and any index at all is an error.
    """
    # One unsigned maximum per part decides the range check. A signed index i, wrapped
    # numpy-style (i + extent when negative, which never overflows), is valid iff it lies in
    # [0, extent), that is iff it is below extent as a uint64 (a negative one is huge). An
    # unsigned index is valid iff it is below extent (it must never pass as a negative one).
    signed = not str(indices.dtype).startswith("uint")
    extent = sop.cast(extent, "int64")
    limit = sop.cast(extent, "uint64")

    raw, key = Var("index", "int64" if signed else "uint64"), Var("index_key", "uint64")
    wrapped, safe = Var("wrapped_index", "int64"), Var("safe_index", "int64")
    wrap = select(sop.less(raw, 0), sop.add(raw, extent), raw) if signed else sop.cast(raw, "int64")
    seen = Buffer("index_key_max", [1], "uint64", scope="local")
    zero = IntImm("int64", 0)
    gather: list[Stmt] = []
    if use is not None:
        valid = select(sop.less(key, limit), wrapped, 0)
        gather = [LetStmt(safe, valid, use(safe))]
    read: Stmt = LetStmt(
        raw,
        sop.cast(indices[tuple(index_at)], raw.dtype),
        LetStmt(
            wrapped,
            wrap,
            LetStmt(
                key,
                sop.cast(wrapped, "uint64") if signed else raw,
                seq(BufferStore(seen, sop.max_expr(seen[(zero,)], key), [zero]), *gather),
            ),
        ),
    )

    part = Var("part", "int64")
    parts = _part_count(loops)
    if parts == 1:
        read = _nest(read, loops)
    else:
        (first, outer), rest = loops[0], loops[1:]
        chunk = sop.floordiv(sop.add(outer, parts - 1), parts)
        start = sop.mul(part, chunk)
        rows = sop.max_expr(sop.min_expr(sop.sub(outer, start), chunk), 0)
        read = For(first, start, rows, ForKind.SERIAL, _nest(read, rest))
    maxima = Buffer("index_key_maxima", [CHECK_CHUNKS], "uint64", scope="local")
    scan = For(
        part,
        0,
        parts,
        ForKind.PARALLEL if parts > 1 else ForKind.SERIAL,
        Allocate(
            seen,
            seq(
                BufferStore(seen, IntImm("uint64", 0), [zero]),
                read,
                BufferStore(maxima, seen[(zero,)], [part]),
            ),
        ),
    )
    combine = For(
        part,
        1,
        parts - 1,
        ForKind.SERIAL,
        BufferStore(maxima, sop.max_expr(maxima[(zero,)], maxima[(part,)]), [zero]),
    )
    outside = sop.greater_equal(maxima[(zero,)], limit)
    report = report_bad_index(indices, extent, axis, op, last)
    checked = Allocate(maxima, seq(scan, combine, IfThenElse(outside, report)))
    if isinstance(extent, IntImm):
        return checked if extent.value > 0 else report
    return IfThenElse(sop.greater(extent, 0), checked, report)


def index_check_loops(
    indices: Buffer, extent: PrimExpr, axis: int, op: str, last: int | None = None
) -> Stmt:
    """A check of every element of ``indices`` against ``extent``, to run before a kernel
    that indexes with them: one parallel min/max pass over the indices (then the same report
    as :func:`checked_index_loops`). Worth its extra read where each index moves a whole row
    or is used many times; the kernel after it may keep any schedule. With ``last``, only the
    elements whose last coordinate is ``last`` are checked (component ``last`` of index
    tuples, whose components index axes of different sizes)."""
    loops = _index_loops(indices, last)
    at = _index_at(loops, last)
    return checked_index_loops(indices, at, extent, axis, op, loops, None, last)


def report_bad_index(
    indices: Buffer, extent: PrimExpr, axis: int, op: str, last: int | None = None
) -> Stmt:
    """A serial pass over ``indices`` (over component ``last`` of its last axis when given)
    that stops at the first one out of range (in row-major order) with ``T.check_index``'s
    error; it passes when every index is in range."""
    loops = _index_loops(indices, last)
    index = indices[tuple(_index_at(loops, last))]
    return _nest(Evaluate(T.check_index(index, extent, axis, op)), loops)
