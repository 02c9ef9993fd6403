"""Row kernels: one block per *row* (the spatial index of the reductions), every stage of the
function run by the block's threads in order, with barriers between stages.

Fits row reductions (sum/max/mean over the last axes), softmax, layer/RMS norm and reductions
followed by elementwise epilogues (matmul + bias + activation, with one output per block):

* a reduction stage: each thread combines a strided share of the (flattened) reduction
  space into a register; float32/int32 partials are combined by warp shuffles (within each
  warp, then across the warps' results in shared memory: two barriers), other types by a
  shared-memory tree (halving the active threads, a barrier per level); thread 0 stores the
  result, into the
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

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from relaxvm.ir import EQ, IntImm, PrimExpr, Var
from relaxvm.ir.op import cast, const, min_expr, select
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
    LetStmt,
    Stmt,
    seq,
)
from relaxvm.ir.tir.intrin_gpu import SHUFFLE_DTYPES, WARP_SIZE, shfl_down, storage_sync
from relaxvm.ir.tir.stages import COMBINE, Stage, loads_of

from .common import (
    bound_loop,
    ceildiv,
    let_indices,
    product,
    rewrite_stmt_loads,
    strided_over_threads,
    threads_for,
)
from .row_cache import StageLoop, plan_row_cache

__all__ = [
    "RowPlan",
    "barrier",
    "bind_units",
    "block_per_row",
    "block_reduction",
    "plan_rows",
    "row_extents",
    "row_kernel",
    "split_loops",
    "spread_over_row",
    "threads_for_loops",
]


@dataclass
class RowPlan:
    """What :func:`row_kernel` needs: the row extents and the scratch kept in shared memory
    (scratch buffer -> its shared replacement, the part of it one row uses). ``kept`` names,
    per scratch buffer, the index positions that address the shared copy (the others are the
    row's); without an entry the shared copy is one element."""

    rows: list[PrimExpr]
    shared: dict[Buffer, Buffer]
    kept: dict[Buffer, list[int]] = field(default_factory=dict)

    def index(self, buffer: Buffer, indices: Sequence[PrimExpr]) -> list[PrimExpr]:
        """The indices into ``buffer``'s shared copy of the element at ``indices``."""
        kept = self.kept.get(buffer)
        if not kept:
            return [IntImm("int64", 0)]
        return [indices[k] for k in kept]

    def load(self, load: BufferLoad) -> PrimExpr | None:
        """``load`` from the shared copy when it reads scratch kept in shared memory."""
        shared = self.shared.get(load.buffer)
        if shared is None:
            return None
        return shared[tuple(self.index(load.buffer, load.indices))]


def _same(a: list[PrimExpr], b: list[PrimExpr]) -> bool:
    return len(a) == len(b) and all(structural_equal(x, y) for x, y in zip(a, b, strict=True))


def _is_unit(extent: PrimExpr) -> bool:
    return isinstance(extent, IntImm) and extent.value == 1


def split_loops(stage: Stage, nrows: int) -> tuple[list[Var], list[For], list[Var]]:
    """A stage's loops as (row variables, inner loops, unit variables): loops of extent 1
    (keepdims axes: softmax's ``(n, 1)`` maximum) run once, at 0, and take no part in the
    row; the first ``nrows`` other loops are the row's, the rest are inner."""
    rows: list[Var] = []
    inner: list[For] = []
    units: list[Var] = []
    for loop in stage.loops:
        if _is_unit(loop.extent):
            units.append(loop.loop_var)
        elif len(rows) < nrows:
            rows.append(loop.loop_var)
        else:
            inner.append(loop)
    return rows, inner, units


def bind_units(units: list[Var], body: Stmt) -> Stmt:
    for var in reversed(units):
        body = LetStmt(var, cast(IntImm("int64", 0), var.dtype), body)
    return body


def row_extents(stage: Stage) -> list[PrimExpr]:
    return [loop.extent for loop in stage.loops if not _is_unit(loop.extent)]


def plan_rows(stages: list[Stage], scratch: list[Buffer]) -> RowPlan | None:
    """A :class:`RowPlan` when the stages fit a row kernel, else None. Loops and buffer
    axes of extent 1 are ignored (a keepdims reduction's ``(n, 1)`` result is a row of
    ``n``)."""
    reductions = [s for s in stages if s.kind == "reduction"]
    if not reductions or any(s.kind not in ("reduction", "injective") for s in stages):
        return None
    rows = row_extents(reductions[0])
    nrows = len(rows)
    for stage in stages:
        extents = row_extents(stage)
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
        row_vars, _, units = split_loops(stage, nrows)
        for load in _stmt_loads([stage.stmt]):
            if load.buffer in shared and not _reads_row(load, row_vars, units):
                return None
    return RowPlan(rows, shared)


def _reads_row(load: BufferLoad, row_vars: list[Var], units: list[Var]) -> bool:
    """Whether ``load`` reads its (row-shaped) buffer at the row ``row_vars``."""
    wanted = iter(row_vars)
    for index, extent in zip(load.indices, load.buffer.shape, strict=True):
        if _is_unit(extent):
            if not (
                any(index is u for u in units) or (isinstance(index, IntImm) and index.value == 0)
            ):
                return False
        elif index is not next(wanted, None):
            return False
    return next(wanted, None) is None


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


def barrier() -> Stmt:
    return Evaluate(storage_sync())


def _to_shared(stmt: Stmt, plan: RowPlan) -> Stmt:
    return rewrite_stmt_loads(stmt, plan.load)


def _expr_to_shared(expr: PrimExpr, plan: RowPlan) -> PrimExpr:
    from relaxvm.ir.tir.stage_epilogue import rewrite_loads

    return rewrite_loads(expr, plan.load)


def block_reduction(
    stage: Stage,
    plan: RowPlan,
    tx: Var,
    threads: int,
    row: PrimExpr,
    loop: StageLoop | None = None,
) -> Stmt:
    """The block-wide reduction of ``stage`` for the row ``row`` (``loop``: how each thread
    runs its share, see :mod:`.row_cache`; a plain strided loop without)."""
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
    accumulate: Stmt
    if loop is None:
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
    else:
        source = loop.rewrite(stage.source)
        if loop.keep is not None:  # a later stage reads the source back
            update = seq(
                BufferStore(loop.keep, source, [loop.step]),
                BufferStore(acc, combine(acc[zero], loop.keep[loop.step]), [zero]),
            )
        else:
            update = BufferStore(acc, combine(acc[zero], source), [zero])
        if stage.condition is not None:
            update = IfThenElse(loop.rewrite(stage.condition), update)
        accumulate = loop.loop(tx, reduce_vars, reduce_extents, update)
    parts: list[Stmt] = [BufferStore(acc, start, [zero]), accumulate]
    warp = str(dtype) in SHUFFLE_DTYPES and threads >= WARP_SIZE
    if warp:
        # Each warp combines its lanes' partials with shuffles; lane 0 of each warp leaves
        # its value in shared memory, and the first lanes combine those the same way: two
        # barriers instead of one per level of a shared-memory tree.
        nwarps = threads // WARP_SIZE
        red = Buffer(f"{stage.init.buffer.name}_red", (nwarps,), dtype, scope="shared")
        lane, warp_id = tx % WARP_SIZE, tx // WARP_SIZE
        parts += _warp_combine(acc, combine, WARP_SIZE)
        parts.append(IfThenElse(EQ(lane, zero), BufferStore(red, acc[zero], [warp_id])))
        parts.append(barrier())
        if nwarps > 1:
            slot = red[min_expr(tx, IntImm("int64", nwarps - 1))]
            idle = const(0, dtype) if stage.combiner == "sum" else red[zero]
            parts.append(BufferStore(acc, select(tx < nwarps, slot, idle), [zero]))
            parts += _warp_combine(acc, combine, nwarps)
        final: PrimExpr = acc[zero]
    else:
        red = Buffer(f"{stage.init.buffer.name}_red", (threads,), dtype, scope="shared")
        parts += [BufferStore(red, acc[zero], [tx]), barrier()]
        width = threads // 2
        while width >= 1:
            parts.append(
                IfThenElse(tx < width, BufferStore(red, combine(red[tx], red[tx + width]), [tx]))
            )
            parts.append(barrier())
            width //= 2
        final = red[zero]
    result: PrimExpr = final
    if stage.combiner == "sum":
        result = init + result
    out = stage.init.buffer
    if out in plan.shared:
        store = BufferStore(plan.shared[out], result, plan.index(out, stage.init.indices))
    else:
        store = BufferStore(out, result, stage.init.indices)
    parts.append(IfThenElse(EQ(tx, IntImm("int64", 0)), store))
    parts.append(barrier())
    row_vars, _, units = split_loops(stage, nrows)
    body = bind_units(units, Allocate(acc, seq(*parts)))
    return Allocate(red, let_indices(row, row_vars, plan.rows, body))


def _warp_combine(acc: Buffer, combine: Any, width: int) -> list[Stmt]:
    """Shuffle-down steps leaving in lane 0 the combination of the first ``width`` lanes'
    ``acc[0]``."""
    zero = IntImm("int64", 0)
    steps: list[Stmt] = []
    offset = width // 2
    while offset >= 1:
        steps.append(BufferStore(acc, combine(acc[zero], shfl_down(acc[zero], offset)), [zero]))
        offset //= 2
    return steps


def spread_over_row(
    stage: Stage, plan: RowPlan, tx: Var, threads: int, row: PrimExpr, body: Stmt
) -> Stmt:
    """``body`` (the stage's innermost statement) run for the stage's loops past the row,
    flattened and shared out among the block's threads, then a barrier."""
    row_vars, inner, units = split_loops(stage, len(plan.rows))
    loop = strided_over_threads(
        tx, threads, [loop.loop_var for loop in inner], [loop.extent for loop in inner], body
    )
    return let_indices(row, row_vars, plan.rows, bind_units(units, seq(loop, barrier())))


def _injective(stage: Stage, plan: RowPlan, tx: Var, threads: int, row: PrimExpr) -> Stmt:
    assert stage.store is not None
    return spread_over_row(stage, plan, tx, threads, row, _to_shared(stage.store, plan))


def threads_for_loops(loop_nests: Iterable[Sequence[For]]) -> int:
    """Threads per block for a block that runs each of ``loop_nests`` in turn (sized for the
    largest when every size is known, else for the last)."""
    work: PrimExpr = IntImm("int64", 1)
    for loops in loop_nests:
        size = product([loop.extent for loop in loops])
        if isinstance(size, IntImm) and isinstance(work, IntImm):
            work = size if size.value > work.value else work
        else:
            work = size
    return threads_for(work)


def block_per_row(plan: RowPlan, threads: int, parts: Callable[[Var, Var], list[Stmt]]) -> Stmt:
    """A block of ``threads`` threads per row; thread ``tx`` of row ``row`` runs
    ``parts(row, tx)`` in order, with the plan's shared buffers allocated around them."""

    def block(row: Var) -> Stmt:
        def thread(tx: Var) -> Stmt:
            body = seq(*parts(row, tx))
            for shared in plan.shared.values():
                body = Allocate(shared, body)
            return body

        return bound_loop("threadIdx_x", threads, "threadIdx.x", thread)

    return bound_loop("blockIdx_x", cast(product(plan.rows), "int64"), "blockIdx.x", block)


def row_kernel(stages: list[Stage], plan: RowPlan) -> Stmt:
    """The kernel: a block per row (see the module docstring), each thread's share of a
    stage run as :mod:`.row_cache` tunes it."""
    nrows = len(plan.rows)
    threads = threads_for_loops(
        stage.reduce_loops if stage.kind == "reduction" else split_loops(stage, nrows)[1]
        for stage in stages
    )
    inner: list[tuple[list[Var], list[PrimExpr]]] = []
    rows: list[list[Var]] = []
    for stage in stages:
        row_vars, loops, _ = split_loops(stage, nrows)
        if stage.kind == "reduction":
            loops = stage.reduce_loops
        inner.append(([loop.loop_var for loop in loops], [loop.extent for loop in loops]))
        rows.append(row_vars)
    cache = plan_row_cache(stages, threads, plan.shared, inner, rows, plan.rows)

    def parts(row: Var, tx: Var) -> list[Stmt]:
        found: list[Stmt] = []
        preload = cache.preload(row, tx)
        if preload is not None:
            found.append(preload)
        for position, stage in enumerate(stages):
            loop = cache.stage_loop(position)
            if stage.kind == "reduction":
                found.append(block_reduction(stage, plan, tx, threads, row, loop))
                continue
            assert stage.store is not None
            row_vars, _, units = split_loops(stage, nrows)
            body = loop.rewrite_stmt(stage.store)
            stmt = seq(loop.loop(tx, *inner[position], body), barrier())
            found.append(let_indices(row, row_vars, plan.rows, bind_units(units, stmt)))
        if not cache.locals():
            return found
        body = seq(*found)
        for buffer in cache.locals():
            body = Allocate(buffer, body)
        return [body]

    return block_per_row(plan, threads, parts)
