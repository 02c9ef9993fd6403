"""Ops that index with user data (``take``), and the index check they share.

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
from typing import Any

from relaxvm.ir import IntImm, PrimExpr, Var, select
from relaxvm.ir import op as sop
from relaxvm.ir.relax import BlockBuilder, Call, RelaxExpr
from relaxvm.ir.tir import (
    Allocate,
    Buffer,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    PrimFunc,
    Stmt,
    seq,
    te,
)
from relaxvm.ir.tir import intrin as T
from relaxvm.ir.tir.intrin import FLAT_AXIS

from ._kernel import (
    OpPattern,
    _finish,
    _Inputs,
    attr,
    legalizes,
    op_name,
    out_tensor_sinfo,
    product,
    shape_of,
    tensor_arg,
    unravel_index,
)

__all__ = [
    "CHECK_CHUNKS",
    "checked_index_loops",
    "index_check_loops",
    "legalize_take",
    "legalize_take_unchecked",
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


def _index_loops(indices: Buffer) -> list[Loop]:
    return [(Var(f"c{dim}", "int64"), extent) for dim, extent in enumerate(indices.shape)]


def checked_index_loops(
    indices: Buffer,
    index_at: Sequence[PrimExpr],
    extent: PrimExpr,
    axis: int,
    op: str,
    loops: Sequence[Loop],
    use: Callable[[Var], Stmt] | None,
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
    report = report_bad_index(indices, extent, axis, op)
    checked = Allocate(maxima, seq(scan, combine, IfThenElse(outside, report)))
    if isinstance(extent, IntImm):
        return checked if extent.value > 0 else report
    return IfThenElse(sop.greater(extent, 0), checked, report)


def index_check_loops(indices: Buffer, extent: PrimExpr, axis: int, op: str) -> Stmt:
    """A check of every element of ``indices`` against ``extent``, to run before a kernel
    that indexes with them: one parallel min/max pass over the indices (then the same report
    as :func:`checked_index_loops`). Worth its extra read where each index moves a whole row
    or is used many times; the kernel after it may keep any schedule."""
    loops = _index_loops(indices)
    return checked_index_loops(indices, [v for v, _ in loops], extent, axis, op, loops, None)


def report_bad_index(indices: Buffer, extent: PrimExpr, axis: int, op: str) -> Stmt:
    """A serial pass over ``indices`` that stops at the first one out of range (in row-major
    order) with ``T.check_index``'s error; it passes when every index is in range."""
    loops = _index_loops(indices)
    index = indices[tuple(var for var, _ in loops)]
    return _nest(Evaluate(T.check_index(index, extent, axis, op)), loops)


@legalizes("relax.take")
def legalize_take(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """Gather along ``axis`` (from the flattened ``x`` when None); negative indices count
    from the end, as in numpy, and an index out of range raises ``VMIndexError`` naming the
    op, the axis and the index (checked while gathering: :func:`checked_index_loops`)."""
    return _take(bb, call, checked=True)


def legalize_take_unchecked(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``take`` without the index check, for measuring the check (``benchmarks/bench_take.py``).

    Not registered: an index out of range makes this kernel read outside its input. Never use
    it where indices come from users.
    """
    return _take(bb, call, checked=False)


def _take(bb: BlockBuilder, call: Call, checked: bool) -> RelaxExpr:
    shape = shape_of(tensor_arg(call, 0, "x"))
    index_shape = shape_of(tensor_arg(call, 1, "indices"))
    out_shape = shape_of(out_tensor_sinfo(call))
    raw_axis = attr(call, "axis")
    flat = raw_axis is None
    axis = FLAT_AXIS if flat else raw_axis % len(shape)
    extent = product(shape) if flat else shape[axis]

    def source(x: Any, picked: PrimExpr, outer: Sequence[PrimExpr]) -> PrimExpr:
        """The element of ``x`` an output element reads, given its (wrapped) index."""
        if flat:
            return x[tuple(unravel_index(picked, shape))] if shape else x[()]
        return x[tuple([*outer[:axis], picked, *outer[axis + len(index_shape) :]])]

    def unchecked(x: te.Tensor, indices: te.Tensor) -> te.Tensor:
        def body(*idx: Any) -> PrimExpr:
            at = idx if flat else idx[axis : axis + len(index_shape)]
            i = sop.cast(indices[tuple(at)], "int64")
            return source(x, select(sop.less(i, 0), sop.add(i, extent), i), idx)

        return te.compute(out_shape, body, name="T_take")

    inputs = _Inputs(op_name(call))
    x, indices = inputs.convert([call.args[0], call.args[1]])
    out = unchecked(x, indices)
    # Where one index moves one element, checking while gathering saves a read of the indices
    # (the gather's main cost); where an index moves a row or is reused across outer axes,
    # the indices are small next to the data: check them first and keep the gather's schedule.
    fused = checked and (flat or (axis == 0 and len(shape) == 1))
    if fused:
        pre = [] if flat else shape[:axis]
        post = [] if flat else shape[axis + 1 :]
        loops = [(Var(f"i{d}", "int64"), e) for d, e in enumerate([*pre, *index_shape, *post])]
        outer, inner = loops[: len(pre) + len(index_shape)], loops[len(pre) + len(index_shape) :]
        loop_vars = [var for var, _ in loops]

        def use(picked: Var) -> Stmt:
            value = source(x, picked, loop_vars)
            return _nest(BufferStore(out.buffer, value, loop_vars), inner)

        index_at = [var for var, _ in outer[len(pre) :]]
        body = checked_index_loops(indices.buffer, index_at, extent, axis, "take", outer, use)

    elif checked:
        check = index_check_loops(indices.buffer, extent, axis, "take")

    def make(scalars: list[Var]) -> PrimFunc:
        func = te.create_prim_func([*inputs.placeholders, out, *scalars], name="take")
        if fused:
            return func.with_body(body)
        return func.with_body(seq(check, func.body)) if checked else func

    return _finish(bb, inputs, [out.buffer], make, "take", OpPattern.INJECTIVE, None)
