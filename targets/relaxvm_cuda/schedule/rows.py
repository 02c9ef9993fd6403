"""Row kernels: one block per *row* (the spatial index of the reductions), every stage of the
function run by the block's threads in order, with barriers between stages.

Fits row reductions (sum/max/mean over the last axes), softmax, layer/RMS norm and reductions
followed by elementwise epilogues (matmul + bias + activation, with one output per block):

* a reduction stage: each thread combines a strided share of the (flattened) reduction
  space into a register, the partials go to shared memory and are combined by a tree
  (halving the active threads, a barrier per level); thread 0 stores the result, into the
  output, or into a one-element shared buffer when the result is scratch that later stages
  of the row read;
* an injective stage: its loops after the row's are flattened and shared out among the
  threads.

Requirements (:func:`plan_rows` checks them, else the caller picks another schedule): every
reduction has the same spatial extents (the rows), every stage starts with loops over those
extents, and every load of a reduction's scratch result reads it at the row of the reading
stage.
"""

from __future__ import annotations

from dataclasses import dataclass

from relaxvm.ir import EQ, IntImm, PrimExpr, Var
from relaxvm.ir.op import cast, const
from relaxvm.ir.structural import structural_equal
from relaxvm.ir.tir import (
    Allocate,
    Buffer,
    BufferLoad,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    Stmt,
    seq,
)
from relaxvm.ir.tir.intrin_gpu import storage_sync
from relaxvm.ir.tir.stages import COMBINE, Stage, loads_of

from .common import bound_loop, ceildiv, let_indices, product, rewrite_stmt_loads, threads_for

__all__ = ["RowPlan", "plan_rows", "row_kernel"]


@dataclass
class RowPlan:
    """What :func:`row_kernel` needs: the row extents and the reductions kept in shared
    memory (scratch buffer -> its one-element shared replacement)."""

    rows: list[PrimExpr]
    shared: dict[Buffer, Buffer]


def _same(a: list[PrimExpr], b: list[PrimExpr]) -> bool:
    return len(a) == len(b) and all(structural_equal(x, y) for x, y in zip(a, b, strict=True))


def plan_rows(stages: list[Stage], scratch: list[Buffer]) -> RowPlan | None:
    """A :class:`RowPlan` when the stages fit a row kernel, else None."""
    reductions = [s for s in stages if s.kind == "reduction"]
    if not reductions or any(s.kind not in ("reduction", "injective") for s in stages):
        return None
    rows = [loop.extent for loop in reductions[0].loops]
    nrows = len(rows)
    for stage in stages:
        extents = [loop.extent for loop in stage.loops]
        if stage.kind == "reduction" and not _same(extents, rows):
            return None
        if not _same(extents[:nrows], rows):
            return None
    shared: dict[Buffer, Buffer] = {}
    for buffer in scratch:
        writers = [s for s in stages if s.buffer is buffer]
        if len(writers) != 1 or writers[0].kind != "reduction":
            return None
        shared[buffer] = Buffer(f"{buffer.name}_shared", (1,), buffer.dtype, scope="shared")
    for stage in stages:
        row_vars = [loop.loop_var for loop in stage.loops[:nrows]]
        exprs = [stage.stmt]
        for load in _stmt_loads(exprs):
            if load.buffer in shared and not all(
                x is y for x, y in zip(load.indices, row_vars, strict=True)
            ):
                return None
    return RowPlan(rows, shared)


def _stmt_loads(stmts: list[Stmt]) -> list[BufferLoad]:
    from relaxvm.ir.tir import post_order_visit

    found: list[BufferLoad] = []

    def visit(node: object) -> None:
        exprs: list[PrimExpr] = []
        if isinstance(node, BufferStore):
            exprs = [node.value, *node.indices]
        elif isinstance(node, For):
            exprs = [node.min, node.extent]
        elif isinstance(node, IfThenElse):
            exprs = [node.condition]
        for expr in exprs:
            found.extend(loads_of(expr))

    for stmt in stmts:
        post_order_visit(stmt, visit)
    return found


def _barrier() -> Stmt:
    return Evaluate(storage_sync())


def _to_shared(stmt: Stmt, plan: RowPlan) -> Stmt:
    zero = IntImm("int64", 0)
    return rewrite_stmt_loads(
        stmt, lambda load: plan.shared[load.buffer][zero] if load.buffer in plan.shared else None
    )


def _expr_to_shared(expr: PrimExpr, plan: RowPlan) -> PrimExpr:
    from relaxvm.ir.tir.stage_epilogue import rewrite_loads

    zero = IntImm("int64", 0)
    return rewrite_loads(
        expr, lambda load: plan.shared[load.buffer][zero] if load.buffer in plan.shared else None
    )


def _reduction(stage: Stage, plan: RowPlan, tx: Var, threads: int, row: PrimExpr) -> Stmt:
    assert stage.init is not None and stage.source is not None and stage.combiner is not None
    nrows = len(plan.rows)
    dtype = stage.init.buffer.dtype
    combine = COMBINE[stage.combiner]
    init = _expr_to_shared(stage.init.value, plan)
    # Partials start at the identity of a sum (the init is added once at the end); max and
    # min are idempotent, so their partials may start at the init itself.
    start = const(0, dtype) if stage.combiner == "sum" else init
    acc = Buffer(f"{stage.init.buffer.name}_acc", (1,), dtype, scope="local")
    red = Buffer(f"{stage.init.buffer.name}_red", (threads,), dtype, scope="shared")
    zero = IntImm("int64", 0)
    reduce_vars = [loop.loop_var for loop in stage.reduce_loops]
    reduce_extents = [loop.extent for loop in stage.reduce_loops]
    total = product(reduce_extents)
    step = Var("k_outer", "int64")
    flat = step * threads + tx
    source = _expr_to_shared(stage.source, plan)
    update: Stmt = BufferStore(acc, combine(acc[zero], source), [zero])
    if stage.condition is not None:
        update = IfThenElse(_expr_to_shared(stage.condition, plan), update)
    accumulate = For(
        step,
        0,
        ceildiv(total, threads),
        ForKind.SERIAL,
        IfThenElse(flat < total, let_indices(flat, reduce_vars, reduce_extents, update)),
    )
    parts: list[Stmt] = [
        BufferStore(acc, start, [zero]),
        accumulate,
        BufferStore(red, acc[zero], [tx]),
        _barrier(),
    ]
    width = threads // 2
    while width >= 1:
        parts.append(
            IfThenElse(tx < width, BufferStore(red, combine(red[tx], red[tx + width]), [tx]))
        )
        parts.append(_barrier())
        width //= 2
    result: PrimExpr = red[zero]
    if stage.combiner == "sum":
        result = init + result
    out = stage.init.buffer
    if out in plan.shared:
        store = BufferStore(plan.shared[out], result, [zero])
    else:
        store = BufferStore(out, result, stage.init.indices)
    parts.append(IfThenElse(EQ(tx, IntImm("int64", 0)), store))
    parts.append(_barrier())
    body = Allocate(acc, seq(*parts))
    row_vars = [loop.loop_var for loop in stage.loops[:nrows]]
    return Allocate(red, let_indices(row, row_vars, plan.rows, body))


def _injective(stage: Stage, plan: RowPlan, tx: Var, threads: int, row: PrimExpr) -> Stmt:
    assert stage.store is not None
    nrows = len(plan.rows)
    inner = stage.loops[nrows:]
    inner_vars = [loop.loop_var for loop in inner]
    inner_extents = [loop.extent for loop in inner]
    total = product(inner_extents)
    store = _to_shared(stage.store, plan)
    step = Var("j_outer", "int64")
    flat = step * threads + tx
    loop = For(
        step,
        0,
        ceildiv(total, threads),
        ForKind.SERIAL,
        IfThenElse(flat < total, let_indices(flat, inner_vars, inner_extents, store)),
    )
    row_vars = [lp.loop_var for lp in stage.loops[:nrows]]
    return let_indices(row, row_vars, plan.rows, seq(loop, _barrier()))


def row_kernel(stages: list[Stage], plan: RowPlan) -> Stmt:
    """The kernel: a block per row (see the module docstring)."""
    work: PrimExpr = IntImm("int64", 1)
    for stage in stages:
        loops = stage.reduce_loops if stage.kind == "reduction" else stage.loops[len(plan.rows) :]
        size = product([loop.extent for loop in loops])
        if isinstance(size, IntImm) and isinstance(work, IntImm):
            work = size if size.value > work.value else work
        else:
            work = size
    threads = threads_for(work)
    nrows = product(plan.rows)

    def block(row: Var) -> Stmt:
        def thread(tx: Var) -> Stmt:
            parts = []
            for stage in stages:
                if stage.kind == "reduction":
                    parts.append(_reduction(stage, plan, tx, threads, row))
                else:
                    parts.append(_injective(stage, plan, tx, threads, row))
            body = seq(*parts)
            for shared in plan.shared.values():
                body = Allocate(shared, body)
            return body

        return bound_loop("threadIdx_x", threads, "threadIdx.x", thread)

    return bound_loop("blockIdx_x", cast(nrows, "int64"), "blockIdx.x", block)
