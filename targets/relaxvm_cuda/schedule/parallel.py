"""Kernels the stage schedules do not fit but whose outer loops are still independent:

* several independent injective stages (a split's or meshgrid's outputs): one launch over
  the largest stage, each thread computing its element of every stage that has one;
* one loop nest of any form (scans, argmax, sorts of each line) whose outer loops write
  disjoint parts of every buffer they write: those loops are flattened over threads and the
  rest of the nest runs serially in each thread (``for i: cumsum along row i`` becomes a
  thread per row).

An outer loop is independent when every store in the nest to a buffer that outlives one
iteration indexes it with the loop variables first, and every load of a buffer the nest
writes does too (so iterations never see each other's elements). Scratch allocated inside
the nest is per thread. Scratch allocated around the nest must be *private*: one element,
written unconditionally before any read in each iteration (argmax's running best); it moves
inside the thread.
"""

from __future__ import annotations

from relaxvm.ir import FloorMod, IntImm, PrimExpr
from relaxvm.ir.expr_functor import free_vars
from relaxvm.ir.op import max_expr
from relaxvm.ir.structural import structural_equal
from relaxvm.ir.tir import (
    Allocate,
    Buffer,
    BufferLoad,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    SeqStmt,
    Stmt,
    post_order_visit,
    seq,
)
from relaxvm.ir.tir.stages import Stage, loads_of, stage_reads

from .common import (
    element_per_thread,
    flat_grid,
    let_indices,
    node_exprs,
    product,
)

__all__ = ["independent_injective_kernel", "outer_parallel_kernel"]


def independent_injective_kernel(stages: list[Stage]) -> Stmt | None:
    """One kernel for injective stages that read none of each other's outputs, else None."""
    written = {s.buffer for s in stages}
    if len(written) != len(stages) or any(stage_reads(s.stmt) & written for s in stages):
        return None
    totals = [product([lp.extent for lp in s.loops]) for s in stages]
    largest: PrimExpr = totals[0]
    for total in totals[1:]:
        if isinstance(largest, IntImm) and isinstance(total, IntImm):
            largest = largest if largest.value >= total.value else total
        else:
            largest = max_expr(largest, total)

    def thread(flat: PrimExpr) -> Stmt:
        parts: list[Stmt] = []
        for stage, total in zip(stages, totals, strict=True):
            assert stage.store is not None
            loop_vars = [lp.loop_var for lp in stage.loops]
            extents = [lp.extent for lp in stage.loops]
            parts.append(
                IfThenElse(flat < total, let_indices(flat, loop_vars, extents, stage.store))
            )
        return seq(*parts)

    return flat_grid(largest, thread)


def _accesses(stmt: Stmt) -> tuple[list[BufferStore], list[BufferLoad], set[Buffer]]:
    stores: list[BufferStore] = []
    loads: list[BufferLoad] = []
    inner: set[Buffer] = set()

    def visit(node: object) -> None:
        exprs = node_exprs(node)
        if isinstance(node, BufferStore):
            stores.append(node)
        elif isinstance(node, Allocate):
            inner.add(node.buffer)
        elif not exprs and isinstance(getattr(node, "value", None), PrimExpr):
            exprs = [node.value]  # type: ignore[attr-defined]
        for expr in exprs:
            loads.extend(loads_of(expr))

    post_order_visit(stmt, visit)
    return stores, loads, inner


def _leading(indices: tuple[PrimExpr, ...] | list[PrimExpr], loops: list[For]) -> bool:
    """Whether ``indices`` start with the loops' variables (``v`` or ``v % extent``)."""
    return len(indices) >= len(loops) and all(
        index is lp.loop_var
        or (
            isinstance(index, FloorMod)
            and index.a is lp.loop_var
            and structural_equal(index.b, lp.extent)
        )
        for index, lp in zip(indices, loops, strict=False)
    )


def _private(buffer: Buffer, body: Stmt) -> bool:
    """Whether a one-element buffer is written, unconditionally, before anything in ``body``
    reads it."""
    if not all(isinstance(e, IntImm) and e.value == 1 for e in buffer.shape):
        return False
    items = list(body.seq) if isinstance(body, SeqStmt) else [body]
    for item in items:
        stores, loads, _ = _accesses(item)
        if any(load.buffer is buffer for load in loads):
            return False
        if isinstance(item, BufferStore) and item.buffer is buffer:
            return True
        if any(store.buffer is buffer for store in stores):
            return False  # written only under a condition or loop: not known to be written
    return False


def outer_parallel_kernel(scratch: list[Buffer], nest: Stmt) -> Stmt | None:
    """The nest with its independent outer loops over threads, else None."""
    loops: list[For] = []
    node = nest
    while isinstance(node, For) and node.kind in (ForKind.SERIAL, ForKind.PARALLEL):
        loops.append(node)
        node = node.body
    for depth in range(len(loops), 0, -1):
        outer = loops[:depth]
        body = outer[-1].body
        loop_vars = [lp.loop_var for lp in outer]
        if any(not (isinstance(lp.min, IntImm) and lp.min.value == 0) for lp in outer):
            continue
        if any(set(free_vars(lp.extent)) & set(loop_vars) for lp in outer):
            continue
        if not all(_private(buffer, body) for buffer in scratch):
            continue
        stores, loads, inner = _accesses(body)
        shared_writes = {
            s.buffer for s in stores if s.buffer not in inner and s.buffer not in scratch
        }
        if not all(_leading(s.indices, outer) for s in stores if s.buffer in shared_writes):
            continue
        if not all(_leading(ld.indices, outer) for ld in loads if ld.buffer in shared_writes):
            continue
        return _bind(outer, body, scratch)
    return None


def _bind(outer: list[For], body: Stmt, scratch: list[Buffer]) -> Stmt:
    loop_vars = [lp.loop_var for lp in outer]
    extents = [lp.extent for lp in outer]
    for buffer in reversed(scratch):
        body = Allocate(buffer, body)
    return element_per_thread(loop_vars, extents, body)
