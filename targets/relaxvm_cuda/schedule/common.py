"""Building blocks of the GPU schedules: thread-bound loops, flattened index spaces, loads
rewritten across statements."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from relaxvm.ir import IntImm, PrimExpr, Var
from relaxvm.ir.op import cast
from relaxvm.ir.tir import (
    BufferLoad,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    Stmt,
    StmtMutator,
)
from relaxvm.ir.tir.stage_epilogue import rewrite_loads

__all__ = [
    "bound_loop",
    "ceildiv",
    "element_per_thread",
    "flat_grid",
    "let_indices",
    "node_exprs",
    "product",
    "rewrite_stmt_loads",
    "strided_over_threads",
    "threads_for",
]

#: Threads per block of the injective schedule and the most a row kernel uses.
BLOCK_THREADS = 256


def product(extents: Sequence[PrimExpr]) -> PrimExpr:
    """The product of ``extents`` as an int64 expression (1 for none)."""
    total: PrimExpr = IntImm("int64", 1)
    for extent in extents:
        total = _fold(total * cast(extent, "int64"))
    return total


def _fold(expr: PrimExpr) -> PrimExpr:
    from relaxvm.ir.arith import Analyzer

    return Analyzer().simplify(expr)


def ceildiv(total: PrimExpr, factor: int) -> PrimExpr:
    """``ceil(total / factor)`` as an int64 expression."""
    return _fold((cast(total, "int64") + (factor - 1)) // factor)


def bound_loop(name: str, extent: PrimExpr | int, axis: str, body: Callable[[Var], Stmt]) -> For:
    """``for v in T.thread_binding(extent, thread=axis): body(v)`` with an int64 ``v``."""
    var = Var(name, "int64")
    return For(
        var, 0, cast(extent, "int64"), ForKind.THREAD_BINDING, body(var), thread_binding=axis
    )


def let_indices(
    flat: PrimExpr, loop_vars: Sequence[Var], extents: Sequence[PrimExpr], body: Stmt
) -> Stmt:
    """Bind ``loop_vars`` (row-major over ``extents``) from the flat index ``flat``."""
    stmt = body
    bindings: list[tuple[Var, PrimExpr]] = []
    rest = flat
    for var, extent in zip(reversed(loop_vars), reversed(extents), strict=True):
        e64 = cast(extent, "int64")
        last = var is loop_vars[0]
        value = rest if last else rest % e64
        bindings.append((var, cast(value, var.dtype)))
        if not last:
            rest = rest // e64
    for var, value in bindings:
        stmt = LetStmt(var, value, stmt)
    return stmt


def flat_grid(
    total: PrimExpr, thread: Callable[[PrimExpr], Stmt], threads: int = BLOCK_THREADS
) -> For:
    """``ceil(total / threads)`` blocks of ``threads`` threads, each running
    ``thread(blockIdx.x * threads + threadIdx.x)`` (the last block's extra threads included:
    ``thread`` guards them)."""
    return bound_loop(
        "blockIdx_x",
        ceildiv(total, threads),
        "blockIdx.x",
        lambda bx: bound_loop(
            "threadIdx_x", threads, "threadIdx.x", lambda tx: thread(bx * threads + tx)
        ),
    )


def element_per_thread(
    loop_vars: Sequence[Var], extents: Sequence[PrimExpr], body: Stmt, threads: int = BLOCK_THREADS
) -> For:
    """The loops over ``extents`` flattened over a :func:`flat_grid`: each thread runs ``body``
    for one element (``loop_vars`` bound from its flat index), guarded against the end."""
    total = product(extents)
    return flat_grid(
        total,
        lambda flat: IfThenElse(flat < total, let_indices(flat, loop_vars, extents, body)),
        threads,
    )


def strided_over_threads(
    tx: Var, threads: int, loop_vars: Sequence[Var], extents: Sequence[PrimExpr], body: Stmt
) -> For:
    """The loops over ``extents`` flattened and shared out among the ``threads`` threads of a
    block: thread ``tx`` runs ``body`` for the elements ``tx``, ``tx + threads``, ..."""
    total = product(extents)
    step = Var("j_outer", "int64")
    flat = step * threads + tx
    return For(
        step,
        0,
        ceildiv(total, threads),
        ForKind.SERIAL,
        IfThenElse(flat < total, let_indices(flat, loop_vars, extents, body)),
    )


def node_exprs(node: object) -> list[PrimExpr]:
    """The expressions a store, loop or branch holds itself (a store's value and indices, a
    loop's bounds, a condition); none for any other node."""
    if isinstance(node, BufferStore):
        return [node.value, *node.indices]
    if isinstance(node, For):
        return [node.min, node.extent]
    if isinstance(node, IfThenElse):
        return [node.condition]
    return []


def threads_for(work: PrimExpr) -> int:
    """Threads per block for ``work`` elements per block: a power of two in [32, 256]."""
    if isinstance(work, IntImm):
        wanted = max(32, 1 << max(0, math.ceil(math.log2(max(1, work.value)))))
        return min(BLOCK_THREADS, wanted)
    return BLOCK_THREADS


def rewrite_stmt_loads(stmt: Stmt, rewrite: Callable[[BufferLoad], PrimExpr | None]) -> Stmt:
    """``stmt`` with loads replaced wherever they occur (values, indices, conditions)."""

    class _Rewrite(StmtMutator):
        def visit_expr(self, expr: PrimExpr) -> PrimExpr:
            return rewrite_loads(expr, rewrite)

    return _Rewrite().visit_stmt(stmt)
